package dedup

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/zeebo/xxh3"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/internal/human"
)

// The staged pipeline's library functions (package internal/staged runs
// them as tasks: neardup dedup --executor, neardup task). Each is a
// function over plain values; the tasks move the values between them as
// files. They are Run cut at its seams, for each method with a stager
// (staged_methods.go):
//
//   - SketchRanges: the first pass's reading, normalising and sketching of
//     some documents, with the keys of each (minhash: the band keys,
//     compFinder.Add's input; the others: Keyed.AppendKeys);
//   - Components: the lock-free union-find of the component join (cuf);
//   - JoinComponents: the method's Finder (minhash: the component join,
//     compFinder, or the streaming Finder where Run uses it) on a set of
//     whole components, the pairs Run reports for them, in Run's order,
//     then the clusters and the kept documents as Run's finish chooses
//     them.
//
// A set of whole components of the candidate graph is independent of every
// other document (see stager), so JoinComponents on any partition of the
// components into groups gives, for each document, the cluster and the
// pairs that Run gives.

// DocRange is the documents [Lo, Hi) of File, counted as its reader yields
// them (JSONL records split without being parsed: a bad record counts);
// Hi < 0 is the file's end (a range planned without counting).
type DocRange struct {
	File string `json:"file"`
	Lo   int64  `json:"lo"`
	Hi   int64  `json:"hi"`
	// Old marks a file of the old corpus (Input.Against): its documents
	// are compared against, never removed, written or listed.
	Old bool `json:"old,omitempty"`
	// From, when not nil, is where a reader of the range starts instead
	// of the file's start: a restart point at or before Lo (0 < From.Doc
	// <= Lo), so that a range inside a large file does not read the
	// documents before it.
	From *RestartPoint `json:"from,omitempty"`
	// Version, when not nil, is the file's content as the job was
	// planned: a reader of the range refuses a file of another
	// (corpus.Options.Version), so that a file written again since, even
	// with the same size, is not read as if it were the one planned.
	Version *corpus.Version `json:"version,omitempty"`
}

// RestartPoint is a place in a file where reading can start: right after
// the line of document Doc-1 (counted as DocRange counts them), before
// any blank or bad line after it, so that a bad record between documents
// Doc-1 and Doc is read from there, as the range starting at Doc owns it
// (rangeReader).
type RestartPoint struct {
	Doc int64 `json:"doc"`
	corpus.Position
}

// OpenFunc opens an input file for reading (corpus.Open, or a reader of
// object storage).
type OpenFunc func(name string, opts corpus.Options) (corpus.Reader, error)

// CheckStaged reports why the staged pipeline cannot run cfg, or nil: it
// runs minhash (every join, both cluster modes, both pairs modes),
// simhash (not learning tfidf weights), exact and ksentence, and the
// cascade before minhash or simhash (staged_cascade.go); see stager.
func CheckStaged(cfg Options) error {
	_, _, err := stagedOf(cfg)
	return err
}

// stagedOf returns cfg's method and its stager, or why it is not staged.
func stagedOf(cfg Options) (Method, stager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	m, err := NewMethod(cfg)
	if err != nil {
		return nil, nil, err
	}
	st, err := stagerFor(cfg, m)
	return m, st, err
}

// stagerFor returns the stager of cfg's method m: m's, or the cascade's
// around it (staged_cascade.go).
func stagerFor(cfg Options, m Method) (stager, error) {
	st, err := stagerOf(m)
	switch {
	case err != nil && cfg.Cascade:
		return nil, fmt.Errorf("--method cascade --then %s: %w", m.Name(), err)
	case err != nil || !cfg.Cascade:
		return st, err
	}
	return cascadeStager{inner: st, hamming: capabilitiesOf(m).hamming}, nil
}

// SignedDoc is one document as SketchRanges gives it: its id, its text's
// length in bytes (--keep longest), its sketch in the method's binary
// form (Method.AppendSketch; empty for a document without a signature),
// its band keys (one a band, none without a signature) and whether it is
// old (DocRange.Old). The slices are reused for the next document.
type SignedDoc struct {
	ID     string
	Len    int
	Sketch []byte
	Keys   []uint64
	Old    bool
	// Copy marks a cascade's document whose text an earlier document of
	// the ranges has: its sketch is its content id alone, and its key
	// the content id's (staged_cascade.go).
	Copy bool
	// Index is the id of the document's best duplicate in the first of
	// Input.AgainstIndexes that has one, and IndexSimilarity the
	// similarity the index gave it, as Run finds them ("" for none, and
	// for an old document, which is not looked up).
	Index           string
	IndexSimilarity float64
}

// SketchRanges reads the documents of ranges in order with open, sketches
// them on cfg.Workers goroutines and calls fn with each in order. The
// ranges of old files (DocRange.Old) come first. The stats count what was
// read (Documents, old ones included, Empty, InputBytes, Skipped), as Run
// counts them. With Input.AgainstIndexes each new document is looked up
// in them as Run looks it up (SignedDoc.Index; Stats.IndexMatches counts
// the documents found).
func SketchRanges(ctx context.Context, cfg Options, in Input, open OpenFunc, ranges []DocRange, fn func(*SignedDoc) error) (*Stats, error) {
	return sketchRanges(ctx, cfg, in, open, ranges, nil, false, fn)
}

