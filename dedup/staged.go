package dedup

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/corpus"
)

// The staged pipeline's library functions (package internal/staged runs
// them as tasks: neardup dedup --executor, neardup task). Each is a
// function over plain values; the tasks move the values between them as
// files. They are the default minhash join of Run cut at its seams:
//
//   - SketchRanges: the first pass's reading, normalising and sketching of
//     some documents, with the band keys of each (compFinder.Add's input);
//   - Components: the lock-free union-find of the component join (cuf);
//   - JoinComponents: the component join (compFinder: components, the
//     streaming Finder replayed on each, pairs merged in the streaming
//     order) on a set of whole components, then the clusters and the kept
//     documents as Run's finish chooses them.
//
// A set of whole components of the candidate graph is independent of every
// other document (see compFinder), so JoinComponents on any partition of
// the components into groups gives, for each document, the cluster and
// the pairs that Run gives.

// DocRange is the documents [Lo, Hi) of File, counted as its reader yields
// them (JSONL records split without being parsed: a bad record counts).
type DocRange struct {
	File string `json:"file"`
	Lo   int64  `json:"lo"`
	Hi   int64  `json:"hi"`
}

// OpenFunc opens an input file for reading (corpus.Open, or a reader of
// object storage).
type OpenFunc func(name string, opts corpus.Options) (corpus.Reader, error)

// CheckStaged reports why the staged pipeline cannot run cfg, or nil: it
// runs the minhash method's default join (components clusters, the
// spanning pairs); the method's other joins and the other methods are
// refused.
func CheckStaged(cfg Options) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	m, err := NewMethod(cfg)
	if err != nil {
		return err
	}
	mm, ok := m.(*minhashMethod)
	switch {
	case !ok:
		return fmt.Errorf("--method %s: the staged pipeline (--executor) runs only --method minhash so far; run it without --executor", m.Name())
	case mm.leader:
		return fmt.Errorf("--cluster leader: the staged pipeline (--executor) keeps only the components clusters so far; run it without --executor")
	case mm.allPairs:
		return fmt.Errorf("--pairs-mode all: not with --executor; run it without --executor")
	case mm.direct:
		return fmt.Errorf("this minhash join (direct) is not staged; run it without --executor")
	}
	return nil
}

func stagedMethod(cfg Options) (*minhashMethod, error) {
	if err := CheckStaged(cfg); err != nil {
		return nil, err
	}
	m, err := NewMethod(cfg)
	if err != nil {
		return nil, err
	}
	return m.(*minhashMethod), nil
}

// SignedDoc is one document as SketchRanges gives it: its id, its text's
// length in bytes (--keep longest), its sketch in the method's binary
// form (Method.AppendSketch; empty for a document without a signature)
// and its band keys (one a band, none without a signature). The slices
// are reused for the next document.
type SignedDoc struct {
	ID     string
	Len    int
	Sketch []byte
	Keys   []uint64
}

// SketchRanges reads the documents of ranges in order with open, sketches
// them on cfg.Workers goroutines and calls fn with each in order. The
// stats count what was read (Documents, Empty, InputBytes, Skipped).
func SketchRanges(ctx context.Context, cfg Options, in Input, open OpenFunc, ranges []DocRange, fn func(*SignedDoc) error) (*Stats, error) {
	if _, err := stagedMethod(cfg); err != nil {
		return nil, err
	}
	in.Files = nil
	rs := make(map[string]DocRange, len(ranges))
	for _, rg := range ranges {
		if _, dup := rs[rg.File]; dup {
			return nil, fmt.Errorf("%s: two ranges of one file", rg.File)
		}
		rs[rg.File] = rg
		in.Files = append(in.Files, rg.File)
	}
	in.Sources, in.Resume, in.AgainstIndexes, in.Against = nil, false, nil, nil
	r, err := newRun(cfg, in, Outputs{})
	if err != nil {
		return nil, err
	}
	defer r.cleanup()
	r.openFile, r.ranges = open, rs
	m := r.method.(*minhashMethod)
	m.bandKeys = true
	if err := r.open(); err != nil {
		return nil, err
	}
	r.stats.Memory = r.plan()
	var sd SignedDoc
	err = r.sketchAll(ctx, func(_ int, d *rawDoc, s DocSketch) error {
		r.stats.Documents++
		sd.ID, sd.Len, sd.Sketch, sd.Keys = d.id, d.n, sd.Sketch[:0], sd.Keys[:0]
		if sk, ok := s.(*minhashSketch); ok && sk.sig != nil {
			sd.Sketch = m.appendStaged(sd.Sketch, sk)
			if sk.keys != nil {
				sd.Keys = append(sd.Keys, sk.keys...)
			} else {
				sd.Keys = m.params.AppendKeys(sd.Keys, sk.sig)
			}
			sk.set.release()
		}
		return fn(&sd)
	})
	if err != nil {
		return nil, err
	}
	r.stats.Params = m.Facts()
	r.stats.Traditional = int(r.traditional.Load())
	r.stats.HTMLNoMainContent = int(r.noMain.Load())
	return r.stats, nil
}

