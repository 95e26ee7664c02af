package sketch

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/neardup/neardup/internal/mix"
	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/simhash"
)

// AppendKeys appends the index keys of sk to dst, NumKeys of them, in
// table order, and returns it: MinHash: the LSH band keys of the signature
// (lsh.Params.AppendKeys); SimHash: one key per permuted table (the masked
// fingerprint, mixed for more than 64 bits); Exact: the low 64 bits of the
// hash; KSentence: its first 8 bytes, little-endian; Jaccard: none. Two
// sketches that are duplicates share a key in at least one table
// (SimHash, Exact, KSentence: always; MinHash: with the banding's
// probability). An empty sketch has no keys. The values are stored in
// indexes and never change (TestKeysGolden). s must be resolved.
func (s Spec) AppendKeys(dst []uint64, sk *Sketch) []uint64 {
	if sk.Empty {
		return dst
	}
	switch s.Method {
	case MinHash:
		return s.Banding().AppendKeys(dst, sk.Sig)
	case SimHash:
		t := tablesFor(s.SimHash)
		for _, m := range t.masks {
			dst = append(dst, t.key(sk.FP, m))
		}
	case Exact:
		dst = append(dst, binary.BigEndian.Uint64(sk.Hash[8:]))
	case KSentence:
		dst = append(dst, binary.LittleEndian.Uint64(sk.Hash[:8]))
	}
	return dst
}

// Similarity returns the similarity of two sketches of s and, for SimHash,
// their Hamming distance (-1 otherwise): MinHash: the signature estimate
// (the fraction of equal slots); SimHash: 1 - distance/bits, the fraction
// of equal bits (not a Jaccard similarity); Exact and KSentence: 1 for
// equal hashes, else 0; Jaccard: the exact Jaccard similarity of the sets.
// An empty sketch has similarity 0 to everything. Sketches of another Spec
// give meaningless values; Compatible checks one.
func (s Spec) Similarity(a, b *Sketch) (sim float64, distance int) {
	if a.Empty || b.Empty {
		return 0, -1
	}
	switch s.Method {
	case MinHash:
		if len(a.Sig) != len(b.Sig) || len(a.Sig) == 0 {
			return 0, -1
		}
		return float64(minhash.Matches(a.Sig, b.Sig)) / float64(len(a.Sig)), -1
	case SimHash:
		d := a.FP.Distance(b.FP)
		return HammingSimilarity(d, s.SimHash.Bits), d
	case Exact, KSentence:
		if a.Hash == b.Hash {
			return 1, -1
		}
		return 0, -1
	case Jaccard:
		return jaccard.Set(a.Set, b.Set), -1
	}
	return 0, -1
}

// HammingSimilarity is 1 - d/bits: the fraction of equal bits of two
// fingerprints at Hamming distance d.
func HammingSimilarity(d, bits int) float64 { return 1 - float64(d)/float64(bits) }

// Duplicate reports whether a and b are duplicates by their sketches
// alone: MinHash: the estimate is at least Threshold; SimHash: the
// distance is at most SimHash.MaxDistance; Exact, KSentence: equal hashes;
// Jaccard: the exact Jaccard similarity is at least Threshold.
func (s Spec) Duplicate(a, b *Sketch) bool {
	sim, d := s.Similarity(a, b)
	switch s.Method {
	case SimHash:
		return !a.Empty && !b.Empty && d <= s.SimHash.MaxDistance()
	case Exact, KSentence:
		return sim == 1
	}
	return !a.Empty && !b.Empty && sim >= s.Threshold
}

// Compatible returns an error wrapping ErrSketch unless sk could be a
// sketch of the resolved Spec s: a signature of NumPerm slots, a
// fingerprint without bits above Bits. An Empty sketch always could (its
// Sig and FP are not read).
func (s Spec) Compatible(sk *Sketch) error {
	if sk.Empty {
		return nil
	}
	switch s.Method {
	case MinHash:
		if len(sk.Sig) != s.MinHash.NumPerm {
			return fmt.Errorf("%w: a MinHash signature of %d slots, the specification has %d", ErrSketch, len(sk.Sig), s.MinHash.NumPerm)
		}
	case SimHash:
		lo, hi := FingerprintMask(s.SimHash.Bits)
		if sk.Sig != nil || sk.FP.Lo&^lo != 0 || sk.FP.Hi&^hi != 0 {
			return fmt.Errorf("%w: not a %d-bit SimHash fingerprint", ErrSketch, s.SimHash.Bits)
		}
	}
	return nil
}

// FingerprintMask returns the masks (low word, high word) of the lowest
// nbits bits of a fingerprint: the bits a SimHash fingerprint of nbits
// may have set.
func FingerprintMask(nbits int) (lo, hi uint64) {
	switch {
	case nbits >= 128:
		return ^uint64(0), ^uint64(0)
	case nbits > 64:
		return ^uint64(0), 1<<(nbits-64) - 1
	case nbits == 64:
		return ^uint64(0), 0
	}
	return 1<<nbits - 1, 0
}

// tables are the key masks of a SimHash permuted-table design: the f bits
// cut into Blocks contiguous blocks (the first f mod Blocks one bit
// longer, from bit 0 up); table t keeps the t-th choice, in lexicographic
// order, of Blocks - Distance blocks (simhash.Design.TableMasks).
type tables struct {
	bits  int
	masks []simhash.Fingerprint
}

type tablesKey struct{ bits, blocks, distance int }

var tableCache sync.Map // tablesKey -> *tables

// tablesFor returns the tables of a resolved SimHashSpec, cached: there
// are few distinct designs in a process.
func tablesFor(m SimHashSpec) *tables {
	k := tablesKey{m.Bits, m.Blocks, m.MaxDistance()}
	if t, ok := tableCache.Load(k); ok {
		return t.(*tables)
	}
	d := simhash.Design{Bits: m.Bits, Distance: k.distance, Blocks: m.Blocks, KeyBlocks: m.Blocks - k.distance}
	t := &tables{bits: m.Bits, masks: d.TableMasks()}
	tableCache.Store(k, t)
	return t
}

// key is the 64-bit key of fp in the table of mask m: the masked bits
// themselves for at most 64 bits, else a mix of the two masked halves (a
// collision only adds a candidate, which the distance check removes).
func (t *tables) key(fp, m simhash.Fingerprint) uint64 {
	if t.bits <= 64 {
		return fp.Lo & m.Lo
	}
	return mix.Fmix64(fp.Lo&m.Lo ^ mix.Fmix64(fp.Hi&m.Hi^0x9e3779b97f4a7c15))
}

// TableMasks returns the key masks of the SimHash tables of a resolved
// SimHash Spec, in table order (nil for other methods).
func (s Spec) TableMasks() []simhash.Fingerprint {
	if s.Method != SimHash {
		return nil
	}
	return tablesFor(s.SimHash).masks
}