// SketchSome is SketchRanges that sketches only the documents want
// names (their numbers among the documents read, from 0, ascending):
// fn is called for every document, in order, with an empty sketch and no
// keys for the others. It is the staged scatter's second read of a shard,
// for the shingle sets of the documents in a component (SignedSets).
//
// The workers see a document's position among the records read, which
// counts the bad records skipped before it (Doc.Index), not its number
// among the documents: skipped bounds how many records the ranges skip
// (Stats.Skipped of the first read of the same ranges), and a worker
// sketches every document within skipped places after a wanted one, so
// that each wanted document is sketched whatever was skipped before it.
// The others are not even normalised, so the stats' counts of the
// normalisation (Traditional, HTMLNoMainContent) are of those sketched.
// Where skipped is 0 the JSONL records of the others are not even parsed:
// fn gets them with an empty id and length 0, and the stats count them
// as empty (Stats.Empty).
func SketchSome(ctx context.Context, cfg Options, in Input, open OpenFunc, ranges []DocRange, want []uint32, skipped int, fn func(*SignedDoc) error) (*Stats, error) {
	if !slices.IsSorted(want) {
		return nil, fmt.Errorf("SketchSome: the documents wanted are out of order")
	}
	return sketchRanges(ctx, cfg, in, open, ranges, func(index int) bool {
		// The first wanted number at or after index-skipped, if it is
		// not past index, may be this document's.
		k, _ := slices.BinarySearch(want, uint32(max(index-skipped, 0)))
		return k < len(want) && int64(want[k]) <= int64(index)
	}, skipped == 0, fn)
}

// SignedSets reports whether cfg's staged sketch (SignedDoc.Sketch)
// carries the document's shingle set: minhash's, unless its join needs
// none (--estimate-only), and simhash's with --verify. Those sketches are
// tens of times larger than the rest, so the staged sign tasks keep none
// and the scatter sketches again, with SketchSome, the documents that
// have a candidate.
func SignedSets(cfg Options) bool {
	m, _, err := stagedOf(cfg)
	if err != nil {
		return false
	}
	switch m := m.(type) {
	case *minhashMethod:
		return m.join.needSets()
	case *simhashMethod:
		return m.verify
	}
	return false
}

func sketchRanges(ctx context.Context, cfg Options, in Input, open OpenFunc, ranges []DocRange, want func(int) bool, exact bool, fn func(*SignedDoc) error) (*Stats, error) {
	if err := CheckStaged(cfg); err != nil {
		return nil, err
	}
	in.Files, in.Against = nil, nil
	rs := make(map[string]DocRange, len(ranges))
	for _, rg := range ranges {
		if _, dup := rs[rg.File]; dup {
			return nil, fmt.Errorf("%s: two ranges of one file", rg.File)
		}
		rs[rg.File] = rg
		switch {
		case !rg.Old:
			in.Files = append(in.Files, rg.File)
		case len(in.Files) > 0:
			return nil, fmt.Errorf("%s: an old file's range after a new one", rg.File)
		default:
			in.Against = append(in.Against, rg.File)
		}
	}
	in.Sources, in.Resume = nil, false
	r, err := newRun(cfg, in, Outputs{})
	if err != nil {
		return nil, err
	}
	defer r.cleanup()
	r.openFile, r.ranges, r.want, r.wantExact = open, rs, want, want != nil && exact
	if r.cascade != nil {
		r.cascade.signed = true
	}
	st, err := stagerFor(cfg, r.method)
	if err != nil {
		return nil, err
	}
	if err := r.open(); err != nil {
		return nil, err
	}
	r.stats.Memory = r.plan()
	if err := r.newCheckers(); err != nil {
		return nil, err
	}
	var sd SignedDoc
	err = r.sketchAll(ctx, func(_ int, d *rawDoc, s DocSketch) error {
		r.stats.Documents++
		sd.ID, sd.Len, sd.Old = d.id, d.n, d.old
		sd.Index, sd.IndexSimilarity = "", 0
		if d.hit != nil {
			sd.Index, sd.IndexSimilarity = d.hit.id, d.hit.sim
		}
		cs, _ := s.(*cascadeSigned)
		sd.Copy = cs != nil && cs.keyed && cs.s == nil
		sd.Sketch, sd.Keys = st.appendSigned(sd.Sketch[:0], sd.Keys[:0], s)
		return fn(&sd)
	})
	if err != nil {
		return nil, err
	}
	r.stats.Params = r.method.Facts()
	r.stats.Traditional = int(r.traditional.Load())
	r.stats.HTMLNoMainContent = int(r.noMain.Load())
	r.stats.HTMLLike = int(r.htmlLike.Load())
	return r.stats, nil
}

