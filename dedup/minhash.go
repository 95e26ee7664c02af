package dedup

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
)

func init() { register("minhash", newMinhashMethod) }

// DefaultMinhashFamily is the default hash family of the minhash method
// (Config.Family chooses another). One permutation hashing with optimal
// densification signs in O(shingles + slots) instead of O(shingles x
// slots): on 1 KB web documents the whole run takes a third less CPU.
// Measured against the exact Jaccard join (docs/defaults.md), its clusters
// agree as well as multiply-shift's or better: on bible-kjv-family, char
// 5-grams at 0.7, pairwise F1 0.948 against 0.909; on 100k web documents,
// 0.932 against 0.924. Its slots are not independent (the S-curve of the
// banding is an approximation for it) and its signatures cannot be merged;
// --minhash-family multiply-shift gives independent slots.
const DefaultMinhashFamily = minhash.OPH

// minhashMethod finds documents whose MinHash signatures (package minhash,
// Config.NumPerm slots over the shingles of Config.Shingle) share an LSH
// band (package lsh), and joins them by union-find.
//
// Banding: --bands and --rows when given (one of them alone takes the
// other as NumPerm/that); otherwise the cheapest banding that makes a pair
// of similarity exactly --threshold a candidate with probability 0.95
// (lsh.DefaultParams, shared with index create and lsh-params; 13x7 at 0.8
// with 128 permutations). datasketch's area rule (lsh.Optimal, 9x13 at
// 0.8) catches only 40% of the pairs at the threshold.
//
// Joining candidates:
//   - With Verify, a candidate pair joins a cluster only when the exact
//     Jaccard of the two shingle sets is at least Threshold; its Similarity
//     is that exact value. No pair below the threshold is ever reported.
//   - Without Verify, a candidate joins when the signature estimate (the
//     fraction of equal slots) is at least Threshold, and the estimate is
//     the pair's Similarity. Joining every candidate directly (text-dedup's
//     behaviour) was measured to merge unrelated documents through chains
//     of false positives (docs/bench/minhash.md), so it is not the default.
//
// Cost: the Finder queries the banded index before inserting each
// document and skips candidates already in the document's cluster (a
// union-find inside the Finder), so a cluster is reported as a spanning
// forest of pairs, not all its pairs (Config.AllPairs reports every
// verified candidate pair, and inserts every document). A document whose shingle set (with
// Verify) or signature (without) equals an accepted candidate's is not
// inserted in the index: it would only lengthen the buckets, and every
// later document pairs with the earlier copy exactly as it would with it.
// Thousands of identical documents therefore cost linear time.
//
// Memory per document: the index (about 250 bytes at 13 bands), plus the
// signature (4 bytes a slot) without Verify or the shingle set (8 bytes a
// shingle) with it.
//
// Documents with no shingles (empty or only punctuation) are never
// reported as duplicates, of each other included, as in the jaccard
// method; the exact method finds identical texts.
type minhashMethod struct {
	threshold float64
	params    lsh.Params
	rule      string
	family    minhash.Family
	hasher    *minhash.Hasher
	shingle   shingle.Options
	verify    bool
	allPairs  bool // Config.AllPairs: report joined candidates too
	direct    bool // join every candidate (no estimate filter); tests and measurements only
}