// openRange opens name with open and reads only the documents of rg.
// OpenRange is openRange, for the staged write task.
func OpenRange(open OpenFunc, name string, opts corpus.Options, rg DocRange) (corpus.Reader, error) {
	return openRange(open, name, opts, rg)
}

func openRange(open OpenFunc, name string, opts corpus.Options, rg DocRange) (corpus.Reader, error) {
	rr := &rangeReader{name: name, lo: rg.Lo, hi: rg.Hi}
	if orig := opts.OnInvalid; orig != nil {
		// A bad record before the range is the task's before it.
		opts.OnInvalid = func(e *corpus.RecordError) error {
			if !rr.active {
				return nil
			}
			return orig(e)
		}
	}
	rd, err := open(name, opts)
	if err != nil {
		return nil, err
	}
	rr.Reader = rd
	return rr, nil
}

// rangeReader yields the documents [lo, hi) of its reader.
type rangeReader struct {
	corpus.Reader
	name   string
	pos    int64
	lo, hi int64
	active bool
	short  bool
}

func (r *rangeReader) Next() bool {
	for r.pos < r.lo {
		if !r.Reader.Next() {
			r.short = true
			return false
		}
		r.pos++
	}
	r.active = true
	if r.pos >= r.hi {
		return false
	}
	if !r.Reader.Next() {
		r.short = true
		return false
	}
	r.pos++
	return true
}

func (r *rangeReader) Err() error {
	if err := r.Reader.Err(); err != nil {
		return err
	}
	if r.short {
		return fmt.Errorf("%s: %d documents where the plan counted at least %d: the input changed since the job was planned", r.name, r.pos, r.hi)
	}
	return nil
}

// Components is a union-find over documents 0..n-1 (4 bytes a document)
// whose roots are the smallest members whatever the order of the unions;
// Union is safe for concurrent use.
type Components struct{ u *cuf }

// NewComponents returns n singletons.
func NewComponents(n int) *Components { return &Components{u: newCUF(n)} }

// Union joins the components of a and b.
func (c *Components) Union(a, b int32) { c.u.union(a, b) }

// Root returns the smallest member of x's component.
func (c *Components) Root(x int32) int32 { return c.u.find(x) }

// JoinDoc is one document given to JoinComponents: its position in the
// whole input, its id, its text's length and its SignedDoc.Sketch.
type JoinDoc struct {
	Doc    int64
	ID     string
	Len    int
	Sketch []byte
}

// Removal is a removed document and the id of its cluster's kept one.
type Removal struct {
	Doc     int64
	Cluster string
}

// JoinResult is what JoinComponents found.
type JoinResult struct {
	Removed []Removal // in input order
	// Pairs and Similarity are Stats.Pairs and Stats.Similarity of the
	// spanning pairs.
	Pairs      int
	Similarity [20]int
	// Sizes counts the clusters of the documents by size (those of one
	// document included).
	Sizes map[int]int
	// Below is Stats.RemovedBelowThreshold's share (nil when the join
	// does not count it).
	Below *int
}