// openRange opens name with open and reads only the documents of rg.
// OpenRange is openRange, for the staged write task.
func OpenRange(open OpenFunc, name string, opts corpus.Options, rg DocRange) (corpus.Reader, error) {
	return openRange(open, name, opts, rg)
}

func openRange(open OpenFunc, name string, opts corpus.Options, rg DocRange) (corpus.Reader, error) {
	rr := &rangeReader{name: name, lo: rg.Lo, hi: rg.Hi, orig: opts.OnInvalid}
	if p := rg.From; p != nil {
		if p.Doc <= 0 || p.Doc > rg.Lo || rg.Hi >= 0 && p.Doc > rg.Hi {
			return nil, fmt.Errorf("%s: a restart point at document %d for documents %d-%d", name, p.Doc, rg.Lo, rg.Hi)
		}
		rr.pos, opts.Start = p.Doc, p.Position
	}
	if rg.Version != nil {
		opts.Version = *rg.Version
	}
	if rr.pos == rg.Lo {
		rr.state = rangeIn
	}
	opts.OnInvalid = rr.invalid
	rd, err := open(name, opts)
	if err != nil {
		return nil, err
	}
	rr.Reader = rd
	return rr, nil
}

// rangeReader yields the documents [lo, hi) of its reader. A bad record
// the reader reports (not a document: a line too long, a damaged stream)
// belongs to the range of the document after it, or to the file's last
// range when no document follows: at hi the reader reads one document
// further, and the bad records it meets on the way are the range's when
// it finds none (the plan counted the documents up to a damaged stream
// only, so the last range reports the damage).
type rangeReader struct {
	corpus.Reader
	name   string
	pos    int64
	lo, hi int64
	orig   func(*corpus.RecordError) error // the caller's OnInvalid
	state  int                             // rangeBefore, rangeIn, rangeAhead, rangeDone
	ahead  []*corpus.RecordError           // bad records met while looking ahead
	err    error                           // a bad record's error, found ahead
	short  bool
}

const (
	rangeBefore = iota // skipping the documents before lo
	rangeIn            // reading the range
	rangeAhead         // at hi, looking for a document after it
	rangeDone
)

// invalid routes the reader's bad records: those before the range are
// another range's, those met while looking ahead wait until it is known
// whose they are, the others go to the caller's OnInvalid (none: they
// stop the reader).
func (r *rangeReader) invalid(e *corpus.RecordError) error {
	switch r.state {
	case rangeBefore:
		return nil
	case rangeAhead:
		r.ahead = append(r.ahead, e)
		return nil
	}
	if r.orig == nil {
		return e
	}
	return r.orig(e)
}

func (r *rangeReader) Next() bool {
	if r.state == rangeDone {
		return false
	}
	for r.pos < r.lo {
		if !r.Reader.Next() {
			r.short, r.state = true, rangeDone
			return false
		}
		r.pos++
	}
	r.state = rangeIn
	if r.hi >= 0 && r.pos >= r.hi {
		r.state = rangeAhead
		if !r.Reader.Next() {
			// The file ends: what was met on the way is this range's.
			r.state = rangeIn
			for _, e := range r.ahead {
				if err := r.invalid(e); err != nil {
					r.err = err
					break
				}
			}
		}
		r.ahead, r.state = nil, rangeDone
		return false
	}
	if !r.Reader.Next() {
		r.short, r.state = r.hi >= 0, rangeDone
		return false
	}
	r.pos++
	return true
}

