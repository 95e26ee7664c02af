package store

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/sketch"
)

// keyer is what every backend of an index (the embedded Store and the
// Redis index) derives from the parameters: the band or table keys of a
// sketch, the check that a sketch belongs to the index, and the
// verification of a candidate against its stored record. Sharing it is what
// makes the backends key, verify and store exactly the same things.
type keyer struct {
	// sets: new documents' records carry their shingle sets, and the
	// index's sketcher makes them (formats 4 and 5 of the embedded store,
	// 3 and 4 of Redis); an index upgrade turns it on.
	sets *atomic.Bool
	// bare: a new record with a set leaves out its signature when the
	// set gives it (format 5 of the embedded store, 4 of Redis); signer
	// computes it, for the OPH family only (nil otherwise).
	bare   *atomic.Bool
	signer *minhash.Hasher
	sigs   *sync.Pool  // of *minhash.Signature, for checking a set's signature
	spec   sketch.Spec // the index's specification, resolved: it computes the keys
	codec  recordCodec
	bands  lsh.Params
	tables int
	// extraction is the text.MainVersion recorded by an index of main
	// content, 0 when none (Extraction).
	extraction int
}

// newKeyer derives the keys of sp from package sketch, the one definition
// of them (its golden tests pin the values stored in indexes).
func newKeyer(sp sketch.Spec) (keyer, error) {
	k := keyer{sets: new(atomic.Bool), bare: new(atomic.Bool)}
	var err error
	if k.spec, err = resolveSpec(sp); err != nil {
		return k, err
	}
	k.codec = codecOf(&k.spec)
	k.tables = k.spec.NumKeys()
	if k.spec.Method == sketch.MinHash {
		k.bands = k.spec.Banding()
		if m := k.spec.MinHash; m.Family == minhash.OPH {
			if k.signer, err = minhash.New(minhash.Options{NumPerm: m.NumPerm, Family: m.Family, Seed: m.Seed}); err != nil {
				return k, fmt.Errorf("%w: %v", ErrParams, err)
			}
			k.sigs = &sync.Pool{New: func() any { return new(minhash.Signature) }}
		}
	}
	return k, nil
}

// appendRecord appends the record of a document as this index writes
// it: with its shingle set when the index keeps sets, and bare (without
// its signature) when the index's format allows it and the set gives the
// signature, as every sketch of the index's sketcher does (a caller's
// sketch whose set and signature disagree keeps its signature).
func (k *keyer) appendRecord(dst []byte, id string, sk *sketch.Sketch) []byte {
	sets := k.sets.Load()
	bare := false
	if sets && k.signer != nil && k.bare.Load() && !sk.Empty && len(sk.Set) > 0 {
		sig := k.sigs.Get().(*minhash.Signature)
		*sig = k.signer.Sign(*sig, sk.Set)
		bare = slices.Equal(*sig, sk.Sig)
		k.sigs.Put(sig)
	}
	return k.codec.appendRecord(dst, id, sk, sets, bare)
}

// readRecord decodes a record into r (recordCodec.decodeRecord) and gives a
// bare record its signature, the signature of its set.
func (k *keyer) readRecord(r *record, src []byte) error {
	if err := k.codec.decodeRecord(r, src); err != nil {
		return err
	}
	if r.flags&flagBare == 0 {
		return nil
	}
	if k.signer == nil {
		return fmt.Errorf("%w: a record without its signature in an index of the %s family", ErrCorrupt, k.spec.MinHash.Family)
	}
	set, err := r.decodedSet()
	if err != nil {
		return err
	}
	r.sig = k.signer.Sign(r.sig, set)
	return nil
}