func newMinhashMethod(cfg Config) (Method, error) {
	if !(cfg.Threshold > 0 && cfg.Threshold <= 1) {
		return nil, fmt.Errorf("--threshold %v: must be in (0, 1]", cfg.Threshold)
	}
	k := cfg.NumPerm
	if k < 1 || k > minhash.MaxNumPerm {
		return nil, fmt.Errorf("--num-perm %d: must be between 1 and %d", cfg.NumPerm, minhash.MaxNumPerm)
	}
	if _, err := shingle.New(cfg.Shingle); err != nil {
		return nil, err
	}
	family := DefaultMinhashFamily
	if cfg.Family != "" {
		f, err := minhash.ParseFamily(cfg.Family)
		if err != nil {
			return nil, fmt.Errorf("--minhash-family: %w", err)
		}
		family = f
	}
	h, err := minhash.New(minhash.Options{NumPerm: k, Family: family, Seed: cfg.Seed})
	if err != nil {
		return nil, err
	}
	m := &minhashMethod{threshold: cfg.Threshold, family: family, hasher: h,
		shingle: cfg.Shingle, verify: cfg.Verify, allPairs: cfg.AllPairs}
	switch {
	case cfg.Bands < 0 || cfg.Rows < 0:
		return nil, fmt.Errorf("--bands %d --rows %d: must not be negative", cfg.Bands, cfg.Rows)
	case cfg.Bands == 0 && cfg.Rows == 0:
		m.params, err = lsh.DefaultParams(cfg.Threshold, k)
		if err != nil {
			return nil, err
		}
		m.rule = fmt.Sprintf("recall %.2f at the threshold (lsh.DefaultParams)", lsh.DefaultRecall)
	case cfg.Rows == 0:
		m.params = lsh.Params{Bands: cfg.Bands, Rows: k / max(cfg.Bands, 1)}
		m.rule = "--bands"
	case cfg.Bands == 0:
		m.params = lsh.Params{Bands: k / cfg.Rows, Rows: cfg.Rows}
		m.rule = "--rows"
	default:
		m.params = lsh.Params{Bands: cfg.Bands, Rows: cfg.Rows}
		m.rule = "--bands and --rows"
	}
	if err := m.params.Validate(k); err != nil {
		return nil, fmt.Errorf("--bands %d --rows %d --num-perm %d: bands x rows must be at most --num-perm, both at least 1: %w",
			m.params.Bands, m.params.Rows, k, err)
	}
	return m, nil
}

func (m *minhashMethod) Name() string { return "minhash" }

func (m *minhashMethod) Describe() map[string]any {
	n := m.shingle.N
	if n == 0 {
		n = 1
	}
	join := "signature estimate >= threshold"
	switch {
	case m.verify:
		join = "exact Jaccard of shingle sets >= threshold (--verify)"
	case m.direct:
		join = "every candidate"
	}
	return map[string]any{
		"threshold":           m.threshold,
		"num_perm":            m.hasher.NumPerm(),
		"family":              m.family.String(),
		"seed":                fmt.Sprintf("%#x", m.hasher.Seed()),
		"unit":                m.shingle.Unit.String(),
		"ngram":               n,
		"bands":               m.params.Bands,
		"rows":                m.params.Rows,
		"banding":             m.rule,
		"effective_threshold": m.params.Threshold(),
		"p_at_threshold":      m.params.Probability(m.threshold),
		"verify":              m.verify,
		"join":                join,
	}
}

// minhashSketch is a document's signature and, with Verify, its shingle
// set. A document without shingles has a nil signature.
type minhashSketch struct {
	sig minhash.Signature
	set []uint64 // sorted, distinct; only with Verify
	h   *minhash.Hasher
}

// AppendJSON writes {"family", "num_perm", "seed", "slots"}: the seed as a
// hex string ("0x..."), the slots as the signature's 32-bit minima, null
// for a document without shingles.
func (s *minhashSketch) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"family":"`...)
	dst = append(dst, s.h.Family().String()...)
	dst = append(dst, `","num_perm":`...)
	dst = strconv.AppendInt(dst, int64(s.h.NumPerm()), 10)
	dst = append(dst, `,"seed":"0x`...) // a string: JSON numbers lose 64-bit precision in many readers
	dst = strconv.AppendUint(dst, s.h.Seed(), 16)
	dst = append(dst, `","slots":`...)
	if s.sig == nil {
		return append(dst, "null}"...)
	}
	dst = append(dst, '[')
	for i, v := range s.sig {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendUint(dst, uint64(v), 10)
	}
	return append(dst, "]}"...)
}

type minhashSketcher struct {
	m      *minhashMethod
	sh     *shingle.Shingler
	hashes []uint64
}

func (m *minhashMethod) NewSketcher() (Sketcher, error) {
	sh, err := shingle.New(m.shingle)
	if err != nil {
		return nil, err
	}
	return &minhashSketcher{m: m, sh: sh}, nil
}

func (s *minhashSketcher) Sketch(d *Doc) (Sketch, error) {
	sk := &minhashSketch{h: s.m.hasher}
	if s.m.verify {
		// The Finder keeps the set: an exact-size copy, the scratch is reused.
		s.hashes = s.sh.AppendSet(s.hashes[:0], textView(d))
		if len(s.hashes) == 0 {
			return sk, nil
		}
		sk.set = slices.Clone(s.hashes)
		sk.sig = s.m.hasher.Sign(nil, sk.set)
		return sk, nil
	}
	s.hashes = s.sh.AppendHashes(s.hashes[:0], textView(d))
	if len(s.hashes) == 0 {
		return sk, nil
	}
	sk.sig = s.m.hasher.Sign(nil, s.hashes)
	return sk, nil
}