func (r *rangeReader) Err() error {
	if err := r.Reader.Err(); err != nil {
		return err
	}
	if r.err != nil {
		return r.err
	}
	if r.short {
		return fmt.Errorf("%s: %s documents where the plan counted at least %s: the input changed since the job was planned", r.name, human.Number(r.pos), human.Number(r.hi))
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
	// Clusters counts the clusters with more than one new document, or
	// with one and an old document (Stats.Clusters' share).
	Clusters int
	// Pairs, Similarity and Distance are Stats.Pairs, Similarity and
	// Distance of the pairs reported (the spanning pairs, or every pair
	// under Options.AllPairs).
	Pairs      int
	Similarity [20]int
	Distance   []int
	// PairLines are the lines of the pairs file, when JoinOptions.Pairs
	// asks for them, in the pairs file's order.
	PairLines []JoinPair
	// PairsByDoc says that each JoinPair.Order begins with the position
	// (big-endian, 8 bytes) of the document whose step reports the pair
	// in Run, so the pairs file is in the order of those documents;
	// otherwise it begins with a position in [0, 2^64) spread over the
	// pairs of the whole input (simhash's batch join; leader clustering in
	// keep order).
	PairsByDoc bool
	// Sizes counts the clusters of the documents by their number of new
	// documents (those of one document included; none: not counted).
	Sizes map[int]int
	// Below is Stats.RemovedBelowThreshold's share (nil when the join
	// does not count it).
	Below *int
	// Multi are the clusters of two or more new documents, by kept
	// document in input order, when JoinOptions.Multi asks for them: what
	// a staged job chooses the report's example clusters from, as Run
	// does (Input.Examples).
	Multi []JoinCluster
	// ExactCopies is Stats.ExactCopies' share: the cascade's documents
	// joined with their first occurrence.
	ExactCopies int
}

// JoinCluster is a cluster of two or more new documents: its kept
// document (old, or new and then in Members too), its number of new
// documents, and the first of them in input order, enough to fill an
// Example as Run does: the kept one, if new, and up to ExampleMembers-1
// others. Index is the id of the indexed document that names the
// cluster (JoinOptions.Hits; Example.Index), "" for none: the cluster
// went whole, its kept document too.
type JoinCluster struct {
	Kept    int64
	Size    int
	Members []int64
	Index   string
}

// JoinPair is one line of the pairs file and its place: the whole run's
// pairs file is the lines of every join, merged by Order (bytes.Compare;
// lines of equal Order come from one join, in the order given).
type JoinPair struct {
	Order []byte
	Line  []byte
}

// JoinOptions are JoinComponents' settings.
type JoinOptions struct {
	// Workers is how many goroutines the join uses; TmpDir holds its
	// scratch files ("" for the system's).
	Workers int
	TmpDir  string
	// Sketched is how many documents of the whole input have a sketch
	// (SignedDoc.Sketch not empty): simhash's join uses the design that
	// Run chooses for them.
	Sketched int64
	// Pairs asks for the lines of the pairs file (JoinResult.PairLines).
	Pairs bool
	// Multi asks for the clusters of two or more new documents
	// (JoinResult.Multi).
	Multi bool
	// Documents is how many documents the whole input has (old ones
	// included): the cascade's pairs order spreads over them (0: its pairs
	// bunch in the first pairs shards, in the same order).
	Documents int64
	// Old is how many documents of the whole input are old (DocRange.Old):
	// those whose JoinDoc.Doc is below it, never removed, kept in their
	// clusters whatever Options.Keep says, their pairs with one another
	// not reported, and not counted in JoinResult.Sizes.
	Old int64
	// Sketches, when not nil, gives the documents' sketches in order, one
	// a call (the slice need stay valid only until the next call), in
	// place of JoinDoc.Sketch, which is then unused: a join of a
	// component whose sketches do not fit in memory. The join then holds
	// no sketch (minhash's component join keeps the shingle sets in a
	// scratch file under TmpDir, as Run does, instead of in memory).
	Sketches func() ([]byte, error)
	// Hits are the new documents found in an index (Input.AgainstIndexes;
	// SignedDoc.Index), by JoinDoc.Doc: the id of each one's indexed
	// duplicate. As in Run, a cluster with one of them goes whole, its
	// kept document too, named after the indexed duplicate of its first
	// document found (JoinResult.Removed), and counts as a cluster even
	// of one document.
	Hits map[int64]string
	// CascadeByDoc orders the cascade's pairs by their later document,
	// the copy pairs among the method's (JoinResult.PairsByDoc), not
	// the copy pairs first (cascadeOrder): Run's order when it checks an
	// index (Input.AgainstIndexes), where it uses the streaming Finder,
	// which reports a document's pairs as it reads it, as it writes the
	// copy pairs. Not for the Finders that report their pairs at Flush
	// (simhash's batch Finder), nor with Options.AllPairs (every pair at
	// the end).
	CascadeByDoc bool
}

// JoinComponents runs cfg's method on docs, which must be whole
// components of the candidate graph in input order: the Finder a run
// uses (minhash's component join, or its streaming Finder under leader
// clustering and Options.AllPairs; simhash's batch Finder with the
// design of the whole input; exact's and ksentence's), the spanning pairs
// (or all pairs) as Run reports them, and the clusters and kept documents
// as Run's finish chooses them. It sets each document's Sketch to nil once
// it has decoded it, so that the caller's memory for them can go; with
// JoinOptions.Sketches the sketches come from it instead.
func JoinComponents(ctx context.Context, cfg Options, docs []JoinDoc, opts JoinOptions) (*JoinResult, error) {
	m, st, err := stagedOf(cfg)
	if err != nil {
		return nil, err
	}
	if !slices.IsSortedFunc(docs, func(a, b JoinDoc) int { return int(a.Doc - b.Doc) }) {
		return nil, fmt.Errorf("join: documents out of order")
	}
	held := docs // the documents whose sketches are in memory
	if opts.Sketches != nil {
		held = nil
	}
	f, err := st.joinFinder(ctx, max(opts.Workers, 1), opts.TmpDir, opts.Sketched, held)
	if err != nil {
		return nil, err
	}
	fc := finderCapabilitiesOf(f)
	if fc.closer != nil {
		defer fc.closer.Close()
	}
	var casc *joinCascade
	pst := st // the stager of the pairs' order: the method's
	if cs, ok := st.(cascadeStager); ok {
		casc = &joinCascade{st: cs, first: map[xxh3.Uint128]int32{}, copy: make([]bool, len(docs))}
		pst = cs.inner
		// Its Finder knows the first occurrences only, by their own
		// numbers: not the kept documents (a copy may be one), as in Run.
		fc.keptCheck = nil
	}
	// The old documents come first.
	nOld, _ := slices.BinarySearchFunc(docs, opts.Old, func(d JoinDoc, old int64) int { return cmp.Compare(d.Doc, old) })
	var length func(int) int
	if cfg.Keep == cluster.Longest {
		length = func(i int) int {
			if i < nOld { // an old document always wins
				return math.MaxInt
			}
			return docs[i].Len
		}
	}
	uf := cluster.NewUnionFind(len(docs))
	res := &JoinResult{Sizes: map[int]int{}}
	// Run's emitter: the spanning pairs, or every pair (AllPairs).
	var pairs []Pair
	emit := func(p Pair) {
		if !cfg.AllPairs {
			if uf.Find(p.A) == uf.Find(p.B) {
				return
			}
		}
		uf.Union(p.A, p.B)
		if max(p.A, p.B) >= nOld { // both old: joins clusters, is not reported
			pairs = append(pairs, p)
		}
	}
	findEmit := emit // the Finder's, with its own numbers
	if casc != nil {
		findEmit = casc.emitter(emit)
	}
	var sks []DocSketch // the sketches, for the pairs' order
	_, ordered := pst.(pairOrderer)
	ordered = ordered && opts.Pairs
	var reuse DocSketch // decoded into again when nothing keeps it
	for i, d := range docs {
		b := d.Sketch
		if opts.Sketches != nil {
			if b, err = opts.Sketches(); err != nil {
				return nil, fmt.Errorf("document %q: %w", d.ID, err)
			}
		}
		var s DocSketch
		if len(b) > 0 {
			if s, err = st.decodeSigned(b, reuse); err != nil {
				return nil, fmt.Errorf("document %q: %w", d.ID, err)
			}
		}
		if !ordered && s != nil {
			reuse = s
		}
		fi := i // the Finder's number of document i
		if casc != nil {
			in, of, isCopy := casc.add(i, s)
			if isCopy {
				if ordered {
					sks = append(sks, nil)
				}
				emit(Pair{A: of, B: i, Similarity: 1, Distance: copyDistance(casc.hamming()), Hamming: casc.hamming()})
				docs[i].Sketch = nil
				continue
			}
			s, fi = in, len(casc.orig)
			casc.orig = append(casc.orig, i)
		}
		if ordered {
			sks = append(sks, s)
		}
		if err := f.Add(fi, s, findEmit); err != nil {
			return nil, fmt.Errorf("document %q: %w", d.ID, err)
		}
		docs[i].Sketch = nil // decoded: its memory may go
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if fc.keepOrder != nil && length != nil {
		if casc != nil {
			fc.keepOrder.SetKeepLength(func(k int) int { return length(casc.orig[k]) })
		} else {
			fc.keepOrder.SetKeepLength(length)
		}
	}
	if err := f.Flush(findEmit); err != nil {
		return nil, err
	}
	if cfg.AllPairs {
		pairs = allPairsOf(pairs, uf, nOld, len(docs), capabilitiesOf(m).cliques)
	}
	var counts Stats
	for _, p := range pairs {
		counts.countPair(p)
	}
	res.Pairs, res.Similarity, res.Distance = counts.Pairs, counts.Similarity, counts.Distance
	if opts.Pairs {
		res.PairLines, res.PairsByDoc = pairLines(pst, cfg, m, docs, sks, pairs, length)
		switch {
		case casc != nil && !cfg.AllPairs && opts.CascadeByDoc:
			// The copy pairs, found as the documents are added, come
			// before the Finder's: by document, as Run writes them.
			slices.SortStableFunc(res.PairLines, func(a, b JoinPair) int { return bytes.Compare(a.Order, b.Order) })
		case casc != nil && !cfg.AllPairs:
			casc.cascadeOrder(res.PairLines, pairs, docs, res.PairsByDoc, opts.Documents)
			res.PairsByDoc = false
		}
	}
	if casc != nil {
		res.ExactCopies = casc.n
	}
	keep := cluster.Keep(uf, cfg.Keep, length)
	if fc.keptCheck != nil {
		if n, ok := fc.keptCheck.CountBelow(keep, nOld); ok {
			res.Below = &n
		}
	}
	// Run's finish: a cluster with a document found in an index goes,
	// named by its first such document's indexed duplicate.
	var labels map[int32]string
	if len(opts.Hits) > 0 {
		labels = map[int32]string{}
		for i := nOld; i < len(keep); i++ {
			if id, ok := opts.Hits[docs[i].Doc]; ok {
				if _, named := labels[keep[i]]; !named {
					labels[keep[i]] = id
				}
			}
		}
	}
	size := make([]int32, len(keep))
	for i, k := range keep[nOld:] {
		size[k]++
		label, labelled := labels[k]
		switch {
		case labelled:
			res.Removed = append(res.Removed, Removal{Doc: docs[i+nOld].Doc, Cluster: label})
		case int(k) != i+nOld:
			res.Removed = append(res.Removed, Removal{Doc: docs[i+nOld].Doc, Cluster: docs[k].ID})
		}
	}
	for k, n := range size {
		if n > 0 {
			res.Sizes[int(n)]++
			_, labelled := labels[int32(k)]
			if n > 1 || k < nOld || labelled { // a new document with an old duplicate counts
				res.Clusters++
			}
		}
	}
	if opts.Multi {
		res.Multi = multiClusters(docs, keep, size, nOld, labels)
	}
	return res, nil
}

// multiClusters lists the clusters of two or more new documents (size,
// by kept document) in the order of their kept documents, each with its
// kept document, if new, and its first ExampleMembers-1 other new ones;
// labels names those found in an index (by kept document).
func multiClusters(docs []JoinDoc, keep []int32, size []int32, nOld int, labels map[int32]string) []JoinCluster {
	at := make(map[int32]int) // kept document -> its cluster in out
	var roots []int32
	for k, n := range size {
		if n > 1 {
			roots = append(roots, int32(k))
		}
	}
	out := make([]JoinCluster, len(roots))
	for c, k := range roots {
		at[k] = c
		out[c] = JoinCluster{Kept: docs[k].Doc, Size: int(size[k]), Index: labels[k]}
	}
	others := make([]int, len(out))
	for i := nOld; i < len(keep); i++ {
		c, ok := at[keep[i]]
		if !ok {
			continue
		}
		if int(keep[i]) == i {
			out[c].Members = append(out[c].Members, docs[i].Doc)
		} else if others[c] < ExampleMembers-1 {
			others[c]++
			out[c].Members = append(out[c].Members, docs[i].Doc)
		}
	}
	return out
}

// StreamedJoinBytes is about the memory that JoinComponents holds a
// document when it streams the sketches (JoinOptions.Sketches), beside
// the caller's JoinDoc and the results: the Finder's per-document memory
// and index entry (minhash's component join: also the band keys it sorts
// at Flush; its index entry is mapped outside the Go heap, 613 bytes with
// 13 bands of 128 slots), and whether it also holds each document's
// sketch, about its size: minhash's leader clustering under --keep
// longest (it defers every document to its Flush, to place them in keep
// order) and simhash's --verify (its batch Finder holds the shingle
// sets).
func StreamedJoinBytes(cfg Options) (perDoc int64, sketches bool, err error) {
	m, _, err := stagedOf(cfg)
	if err != nil {
		return 0, false, err
	}
	if mm, ok := m.(*minhashMethod); ok {
		if mm.componentJoin() {
			heap, mapped := mm.componentBytes()
			return heap + mapped, false, nil
		}
		sketches = mm.leader && mm.longest
	}
	if sm, ok := m.(*simhashMethod); ok {
		sketches = sm.verify
	}
	if me := capabilitiesOf(m).memory; me != nil {
		heap, mapped := me.BytesPerDoc(0, 0, 0)
		return heap + mapped, sketches, nil
	}
	return defaultFinderBytesPerDoc, sketches, nil
}

// allPairsOf is the pairs of Options.AllPairs for documents from..n-1:
// every two members of each cluster for a cliquer method, else the pairs
// found; ascending by the later document, then the earlier, each once.
func allPairsOf(ps []Pair, uf *cluster.UnionFind, from, n int, cliques bool) []Pair {
	if cliques {
		members := map[int][]int{}
		for i := range n {
			root := uf.Find(i)
			members[root] = append(members[root], i)
		}
		ps = ps[:0]
		for i := from; i < n; i++ {
			for _, j := range members[uf.Find(i)] {
				if j >= i {
					break
				}
				ps = append(ps, Pair{A: j, B: i, Similarity: 1, Distance: -1})
			}
		}
	}
	slices.SortFunc(ps, func(a, b Pair) int {
		if a.B != b.B {
			return a.B - b.B
		}
		return a.A - b.A
	})
	return slices.CompactFunc(ps, func(a, b Pair) bool { return a.A == b.A && a.B == b.B })
}

// pairLines are the lines of pairs (documents numbered in docs) and their
// order in the whole run's pairs file (see JoinResult.PairsByDoc).
func pairLines(st stager, cfg Options, m Method, docs []JoinDoc, sks []DocSketch, pairs []Pair, length func(int) int) ([]JoinPair, bool) {
	po, _ := st.(pairOrderer)
	leaderLongest := cfg.Keep == cluster.Longest && capabilitiesOf(m).leader
	out := make([]JoinPair, 0, len(pairs))
	byDoc := true
	for _, p := range pairs {
		g := Pair{A: int(docs[p.A].Doc), B: int(docs[p.B].Doc), Similarity: p.Similarity, Distance: p.Distance, Hamming: p.Hamming}
		var o []byte
		switch {
		case cfg.AllPairs:
			o = binary.BigEndian.AppendUint64(o, uint64(g.B))
			o = binary.BigEndian.AppendUint64(o, uint64(g.A))
		case leaderLongest:
			// Leader clustering reports a pair when it places the later
			// of the two in keep order (keepRank, by the whole input's
			// positions).
			rank := func(i int) int { return keepRank(func(int) int { return length(i) }, int(docs[i].Doc)) }
			o = binary.BigEndian.AppendUint64(o, uint64(max(rank(p.A), rank(p.B)))^1<<63)
			byDoc = false
		case po != nil && sks[p.A] != nil && sks[p.B] != nil: // not a cascade's copy pair (cascadeOrder)
			var own bool
			if o, own = po.appendPairOrder(o, g, sks[p.A], sks[p.B]); own {
				byDoc = false
			}
		}
		if len(o) == 0 { // Run reports the pair at its later document
			o = binary.BigEndian.AppendUint64(o, uint64(g.B))
		}
		out = append(out, JoinPair{Order: o, Line: AppendPairLine(nil, docs[p.A].ID, docs[p.B].ID, p.Similarity, p.Distance, p.Hamming)})
	}
	return out, byDoc
}

// DuplicateIDs is Stats.DuplicateIDs and DuplicateIDsFirst of ids.
func DuplicateIDs(ids []string) (int, []string) { return duplicateIDs(ids) }

// CountsBelow reports whether a run of cfg reports
// Stats.RemovedBelowThreshold (the joins that keep the shingle sets).
func CountsBelow(cfg Options) bool {
	_, st, err := stagedOf(cfg)
	return err == nil && st.countsBelow()
}

// StagedFacts is Stats.Params of a run of cfg as planned (before cfg's
// Spec is resolved: the facts say which parameters were given).
func StagedFacts(cfg Options) (Facts, error) {
	m, _, err := stagedOf(cfg)
	if err != nil {
		return Facts{}, err
	}
	return m.Facts(), nil
}

// StagedParams is Stats.Params of a staged run of cfg, from the facts
// planned (StagedFacts) and the number of documents with a sketch: what
// the method decides at its Finder's Flush (simhash's design).
func StagedParams(cfg Options, planned Facts, sketched int64) (Facts, error) {
	_, st, err := stagedOf(cfg)
	if err != nil {
		return Facts{}, err
	}
	return st.facts(planned, sketched)
}

// appendStaged writes a sketch in the staged form, the component join's
// record (compFinder.writeRecord) and the shingle set:
//
//	keys   bands x 8 bytes: the band keys, little-endian
//	slots  k x 2 bytes: the low 16 bits of each slot (all the estimate
//	       compares); k x 4 bytes, the whole slots, where the join is the
//	       streaming Finder (stagedSlotBytes), whose index bands them
//	keff   2 bytes
//	flag   1 byte: 0 no set (a join that needs none), 1 a set as the
//	       sketcher left it (with repeats, unsorted), 2 a sorted distinct set
//	set    with flag 1 or 2: a uvarint count, then count x 8 bytes
//
// The join sorts only the sets it verifies, as Run's does.
func (m *minhashMethod) appendStaged(dst []byte, sk *minhashSketch, keys []uint64) []byte {
	for _, k := range keys {
		dst = binary.LittleEndian.AppendUint64(dst, k)
	}
	if m.stagedSlotBytes() == 4 {
		for _, v := range sk.sig {
			dst = binary.LittleEndian.AppendUint32(dst, v)
		}
	} else {
		for _, v := range sk.sig {
			dst = binary.LittleEndian.AppendUint16(dst, uint16(v))
		}
	}
	dst = binary.LittleEndian.AppendUint16(dst, uint16(sk.keff))
	if !m.join.needSets() {
		return append(dst, 0)
	}
	flag := byte(1)
	if sk.set.sorted {
		flag = 2
	}
	dst = append(dst, flag)
	dst = binary.AppendUvarint(dst, uint64(len(sk.set.h)))
	if nativeLittleEndian {
		return append(dst, wordBytes(sk.set.h)...)
	}
	for _, h := range sk.set.h {
		dst = binary.LittleEndian.AppendUint64(dst, h)
	}
	return dst
}

var errStaged = errors.New("damaged staged sketch")

// stagedSlotBytes is the bytes of a signature slot in the staged form: 2
// for the component join, which compares the slots' low 16 bits, 4 where
// the join is the streaming Finder (leader clustering, Options.AllPairs),
// whose index makes its band keys from the whole slots.
func (m *minhashMethod) stagedSlotBytes() int {
	if m.leader || m.allPairs {
		return 4
	}
	return 2
}

// stagedSetsLen is the number of shingle hashes of docs' staged sketches
// (an estimate: a damaged sketch counts none).
func (m *minhashMethod) stagedSetsLen(docs []JoinDoc) int {
	head := 8*m.params.Bands + m.stagedSlotBytes()*m.spec.MinHash.NumPerm + 3
	n := 0
	for _, d := range docs {
		if len(d.Sketch) > head {
			c, k := binary.Uvarint(d.Sketch[head:])
			if k > 0 && c <= uint64(len(d.Sketch)) {
				n += int(c)
			}
		}
	}
	return n
}

// decodeStaged reads appendStaged's form into sk, reusing its slices and
// set's memory for the shingle set; it returns set, grown.
func (m *minhashMethod) decodeStaged(b []byte, sk *minhashSketch, set []uint64) ([]uint64, error) {
	k, bands, w := m.spec.MinHash.NumPerm, m.params.Bands, m.stagedSlotBytes()
	head := 8*bands + w*k + 2
	if len(b) <= head {
		return set, errStaged
	}
	sk.spec = &m.spec
	sk.keys = slices.Grow(sk.keys[:0], bands)[:bands]
	for x := range sk.keys {
		sk.keys[x] = binary.LittleEndian.Uint64(b[8*x:])
	}
	b = b[8*bands:]
	sk.sig = slices.Grow(sk.sig[:0], k)[:k]
	for x := range sk.sig {
		if w == 4 {
			sk.sig[x] = binary.LittleEndian.Uint32(b[4*x:])
		} else {
			sk.sig[x] = uint32(binary.LittleEndian.Uint16(b[2*x:]))
		}
	}
	sk.keff = int(binary.LittleEndian.Uint16(b[w*k:]))
	if sk.keff > k {
		return set, errStaged
	}
	flag := b[w*k+2]
	b = b[w*k+3:]
	sk.set = lazySet{}
	if flag == 0 {
		if len(b) != 0 || m.join.needSets() {
			return set, errStaged
		}
		return set, nil
	}
	c, n := binary.Uvarint(b)
	if n <= 0 || flag > 2 || uint64(len(b)-n) != 8*c {
		return set, errStaged
	}
	b = b[n:]
	set = slices.Grow(set[:0], int(c))[:c]
	if nativeLittleEndian {
		copy(wordBytes(set), b)
	} else {
		for x := range set {
			set[x] = binary.LittleEndian.Uint64(b[8*x:])
		}
	}
	sk.set = lazySet{h: set, sorted: flag == 2}
	return set, nil
}

// Signer is SketchRanges' sketch of one document at a time, for callers
// that read and normalise the documents themselves (the Beam pipeline):
// the method's sketcher, then the staged sketch and keys (appendSigned).
// It is not safe for concurrent use: one a goroutine.
//
// For the cascade (Options.Cascade) a Signer is a staged sign task's
// cascade over one shard (staged_cascade.go): it remembers the content id
// of every text it signed since Reset, and a document whose content id an
// earlier one of the shard has is not sketched by the method: its staged
// sketch is its content id alone and its key the content id's
// (SignedDoc.Copy), or it has neither when that text has no sketch. The
// caller gives each shard's documents in input order, calling Reset
// before each shard; the table holds about 40 bytes a distinct text.
type Signer struct {
	st stager
	sk DocSketcher
	// seen is the cascade's content ids of the shard: whether the text
	// has a sketch (nil without the cascade).
	seen map[xxh3.Uint128]bool
}

// NewSigner returns cfg's Signer, or why cfg is not staged.
func NewSigner(cfg Options) (*Signer, error) {
	m, st, err := stagedOf(cfg)
	if err != nil {
		return nil, err
	}
	sk, err := m.NewSketcher()
	if err != nil {
		return nil, err
	}
	s := &Signer{st: st, sk: sk}
	if cfg.Cascade {
		s.seen = map[xxh3.Uint128]bool{}
	}
	return s, nil
}

// Reset begins a new shard: the cascade forgets the content ids it has
// seen (nothing to do without the cascade).
func (s *Signer) Reset() {
	clear(s.seen)
}

// Sign sketches d (its Text normalised as Run normalises it) and sets
// sd.Sketch and sd.Keys to its staged sketch and keys (SignedDoc's, for
// JoinComponents and the candidate graph), reusing their memory; both
// are empty for a document without a sketch (an empty text, or no
// shingles). sd.Copy says that the cascade found d's text earlier in the
// shard and did not sketch it.
func (s *Signer) Sign(d *Doc, sd *SignedDoc) error {
	sd.Sketch, sd.Keys, sd.Copy = sd.Sketch[:0], sd.Keys[:0], false
	if len(d.Text) == 0 { // an empty text has no sketch, as in Run
		return nil
	}
	var h xxh3.Uint128
	if s.seen != nil {
		h = xxh3.Hash128(d.Text)
		if keyed, ok := s.seen[h]; ok {
			sd.Copy = keyed
			sd.Sketch, sd.Keys = s.st.appendSigned(sd.Sketch, sd.Keys, &cascadeSigned{h: h, keyed: keyed})
			return nil
		}
	}
	ds, err := s.sk.Sketch(d)
	if err != nil {
		return err
	}
	if s.seen != nil {
		s.seen[h] = ds != nil
		if ds == nil {
			return nil
		}
		ds = &cascadeSigned{h: h, s: ds, keyed: true}
	}
	if ds == nil {
		return nil
	}
	sd.Sketch, sd.Keys = s.st.appendSigned(sd.Sketch, sd.Keys, ds)
	return nil
}
