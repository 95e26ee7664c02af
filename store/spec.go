package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/sketch"
)

// The parameters of an index are a sketch.Spec of method sketch.MinHash or
// sketch.SimHash: package sketch defines them, their defaults (the zero
// value of each field), their validation and their stored form. The
// settings that only concern the index (its memory, durability, whether
// it keeps shingle sets) are Options.

// resolveSpec returns sp resolved by package sketch, or an error wrapping
// ErrParams: an invalid Spec, or a method an index does not hold.
func resolveSpec(sp sketch.Spec) (sketch.Spec, error) {
	if sp.Method != sketch.MinHash && sp.Method != sketch.SimHash {
		return sp, fmt.Errorf("%w: method %s (an index holds minhash or simhash)", ErrParams, sp.Method)
	}
	r, err := sp.Resolve()
	if err != nil {
		return sp, fmt.Errorf("%w: %v", ErrParams, err)
	}
	return r, nil
}

// CheckSpec returns an error wrapping ErrIncompatible, naming the first
// difference, unless want makes the same sketches and duplicates as have,
// the resolved Spec of an index. Zero values in want are resolved to the
// defaults first; a want that does not resolve wraps ErrParams.
func CheckSpec(have, want sketch.Spec) error {
	rw, err := resolveSpec(want)
	if err != nil {
		return err
	}
	if err := have.Check(rw); err != nil {
		return fmt.Errorf("%w: %v", ErrIncompatible, strings.TrimPrefix(err.Error(), sketch.ErrIncompatible.Error()+": "))
	}
	return nil
}

// decodeSpec reads the stored form of an index's Spec (docs/format/store.md:
// the serialised sketch.Spec, or the parameters of a format-2 index, which
// package sketch reads too). Anything that does not read as a valid MinHash
// or SimHash Spec wraps ErrCorrupt (ErrVersion for a Spec of a newer
// version).
func decodeSpec(b []byte) (sketch.Spec, error) {
	var sp sketch.Spec
	if err := sp.UnmarshalJSON(b); err != nil {
		if errors.Is(err, sketch.ErrVersion) {
			return sp, fmt.Errorf("%w: params: %v", ErrVersion, err)
		}
		return sp, fmt.Errorf("%w: params: %v", ErrCorrupt, err)
	}
	if sp.Method != sketch.MinHash && sp.Method != sketch.SimHash {
		return sp, fmt.Errorf("%w: params: method %s (an index holds minhash or simhash)", ErrCorrupt, sp.Method)
	}
	return sp, nil
}

// MinBandingRecall is the smallest probability, at the threshold, with
// which a MinHash banding given by hand (MinHash.Bands or MinHash.Rows set)
// must make a pair a candidate for Create and CreateRedis to accept it: an
// index below it cannot find the duplicates its threshold promises. The
// banding lsh.DefaultParams chooses (both zero) is always accepted.
const MinBandingRecall = 0.5

// ErrBanding is wrapped (with ErrParams) by the refusal of a banding below
// MinBandingRecall.
var ErrBanding = errors.New("the banding misses most pairs at the threshold")

// checkBanding refuses a MinHash banding given by hand in sp (rp is sp
// resolved) that makes fewer than MinBandingRecall of the pairs at the
// threshold candidates.
func checkBanding(sp, rp sketch.Spec) error {
	if sp.Method != sketch.MinHash || sp.MinHash.Bands == 0 && sp.MinHash.Rows == 0 {
		return nil
	}
	b := rp.Banding()
	pr := b.Probability(rp.Threshold)
	if pr >= MinBandingRecall {
		return nil
	}
	d, err := lsh.DefaultParams(rp.Threshold, rp.MinHash.NumPerm)
	if err != nil {
		return fmt.Errorf("%w: %w: %s at the threshold %v: probability %.2f", ErrParams, ErrBanding, b, rp.Threshold, pr)
	}
	return fmt.Errorf("%w: %w: %s makes a pair at the threshold %v a candidate with probability %.2f; the default banding for it is %s (probability %.2f)",
		ErrParams, ErrBanding, b, rp.Threshold, pr, d, d.Probability(rp.Threshold))
}

// resolveNew is resolveSpec for a new index: it also refuses a banding
// given by hand below MinBandingRecall (checkBanding).
func resolveNew(sp sketch.Spec) (sketch.Spec, error) {
	rp, err := resolveSpec(sp)
	if err != nil {
		return rp, err
	}
	return rp, checkBanding(sp, rp)
}
