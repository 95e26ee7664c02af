package pipeline

import (
	"context"
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

// Pair files (between jobs): "a b similarity distance".
func pairLineFn(p pairRec, emit func(int64, line)) {
	emit(uint64Shard(p.A^p.B<<1, edgeShards), line{Text: fmt.Appendf(nil, "%d %d %s %d\n", p.A, p.B, strconv.FormatFloat(p.Similarity, 'g', -1, 64), p.Distance)})
}

func parsePairFn(s string, emit func(int64, pairRec)) error {
	var p pairRec
	f := strings.Fields(s)
	var err error
	if len(f) == 4 {
		var e [4]error
		p.A, e[0] = strconv.ParseInt(f[0], 10, 64)
		p.B, e[1] = strconv.ParseInt(f[1], 10, 64)
		p.Similarity, e[2] = strconv.ParseFloat(f[2], 64)
		p.Distance, e[3] = strconv.ParseInt(f[3], 10, 64)
		for _, x := range e {
			if x != nil {
				err = x
			}
		}
	} else {
		err = fmt.Errorf("%d fields", len(f))
	}
	if err != nil {
		return fmt.Errorf("internal: pair line %q: %w", s, err)
	}
	emit(p.A, p)
	return nil
}

// pairEdgeFn turns a pair into an edge.
func pairEdgeFn(p pairRec, emit func(int64, int64)) { emit(p.A, p.B) }

// pairKeyFn keys a pair by its ranks, to keep one of the pairs that
// several buckets found.
func pairKeyFn(ctx context.Context, p pairRec, emit func(string, pairRec)) {
	sPairs.Inc(ctx, 48)
	emit(fmt.Sprintf("%d %d", p.A, p.B), p)
}

// samePairFn keeps one of two reports of a pair (they are equal: the
// decision is a function of the two sketches).
func samePairFn(a, b pairRec) pairRec { return a }

func unkeyPairFn(_ string, p pairRec) pairRec { return p }

// docLab is a document with its component (the lowest rank in it) and
// kept document.
type docLab struct {
	Rank, Len int64
	ID        string
	Center    int64
	Kept      int64
}

// labelFn joins a document with its edge to its component's center (none
// for a center or a singleton).
func labelFn(rank int64, metas func(*docMeta) bool, centers func(*int64) bool, emit func(docLab)) error {
	var m docMeta
	if !metas(&m) {
		return fmt.Errorf("internal: rank %d in the graph has no document", rank)
	}
	var extra docMeta
	if metas(&extra) {
		return fmt.Errorf("internal: two documents of rank %d", rank)
	}
	c, n := rank, 0
	var x int64
	for centers(&x) {
		c = x
		n++
	}
	if n > 1 {
		return fmt.Errorf("internal: document rank %d has %d centers: the components did not converge", rank, n)
	}
	emit(docLab{Rank: m.Rank, Len: m.Len, ID: m.ID, Center: c, Kept: c})
	return nil
}

// lenRank orders documents for --keep longest: longer first, then by rank
// (cluster.Keep: the first of the longest, by text bytes as read).
type lenRank struct {
	Len, Rank int64
}

func byCenterLenFn(d docLab, emit func(int64, lenRank)) { emit(d.Center, lenRank{d.Len, d.Rank}) }

func longestFn(a, b lenRank) lenRank {
	if b.Len > a.Len || (b.Len == a.Len && b.Rank < a.Rank) {
		return b
	}
	return a
}

func byCenterFn(d docLab, emit func(int64, docLab)) { emit(d.Center, d) }

// setKeptFn sets the kept document of the members of one component.
func setKeptFn(center int64, members func(*docLab) bool, best func(*lenRank) bool, emit func(docLab)) error {
	var b lenRank
	if !best(&b) {
		return fmt.Errorf("internal: component %d without a kept document", center)
	}
	var d docLab
	for members(&d) {
		d.Kept = b.Rank
		emit(d)
	}
	return nil
}

func byKeptFn(d docLab, emit func(int64, docLab)) { emit(d.Kept, d) }

// keptIDFn emits the id of each kept document under its rank.
func keptIDFn(d docLab, emit func(int64, string)) {
	if d.Rank == d.Kept {
		emit(d.Rank, d.ID)
	}
}

var (
	cKept      = beam.NewCounter("neardup", "kept")
	cClusters  = beam.NewCounter("neardup", "clusters")
	dComponent = beam.NewDistribution("neardup", "cluster_size")
	cPairs     = beam.NewCounter("neardup", "pairs")
)

// clusterLinesFn writes the clusters lines of one component (keyed by its
// kept document) as `neardup dedup --clusters` does, and emits the kept
// document's (file, record).
func clusterLinesFn(ctx context.Context, kept int64, ids func(*string) bool, members func(*docLab) bool, emitLine func(int64, line), emitKept func(int64, int64)) error {
	var keptID string
	if !ids(&keptID) {
		return fmt.Errorf("internal: kept document rank %d has no id", kept)
	}
	var d docLab
	var n int64
	for members(&d) {
		n++
		t := dedup.AppendClusterLine(nil, d.ID, keptID, d.Rank == kept)
		emitLine(d.Rank>>chunkShift, line{Order: d.Rank, Text: t})
	}
	cKept.Inc(ctx, 1)
	if n > 1 {
		cClusters.Inc(ctx, 1)
	}
	dComponent.Update(ctx, n)
	emitKept(fileOfRank(kept), recordOfRank(kept))
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

// Pairs output: ids joined in two steps.
type pairID1 struct {
	P   pairRec
	ID1 string
}

func pairJoinAFn(_ int64, ids func(*string) bool, pairs func(*pairRec) bool, emit func(int64, pairID1)) error {
	var id string
	if !ids(&id) {
		return nil
	}
	var p pairRec
	for pairs(&p) {
		emit(p.B, pairID1{P: p, ID1: id})
	}
	return nil
}

// Hamming reports whether the method's similarity of a pair is the
// fraction of equal fingerprint bits.
type pairJoinBFn struct {
	Hamming bool
}

func (f *pairJoinBFn) ProcessElement(ctx context.Context, _ int64, ids func(*string) bool, pairs func(*pairID1) bool, emit func(int64, line)) error {
	var id string
	if !ids(&id) {
		return nil
	}
	var p pairID1
	var n int64
	for pairs(&p) {
		n++
		t := dedup.AppendPairLine(nil, p.ID1, id, p.P.Similarity, int(p.P.Distance), f.Hamming)
		emit(p.P.A>>chunkShift, line{Order: p.P.A, Order2: p.P.B, Text: t})
	}
	cPairs.Inc(ctx, n)
	return nil
}

func metaIDFn(r int64, m docMeta, emit func(int64, string)) { emit(r, m.ID) }
