package store

import (
	"errors"
	"fmt"
	"strings"

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
