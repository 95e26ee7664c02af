package staged

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/heapx"
	"github.com/neardup/neardup/internal/objstore"
	"github.com/neardup/neardup/sketch"
)

// The pairs file (--pairs P): each join task writes its pairs' lines to
// one section a pairs shard of its pack, join/g/shards section 2i+1, each line after its place in the
// whole run's pairs file (dedup.JoinPair.Order), in that order; write task
// i merges the files of shard i of every join into P/part-i.jsonl. Shard
// i holds the pairs that dedup writes while it reads input shard i (the
// pairs are in the order of the documents that report them), or, for the
// orders that are not by document, the i-th N-th of the 64-bit positions
// that begin the orders: in both cases every pair of shard i comes before
// every pair of shard i+1 in dedup's file.

// sketched is how many documents of the whole input have a sketch, and
// how many are old (--against).
func (j *Job) sketched(ctx context.Context) (n, old int64, err error) {
	metas, err := j.signMetas(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, m := range metas {
		n += m.Sketched
		old += m.Old
	}
	return n, old, nil
}

// joinPairs is join g's pairs, one section a pairs shard (nil without
// --pairs).
func (j *Job) joinPairs(g int, res *dedup.JoinResult, off []int64) ([][]byte, error) {
	if j.Plan.Pairs == "" {
		return nil, nil
	}
	n := j.Plan.Tasks
	out := make([][]byte, n)
	s := 0
	for _, p := range res.PairLines {
		if len(p.Order) < 8 {
			return nil, fmt.Errorf("join %d: a pair's order of %d bytes", g, len(p.Order))
		}
		at := binary.BigEndian.Uint64(p.Order)
		if res.PairsByDoc {
			for s > 0 && int64(at) < off[s] {
				s--
			}
			for s < n-1 && int64(at) >= off[s+1] {
				s++
			}
		} else {
			hi, _ := bits.Mul64(at, uint64(n))
			s = int(hi)
		}
		o := appendUvarint(out[s], uint64(len(p.Order)))
		o = append(o, p.Order...)
		o = appendUvarint(o, uint64(len(p.Line)))
		out[s] = append(o, p.Line...)
	}
	return out, nil
}

// joinShard reads the index of join g's pack, keeping shard s's two
// sections (removed documents, pairs).
func (j *Job) joinShard(ctx context.Context, g, s int) (*packIndex, error) {
	return j.readPack(ctx, joinOf(g), 2*j.Plan.Tasks, 2*s, 2)
}

// pairsSource is one join's pairs of a shard, read in order.
type pairsSource struct {
	r           *reader
	g           int
	order, line []byte
	// hits, when not nil, are the shard's documents found in an index,
	// whose lines the source gives in place of r's, each after the pairs
	// of its document (their order is the next document's position,
	// which theirs extend); base is the shard's first document's
	// position.
	hits *hitRun
	base uint64
	// held, when not nil, are lines in order that the source gives in
	// place of r's (cascadeHits); r is nil.
	held []dedup.JoinPair
}

func (p *pairsSource) next() (bool, error) {
	if p.held != nil {
		if len(p.held) == 0 {
			return false, nil
		}
		p.order, p.line, p.held = p.held[0].Order, p.held[0].Line, p.held[1:]
		return true, nil
	}
	if h := p.hits; h != nil {
		if !h.ok {
			return false, nil
		}
		p.order = binary.BigEndian.AppendUint64(p.order[:0], p.base+h.doc+1)
		p.line = dedup.AppendIndexPairLine(p.line[:0], string(h.id), string(h.own), h.sim)
		return true, h.next()
	}
	if p.r.atEOF() {
		return false, nil
	}
	var err error
	if p.order, err = p.r.bytes(p.order); err != nil {
		return false, err
	}
	if p.line, err = p.r.bytes(p.line); err != nil {
		return false, err
	}
	return true, nil
}

func (p *pairsSource) close() {
	if p.r != nil {
		p.r.Close()
	}
}

// pairsBefore orders the sources by their current pair, then by join.
func pairsBefore(a, b *pairsSource) bool {
	if c := bytes.Compare(a.order, b.order); c != 0 {
		return c < 0
	}
	return a.g < b.g
}

// writePairs merges pairs shard s of every join into P/part-s.jsonl.
func (j *Job) writePairs(ctx context.Context, s int) error {
	if j.Plan.Pairs == "" {
		return nil
	}
	out, err := objstore.Open(ctx, j.Plan.Pairs)
	if err != nil {
		return err
	}
	defer out.Close()
	return out.Put(ctx, PartName(s), func(w io.Writer) error {
		h := heapx.New(make([]*pairsSource, 0, j.Plan.Tasks), pairsBefore)
		defer func() {
			for _, p := range h.Items() {
				p.close()
			}
		}()
		for g := range j.Plan.Tasks {
			px, err := j.joinShard(ctx, g, s)
			if err != nil {
				return err
			}
			r, err := j.openSection(ctx, px, 2*s+1, 1<<20)
			if err != nil {
				return err
			}
			p := &pairsSource{r: r, g: g}
			ok, err := p.next()
			if err != nil || !ok {
				r.Close()
				if err != nil {
					return err
				}
				continue
			}
			h.Push(p)
		}
		bw := bufio.NewWriterSize(w, 1<<20)
		lines, err := j.indexLines()
		if err != nil {
			return err
		}
		switch lines {
		case linesFirst:
			if s != 0 {
				break
			}
			// Before every pair, in input order, as dedup writes them
			// while it reads, its Finder's pairs coming at its end.
			for t := range j.Plan.Tasks {
				hits, err := j.openHits(ctx, t)
				if err != nil {
					return err
				}
				var line []byte
				for hits.ok {
					line = dedup.AppendIndexPairLine(line[:0], string(hits.id), string(hits.own), hits.sim)
					if _, err := bw.Write(line); err != nil {
						hits.r.Close()
						return err
					}
					if err := hits.next(); err != nil {
						hits.r.Close()
						return err
					}
				}
				hits.r.Close()
			}
		case linesCopies:
			off, err := j.offsets(ctx)
			if err != nil {
				return err
			}
			held, err := j.cascadeHits(ctx, s, off)
			if err != nil {
				return err
			}
			if len(held) > 0 {
				p := &pairsSource{g: -1, held: held}
				p.next()
				h.Push(p)
			}
		case linesByDoc:
			off, err := j.offsets(ctx)
			if err != nil {
				return err
			}
			hits, err := j.openHits(ctx, s)
			if err != nil {
				return err
			}
			p := &pairsSource{r: hits.r, g: -1, hits: hits, base: uint64(off[s])}
			ok, err := p.next()
			if err != nil || !ok {
				hits.r.Close()
				if err != nil {
					return err
				}
			} else {
				h.Push(p)
			}
		}
		for n := 0; h.Len() > 0; n++ {
			if n%4096 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			p := h.Top()
			if _, err := bw.Write(p.line); err != nil {
				return err
			}
			ok, err := p.next()
			if err != nil {
				return err
			}
			if ok {
				h.FixTop()
			} else {
				p.close()
				h.Pop()
			}
		}
		return bw.Flush()
	})
}

// Where dedup writes the pairs lines of the documents found in an index
// (indexLines).
const (
	linesNone   = iota // no index
	linesByDoc         // each after the pairs of its document's step (pairsSource)
	linesFirst         // before every other pair, in input order
	linesCopies        // among the cascade's copy pairs, after its document's (dedup.AppendCascadeHitOrder)
)

// indexLines is where dedup writes the pairs lines of the documents
// found in an index: each as it reads the document. Before every other
// pair where its Finder reports them at its end (simhash's batch Finder,
// --pairs-mode all); with the cascade, whose copy pairs it writes as it
// reads too, among those where the Finder reports at its end (simhash;
// the cascade refuses leader clustering), else, as without it, after
// the pairs of the document's step.
func (j *Job) indexLines() (int, error) {
	if len(j.Plan.Indexes) == 0 {
		return linesNone, nil
	}
	o := j.Plan.Options
	spec, err := o.ResolveSpec()
	if err != nil {
		return 0, err
	}
	switch {
	case o.AllPairs:
		return linesFirst, nil
	case o.Cascade && spec.Method == sketch.SimHash:
		return linesCopies, nil
	case spec.Method == sketch.SimHash && !o.Cascade:
		return linesFirst, nil
	}
	return linesByDoc, nil
}

// cascadeHits is, for write task s, the pairs lines of the documents
// found in an index that go to its pairs shard under linesCopies (their
// orders, dedup.AppendCascadeHitOrder, fall in the first half of the
// positions: the shards of the first half hold them), in order, read
// from the hits of the sign shards whose documents map to it.
func (j *Job) cascadeHits(ctx context.Context, s int, off []int64) ([]dedup.JoinPair, error) {
	n, total := j.Plan.Tasks, off[len(off)-1]
	shardOf := func(order []byte) int {
		hi, _ := bits.Mul64(binary.BigEndian.Uint64(order), uint64(n))
		return int(hi)
	}
	var out []dedup.JoinPair
	var o []byte
	for t := range n {
		if off[t] == off[t+1] {
			continue
		}
		if shardOf(dedup.AppendCascadeHitOrder(o[:0], off[t], total)) > s || shardOf(dedup.AppendCascadeHitOrder(o[:0], off[t+1]-1, total)) < s {
			continue
		}
		hits, err := j.openHits(ctx, t)
		if err != nil {
			return nil, err
		}
		for hits.ok {
			order := dedup.AppendCascadeHitOrder(nil, off[t]+int64(hits.doc), total)
			if shardOf(order) == s {
				out = append(out, dedup.JoinPair{Order: order, Line: dedup.AppendIndexPairLine(nil, string(hits.id), string(hits.own), hits.sim)})
			}
			if err := hits.next(); err != nil {
				hits.r.Close()
				return nil, err
			}
		}
		hits.r.Close()
	}
	return out, nil
}