// minhashFinder is the streaming Finder: query, join, insert.
type minhashFinder struct {
	m     *minhashMethod
	k     int
	ix    *lsh.Index
	uf    *cluster.UnionFind
	sigs  sigStore   // document i's signature, 16 bits a slot (without Verify)
	sets  [][]uint64 // document i's shingle set (with Verify)
	cands []uint32
	// direct mode: the first document of each band's bucket.
	first []map[uint64]int32
	keys  []uint64
}

func (m *minhashMethod) NewFinder() (Finder, error) {
	f := &minhashFinder{m: m, k: m.hasher.NumPerm(), uf: cluster.NewUnionFind(0)}
	f.sigs.k = f.k
	if m.direct && !m.verify {
		f.first = make([]map[uint64]int32, m.params.Bands)
		for i := range f.first {
			f.first[i] = make(map[uint64]int32)
		}
		return f, nil
	}
	ix, err := lsh.New(m.params, f.k, lsh.Options{})
	if err != nil {
		return nil, err
	}
	f.ix = ix
	return f, nil
}

func (f *minhashFinder) Add(i int, s Sketch, emit func(Pair)) error {
	if i > int(^uint32(0)>>1) {
		return fmt.Errorf("minhash: document %d: too many documents for one index", i)
	}
	f.uf.Grow(i + 1)
	if s == nil {
		return nil // empty normalised text
	}
	sk, ok := s.(*minhashSketch)
	if !ok {
		return fmt.Errorf("minhash: sketch of type %T", s)
	}
	if sk.sig == nil {
		return nil // no shingles
	}
	if len(sk.sig) != f.k {
		return fmt.Errorf("minhash: document %d: signature of %d slots, want %d", i, len(sk.sig), f.k)
	}
	if f.m.verify {
		for len(f.sets) <= i {
			f.sets = append(f.sets, nil)
		}
		f.sets[i] = sk.set
	} else {
		f.sigs.put(i, sk.sig)
	}
	if f.first != nil {
		return f.addDirect(i, sk.sig, emit)
	}
	var err error
	f.cands, err = f.ix.Query(f.cands[:0], sk.sig)
	if err != nil {
		return err
	}
	duplicate := false
	for _, c := range f.cands {
		j := int(c)
		if f.uf.Find(j) == f.uf.Find(i) && !f.m.allPairs {
			// Already joined; but an identical earlier document still
			// makes this one redundant in the index.
			if !duplicate && f.identical(j, i, sk) {
				duplicate = true
			}
			continue
		}
		sim, ok := f.match(j, i, sk)
		if !ok {
			continue
		}
		f.uf.Union(j, i)
		emit(Pair{A: j, B: i, Similarity: sim, Distance: -1})
		if sim == 1 && f.identical(j, i, sk) {
			duplicate = true
		}
	}
	if duplicate && !f.m.allPairs {
		// With AllPairs every document is inserted: a later document
		// pairs with each copy.
		return nil
	}
	return f.ix.Insert(uint32(i), sk.sig)
}

// match decides a candidate pair (j earlier than i).
func (f *minhashFinder) match(j, i int, sk *minhashSketch) (float64, bool) {
	if f.m.verify {
		sim := jaccard.Set(f.sets[j], sk.set)
		return sim, sim >= f.m.threshold
	}
	sim := float64(matches16(f.sigs.get(j), sk.sig)) / float64(f.k)
	return sim, sim >= f.m.threshold
}

// identical reports whether document j's set (with Verify) or signature
// equals the sketch's.
func (f *minhashFinder) identical(j, i int, sk *minhashSketch) bool {
	if f.m.verify {
		a := f.sets[j]
		if len(a) != len(sk.set) {
			return false
		}
		for x := range a {
			if a[x] != sk.set[x] {
				return false
			}
		}
		return true
	}
	return matches16(f.sigs.get(j), sk.sig) == f.k
}

// addDirect joins document i to the first document of each of its
// buckets: the same clusters as joining every candidate pair.
func (f *minhashFinder) addDirect(i int, sig minhash.Signature, emit func(Pair)) error {
	f.keys = f.m.params.AppendKeys(f.keys[:0], sig)
	for band, k := range f.keys {
		j, ok := f.first[band][k]
		if !ok {
			f.first[band][k] = int32(i)
			continue
		}
		if f.uf.Find(int(j)) == f.uf.Find(i) {
			continue
		}
		f.uf.Union(int(j), i)
		sim := float64(matches16(f.sigs.get(int(j)), sig)) / float64(f.k)
		emit(Pair{A: int(j), B: i, Similarity: sim, Distance: -1})
	}
	return nil
}