// checkSketch refuses a sketch that does not belong to this index: the
// specification's own check (sketch.Spec.Compatible, which lets an Empty
// sketch through: its Sig and FP are not read), and a shingle set that is
// not sorted and distinct.
func (s *keyer) checkSketch(sk *sketch.Sketch) error {
	if err := s.spec.Compatible(sk); err != nil {
		return fmt.Errorf("%w: %w", ErrIncompatible, err)
	}
	for i := 1; i < len(sk.Set); i++ {
		if sk.Set[i] <= sk.Set[i-1] {
			return fmt.Errorf("%w: shingle set not sorted and distinct at hash %d", ErrIncompatible, i)
		}
	}
	return nil
}

// appendKeys appends the band or table keys of sk (sketch.Spec.AppendKeys,
// with the banding computed once): none for an Empty sketch.
func (s *keyer) appendKeys(dst []uint64, sk *sketch.Sketch) []uint64 {
	if sk.Empty {
		return dst
	}
	if s.spec.Method == sketch.MinHash {
		return s.bands.AppendKeys(dst, sk.Sig)
	}
	return s.spec.AppendKeys(dst, sk)
}

// verify appends to dst the candidate in sc.rec when it is a duplicate of
// sk (or, all set, when it shares a key of sc.keys, the keys of sk, in the
// same table). A record without postings never matches. The decision is
// package sketch's, as dedup's: MinHash by Spec.DecideLeader (dedup's
// leader join), SimHash by Spec.Duplicate; the Match's Similarity and
// Distance are the Spec's too.
func (s *keyer) verify(dst []Match, sc *scratch, sk *sketch.Sketch, all bool) ([]Match, error) {
	if sc.rec.flags&flagEmpty != 0 {
		return dst, nil // a tag collision with a document without postings
	}
	rec := sketch.Sketch{Sig: sc.rec.sig, FP: sc.rec.fp}
	m := Match{Distance: -1}
	if s.spec.Method == sketch.MinHash {
		if len(sk.Sig) != len(sc.rec.sig) || len(sk.Sig) == 0 {
			return dst, fmt.Errorf("%w: record signature of %d slots, want %d", ErrCorrupt, len(sc.rec.sig), len(sk.Sig))
		}
		if all && !s.sharesKey(sc) {
			return dst, nil
		}
		// The estimate rejects below the lower margin, the exact Jaccard
		// of the sets decides the rest. The candidate's set is decoded
		// only when the estimate leaves the pair open.
		if sc.rec.hasSet && sk.Set != nil && (all || s.spec.WithinMargin(sk, &rec)) {
			set, err := sc.rec.decodedSet()
			if err != nil {
				return dst, fmt.Errorf("record %q: %w", sc.rec.id, err)
			}
			rec.Set = set
		}
		v := s.spec.DecideLeader(sk, &rec)
		if !all && !v.Duplicate {
			return dst, nil
		}
		m.Similarity, m.Exact = v.Similarity, v.Exact
	} else {
		if !all && !s.spec.Duplicate(sk, &rec) || all && !s.sharesKey(sc) {
			return dst, nil
		}
		m.Similarity, m.Distance = s.spec.Similarity(sk, &rec)
	}
	m.ID = string(sc.rec.id)
	return append(dst, m), nil
}

// sortLimit sorts dst[start:] best first and keeps at most limit of them
// (0: all).
func sortLimit(dst []Match, start, limit int) []Match {
	sortMatches(dst[start:])
	if limit > 0 && len(dst)-start > limit {
		dst = dst[:start+limit]
	}
	return dst
}

// sharesKey tells whether the record in sc.rec has one of the keys sc.keys
// in the same table (rather than only a tag): what Candidates promises.
func (s *keyer) sharesKey(sc *scratch) bool {
	sk := sketch.Sketch{Sig: sc.rec.sig, FP: sc.rec.fp}
	n := len(sc.keys)
	sc.keys = s.appendKeys(sc.keys, &sk)
	defer func() { sc.keys = sc.keys[:n] }()
	for t := range n {
		if sc.keys[t] == sc.keys[n+t] {
			return true
		}
	}
	return false
}