// JoinComponents runs the component join on docs, which must be whole
// components of the candidate graph in input order, with workers
// goroutines and scratch files in tmpDir.
func JoinComponents(ctx context.Context, cfg Options, docs []JoinDoc, workers int, tmpDir string) (*JoinResult, error) {
	m, err := stagedMethod(cfg)
	if err != nil {
		return nil, err
	}
	if !slices.IsSortedFunc(docs, func(a, b JoinDoc) int { return int(a.Doc - b.Doc) }) {
		return nil, fmt.Errorf("join: documents out of order")
	}
	f := newCompFinder(m, workers, tmpDir)
	f.ctx = ctx
	defer f.Close()
	uf := cluster.NewUnionFind(len(docs))
	res := &JoinResult{Sizes: map[int]int{}}
	// Run's emitter: the spanning pairs.
	emit := func(p Pair) {
		if uf.Find(p.A) == uf.Find(p.B) {
			return
		}
		uf.Union(p.A, p.B)
		res.Pairs++
		res.Similarity[min(int(p.Similarity*20), 19)]++
	}
	for i, d := range docs {
		var s DocSketch
		if len(d.Sketch) > 0 {
			if s, err = m.decodeStaged(d.Sketch); err != nil {
				return nil, fmt.Errorf("document %q: %w", d.ID, err)
			}
		}
		if err := f.Add(i, s, emit); err != nil {
			return nil, fmt.Errorf("document %q: %w", d.ID, err)
		}
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if err := f.Flush(emit); err != nil {
		return nil, err
	}
	var length func(int) int
	if cfg.Keep == cluster.Longest {
		length = func(i int) int { return docs[i].Len }
	}
	keep := cluster.Keep(uf, cfg.Keep, length)
	if n, ok := f.CountBelow(keep, 0); ok {
		res.Below = &n
	}
	size := make([]int32, len(keep))
	for i, k := range keep {
		size[k]++
		if int(k) != i {
			res.Removed = append(res.Removed, Removal{Doc: docs[i].Doc, Cluster: docs[k].ID})
		}
	}
	for _, n := range size {
		if n > 0 {
			res.Sizes[int(n)]++
		}
	}
	return res, nil
}

// DuplicateIDs is Stats.DuplicateIDs and DuplicateIDsFirst of ids.
func DuplicateIDs(ids []string) (int, []string) { return duplicateIDs(ids) }

// CountsBelow reports whether a run of cfg reports
// Stats.RemovedBelowThreshold (the joins that keep the shingle sets).
func CountsBelow(cfg Options) bool {
	m, err := stagedMethod(cfg)
	return err == nil && m.join.needSets()
}

// StagedFacts is Stats.Params of a run of cfg (before cfg's Spec is
// resolved: the facts say which parameters were given).
func StagedFacts(cfg Options) (Facts, error) {
	m, err := stagedMethod(cfg)
	if err != nil {
		return Facts{}, err
	}
	return m.Facts(), nil
}

// appendStaged writes a sketch in the staged form: the signature (4 bytes
// a slot), keff, and the shingle set as the sketcher left it, not sorted
// (the join sorts only the sets it verifies, as Run's does).
func (m *minhashMethod) appendStaged(dst []byte, sk *minhashSketch) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(sk.sig)))
	for _, v := range sk.sig {
		dst = binary.LittleEndian.AppendUint32(dst, v)
	}
	dst = binary.AppendUvarint(dst, uint64(sk.keff))
	if !m.join.needSets() {
		return append(dst, 0)
	}
	flag := byte(1)
	if sk.set.sorted {
		flag = 2
	}
	dst = append(dst, flag)
	dst = binary.AppendUvarint(dst, uint64(len(sk.set.h)))
	for _, h := range sk.set.h {
		dst = binary.LittleEndian.AppendUint64(dst, h)
	}
	return dst
}

var errStaged = errors.New("damaged staged sketch")

// decodeStaged reads appendStaged's form.
func (m *minhashMethod) decodeStaged(b []byte) (*minhashSketch, error) {
	k, n := binary.Uvarint(b)
	if n <= 0 || k != uint64(m.spec.MinHash.NumPerm) || uint64(len(b)-n) < 4*k {
		return nil, errStaged
	}
	b = b[n:]
	sk := &minhashSketch{spec: &m.spec, sig: make([]uint32, k)}
	for x := range sk.sig {
		sk.sig[x] = binary.LittleEndian.Uint32(b[4*x:])
	}
	b = b[4*k:]
	keff, n := binary.Uvarint(b)
	if n <= 0 || keff > k || len(b) == n {
		return nil, errStaged
	}
	sk.keff = int(keff)
	flag := b[n]
	b = b[n+1:]
	if flag == 0 {
		if len(b) != 0 || m.join.needSets() {
			return nil, errStaged
		}
		return sk, nil
	}
	c, n := binary.Uvarint(b)
	if n <= 0 || flag > 2 || uint64(len(b)-n) != 8*c {
		return nil, errStaged
	}
	b = b[n:]
	h := make([]uint64, c)
	for x := range h {
		h[x] = binary.LittleEndian.Uint64(b[8*x:])
	}
	sk.set = lazySet{h: h, sorted: flag == 2}
	return sk, nil
}