func (f *minhashFinder) Flush(func(Pair)) error {
	f.ix, f.sigs, f.sets, f.first = nil, sigStore{}, nil, nil
	return nil
}

// Keyed: one key per band, the band number mixed in.

func (m *minhashMethod) AppendKeys(dst []uint64, s Sketch) []uint64 {
	sk, ok := s.(*minhashSketch)
	if !ok || sk.sig == nil {
		return dst
	}
	start := len(dst)
	dst = m.params.AppendKeys(dst, sk.sig)
	for b := start; b < len(dst); b++ {
		dst[b] ^= uint64(b-start+1) * 0x9e3779b97f4a7c15
	}
	return dst
}

func (m *minhashMethod) Match(a, b Sketch) (float64, int, bool) {
	sa, ok1 := a.(*minhashSketch)
	sb, ok2 := b.(*minhashSketch)
	if !ok1 || !ok2 || sa.sig == nil || sb.sig == nil || len(sa.sig) != len(sb.sig) {
		return 0, -1, false
	}
	if m.verify {
		sim := jaccard.Set(sa.set, sb.set)
		return sim, -1, sim >= m.threshold
	}
	sim := float64(matches16Full(sa.sig, sb.sig)) / float64(len(sa.sig))
	return sim, -1, m.direct || sim >= m.threshold
}

// AppendSketch writes a flag byte (1: has a signature), the signature as
// raw 32-bit slots, then with Verify the set size as a uvarint and the
// set's hashes as 8 little-endian bytes each.
func (m *minhashMethod) AppendSketch(dst []byte, s Sketch) []byte {
	sk := s.(*minhashSketch)
	if sk.sig == nil {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	dst, _ = minhash.AppendEncode(dst, sk.sig, minhash.Raw32, 0)
	if m.verify {
		dst = binary.AppendUvarint(dst, uint64(len(sk.set)))
		for _, x := range sk.set {
			dst = binary.LittleEndian.AppendUint64(dst, x)
		}
	}
	return dst
}

func (m *minhashMethod) DecodeSketch(b []byte) (Sketch, error) {
	sk := &minhashSketch{h: m.hasher}
	if len(b) == 0 || b[0] > 1 {
		return nil, fmt.Errorf("minhash: bad sketch flag")
	}
	if b[0] == 0 {
		if len(b) != 1 {
			return nil, fmt.Errorf("minhash: %d bytes after an empty sketch", len(b)-1)
		}
		return sk, nil
	}
	k := m.hasher.NumPerm()
	if len(b) < 1+4*k {
		return nil, fmt.Errorf("minhash: sketch of %d bytes, want at least %d", len(b), 1+4*k)
	}
	sig, err := minhash.Decode(nil, b[1:1+4*k], minhash.Raw32, 0, k)
	if err != nil {
		return nil, err
	}
	sk.sig = sig
	rest := b[1+4*k:]
	if !m.verify {
		if len(rest) != 0 {
			return nil, fmt.Errorf("minhash: %d trailing sketch bytes", len(rest))
		}
		return sk, nil
	}
	n, w := binary.Uvarint(rest)
	if w <= 0 || n == 0 || n != uint64(len(rest)-w)/8 || uint64(len(rest)-w)%8 != 0 {
		return nil, fmt.Errorf("minhash: bad shingle set in sketch")
	}
	rest = rest[w:]
	sk.set = make([]uint64, n)
	for i := range sk.set {
		sk.set[i] = binary.LittleEndian.Uint64(rest[8*i:])
		if i > 0 && sk.set[i] <= sk.set[i-1] {
			return nil, fmt.Errorf("minhash: shingle set in sketch not sorted")
		}
	}
	return sk, nil
}

// BytesPerDoc: the index (13 bands: about 250 bytes), the union-find (8),
// and the signature (2 bytes a slot: see sigStore) or, with Verify, the
// shingle set (8 bytes a shingle).
func (m *minhashMethod) BytesPerDoc(textBytes int) int {
	per := 20*m.params.Bands + 8
	if m.verify {
		return per + 24 + 8*shinglesPerText(m.shingle.Unit, textBytes)
	}
	return per + 2*m.hasher.NumPerm()
}
