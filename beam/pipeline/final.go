package pipeline

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
)

// Metadata files (between jobs): "rank len id" per document, the id
// quoted by strconv.Quote (any bytes survive).
const metaShards = 16

func metaLineFn(m docMeta, emit func(int64, line)) {
	t := strconv.AppendInt(nil, m.Rank, 10)
	t = append(t, ' ')
	t = strconv.AppendInt(t, m.Len, 10)
	t = append(t, ' ')
	t = strconv.AppendQuote(t, m.ID)
	emit(uint64Shard(m.Rank, metaShards), line{Text: append(t, '\n')})
}

func uint64Shard(x int64, n int64) int64 {
	return int64((uint64(x)*0x9e3779b97f4a7c15)>>33) % n
}

func parseMetaFn(s string, emit func(int64, docMeta)) error {
	f := strings.SplitN(s, " ", 3)
	if len(f) == 3 {
		r, err1 := strconv.ParseInt(f[0], 10, 64)
		n, err2 := strconv.ParseInt(f[1], 10, 64)
		id, err3 := strconv.Unquote(f[2])
		if err1 == nil && err2 == nil && err3 == nil {
			emit(r, docMeta{Rank: r, Len: n, ID: id})
			return nil
		}
	}
	return fmt.Errorf("internal: metadata line %q", s)
}

// joinFn joins the documents of one join shard (whole components of the
// candidate graph) with dedup.JoinComponents, as `neardup dedup
// --executor`'s join task does: the method's own Finder on whole
// components, in input order, so its clusters, kept documents and pairs
// are `neardup dedup`'s (one call a shard, not a component: each call
// builds the method and its Finder). It
// emits each removed document's rank with its cluster's id (the kept
// document's), and the pairs lines (--pairs) by output shard. It holds
// the component's documents and sketches.
type joinFn struct {
	Cfg dedup.Options
	// Sketched is how many documents of the whole input have a sketch
	// (simhash's join chooses its design from it, as Run does).
	Sketched int64
	Pairs    bool
}

func (f *joinFn) ProcessElement(ctx context.Context, _ int64, it func(*joinRec) bool, emitRemoved func(int64, string), emitPair func(int64, line)) error {
	var recs []joinRec
	var r joinRec
	for it(&r) {
		recs = append(recs, r)
		r = joinRec{}
	}
	slices.SortFunc(recs, func(a, b joinRec) int { return cmp.Compare(a.Rank, b.Rank) })
	docs := make([]dedup.JoinDoc, len(recs))
	for i, r := range recs {
		if i > 0 && r.Rank == recs[i-1].Rank {
			return fmt.Errorf("internal: document rank %d sent twice to its component's join", r.Rank)
		}
		docs[i] = dedup.JoinDoc{Doc: r.Rank, ID: r.ID, Len: int(r.Len), Sketch: r.Sketch}
	}
	recs = nil
	res, err := dedup.JoinComponents(ctx, f.Cfg, docs, dedup.JoinOptions{Workers: 1, Sketched: f.Sketched, Pairs: f.Pairs})
	if err != nil {
		return err
	}
	for _, rm := range res.Removed {
		emitRemoved(rm.Doc, rm.Cluster)
	}
	for i, p := range res.PairLines {
		if len(p.Order) < 8 {
			return fmt.Errorf("internal: a pair's order of %d bytes", len(p.Order))
		}
		at := binary.BigEndian.Uint64(p.Order)
		// Shards in the pairs file's order: by the reporting document's
		// file and chunk (as the clusters), or for an order that is not
		// by document (simhash's batch join) by the top 13 bits of its
		// position.
		shard := int64(at) >> chunkShift
		if !res.PairsByDoc {
			shard = int64(at >> 51)
		}
		emitPair(shard, line{Key: p.Order, Order2: int64(i), Text: p.Line})
	}
	cClusters.Inc(ctx, int64(res.Clusters))
	cPairs.Inc(ctx, int64(res.Pairs))
	dJoin.Update(ctx, int64(len(docs)))
	for n := range res.Sizes {
		dCluster.Update(ctx, int64(n))
	}
	return nil
}

var (
	cKept     = beam.NewCounter("neardup", "kept")
	cClusters = beam.NewCounter("neardup", "clusters")
	dCluster  = beam.NewDistribution("neardup", "cluster_size")
	dJoin     = beam.NewDistribution("neardup", "join_size")
	cPairs    = beam.NewCounter("neardup", "pairs")
)

// clusterLinesFn writes the clusters line of one document as `neardup
// dedup --clusters` does (removed: the id of its cluster's kept
// document, from its join; else kept, its own), and emits a kept
// document's (file, record).
func clusterLinesFn(ctx context.Context, rank int64, metas func(*docMeta) bool, removed func(*string) bool, emitLine func(int64, line), emitKept func(int64, int64)) error {
	var m docMeta
	if !metas(&m) {
		return fmt.Errorf("internal: rank %d joined has no document", rank)
	}
	var extra docMeta
	if metas(&extra) {
		return fmt.Errorf("internal: two documents of rank %d", rank)
	}
	var cl string
	kept := !removed(&cl)
	if kept {
		cl = m.ID
		cKept.Inc(ctx, 1)
		emitKept(fileOfRank(rank), recordOfRank(rank))
	}
	emitLine(rank>>chunkShift, line{Order: rank, Text: dedup.AppendClusterLine(nil, m.ID, cl, kept)})
	return nil
}

// keptRecordsFn writes the kept records of one input file, unchanged and
// in input order, to Dir/kept-FILE.jsonl.zst. It holds the file's kept
// record numbers (8 bytes each).
type keptRecordsFn struct {
	Dir   string
	Read  readOptions
	Files []string
}

func (f *keptRecordsFn) ProcessElement(ctx context.Context, file int64, recs func(*int64) bool) error {
	var keep []int64
	var r int64
	for recs(&r) {
		keep = append(keep, r)
	}
	slices.Sort(keep)
	path := fmt.Sprintf("%s/kept-%05d.jsonl.zst", f.Dir, file)
	w, err := createFile(ctx, path)
	if err != nil {
		return err
	}
	t := fileTask{Index: file, Path: f.Files[file]}
	next := 0
	err = eachDoc(ctx, t, f.Read.corpus(), func(rank int64, d *corpus.Document) error {
		if next >= len(keep) || recordOfRank(rank) != keep[next] {
			return nil
		}
		next++
		raw := d.Raw
		if _, err := w.Write(raw); err != nil {
			return err
		}
		if len(raw) == 0 || raw[len(raw)-1] != '\n' {
			_, err := w.Write([]byte{'\n'})
			return err
		}
		return nil
	})
	if err == nil && next != len(keep) {
		err = fmt.Errorf("%s: %d kept records not found on the second read (the file changed during the run?)", t.Path, len(keep)-next)
	}
	if err != nil {
		w.abort()
		return err
	}
	return w.Close()
}
