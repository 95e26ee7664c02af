package gpu

import (
	"encoding/binary"
	"fmt"

	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/sketch"
)

// MaxDocBytes is the longest normalised text sent to the GPU: one warp
// signs a document, so a very long one would hold up its whole batch;
// longer texts are signed on the CPU.
const MaxDocBytes = 1 << 20

// ConfigFor returns the kernel's configuration for a sketch
// specification, or an error saying why the GPU cannot sign with it:
// methods other than minhash and simhash, the permutation family, SimHash
// weights other than set and count, and the cjkword unit.
func ConfigFor(spec sketch.Spec) (Config, error) {
	r, err := spec.Resolve()
	if err != nil {
		return Config{}, err
	}
	c := Config{N: r.Shingle.N, Seed: r.Shingle.Seed}
	switch r.Shingle.Unit {
	case shingle.Word:
		c.Unit = Word
	case shingle.Char:
		c.Unit = Char
	default:
		return Config{}, fmt.Errorf("gpu: the GPU does not segment words (unit %s)", r.Shingle.Unit)
	}
	switch r.Method {
	case sketch.MinHash:
		h, err := minhash.New(minhash.Options{NumPerm: r.MinHash.NumPerm, Family: r.MinHash.Family, Seed: r.MinHash.Seed})
		if err != nil {
			return Config{}, err
		}
		c.K = r.MinHash.NumPerm
		switch r.MinHash.Family {
		case minhash.OPH:
			c.Method = OPH
			_, _, c.Key, c.Probe = h.Coefficients()
		case minhash.MultiplyShift:
			c.Method = MultiplyShift
			c.A, c.B, _, _ = h.Coefficients()
		default:
			return Config{}, fmt.Errorf("gpu: the GPU does not compute MinHash family %s (oph and multiply-shift only)", r.MinHash.Family)
		}
	case sketch.SimHash:
		h, err := simhash.New(simhash.Options{Bits: r.SimHash.Bits, Seed: r.SimHash.Seed})
		if err != nil {
			return Config{}, err
		}
		c.K = r.SimHash.Bits
		c.Key, c.Probe = h.Seeds()
		switch r.SimHash.Weights {
		case sketch.WeightSet:
			c.Method = SimHashSet
		case sketch.WeightCount:
			c.Method = SimHashCount
		default:
			return Config{}, fmt.Errorf("gpu: the GPU does not weigh SimHash features by %s (set and count only)", r.SimHash.Weights)
		}
	default:
		return Config{}, fmt.Errorf("gpu: the GPU does not compute method %s (minhash and simhash only)", r.Method)
	}
	return c, c.Validate()
}

// Eligible reports whether the GPU signs a normalised text: a non-empty
// ASCII text of at most MaxDocBytes. Others go to the CPU.
func Eligible(text []byte) bool {
	if len(text) == 0 || len(text) > MaxDocBytes {
		return false
	}
	const high = 0x8080808080808080
	i := 0
	for ; i+32 <= len(text); i += 32 {
		q := text[i : i+32 : i+32]
		if (binary.LittleEndian.Uint64(q)|binary.LittleEndian.Uint64(q[8:])|
			binary.LittleEndian.Uint64(q[16:])|binary.LittleEndian.Uint64(q[24:]))&high != 0 {
			return false
		}
	}
	for ; i+8 <= len(text); i += 8 {
		if binary.LittleEndian.Uint64(text[i:])&high != 0 {
			return false
		}
	}
	for ; i < len(text); i++ {
		if text[i] >= 0x80 {
			return false
		}
	}
	return true
}
