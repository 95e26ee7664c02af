package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSetCodeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	sets := [][]uint64{{0}, {1}, {^uint64(0)}, {0, ^uint64(0)}, {0, 1, 2, 3}, {5, 1 << 63, 1<<63 + 1}}
	for _, n := range []int{1, 2, 10, 170, 1000} {
		s := make([]uint64, n)
		for i := range s {
			s[i] = r.Uint64()
		}
		slices.Sort(s)
		sets = append(sets, slices.Compact(s))
		small := make([]uint64, n) // dense: k = 0
		for i := range small {
			small[i] = uint64(i * 2)
		}
		sets = append(sets, small)
	}
	for _, set := range sets {
		b := appendSet(nil, set)
		got, err := decodeSet(nil, b)
		if err != nil || !slices.Equal(got, set) {
			t.Fatalf("decodeSet(appendSet(%d hashes)) = %d hashes, %v", len(set), len(got), err)
		}
		if len(set) >= 170 && set[1] != 2 {
			if per := float64(len(b)) / float64(len(set)); per > 7.6 {
				t.Errorf("%d uniform hashes take %.2f bytes a hash, want at most 7.6", len(set), per)
			}
		}
	}
}

func TestSetCodeCorrupt(t *testing.T) {
	good := appendSet(nil, []uint64{10, 1 << 40, 1 << 62})
	cases := map[string][]byte{
		"empty":     nil,
		"zero n":    {0, 3},
		"no k":      binary.AppendUvarint(nil, 3),
		"k 64":      {1, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"truncated": good[:len(good)-1],
		"trailing":  append(slices.Clone(good), 0),
		"too many":  append([]byte{200}, good[1:]...),
		"overflow":  {2, 63, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	}
	for name, b := range cases {
		if _, err := decodeSet(nil, b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: decodeSet = %v, want ErrCorrupt", name, err)
		}
	}
}

func FuzzSetCode(f *testing.F) {
	f.Add(appendSet(nil, []uint64{1, 2, 3}))
	f.Add(appendSet(nil, []uint64{0, 1 << 63, ^uint64(0)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		set, err := decodeSet(nil, b)
		if err != nil {
			return
		}
		for i := 1; i < len(set); i++ {
			if set[i] <= set[i-1] {
				t.Fatalf("decoded set not ascending at %d", i)
			}
		}
		// Every decodable value is the one code of its set.
		if again := appendSet(nil, set); !slices.Equal(again, b) {
			t.Fatalf("set of %d hashes decoded from %x codes as %x", len(set), b, again)
		}
	})
}

// BenchmarkSetCode: coding and decoding the set of a 1 KB document (170
// uniform hashes).
func BenchmarkSetCode(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	set := make([]uint64, 170)
	for i := range set {
		set[i] = r.Uint64()
	}
	slices.Sort(set)
	code := appendSet(nil, set)
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(8 * int64(len(set)))
		var dst []byte
		for b.Loop() {
			dst = appendSet(dst[:0], set)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(8 * int64(len(set)))
		var dst []uint64
		for b.Loop() {
			dst, _ = decodeSet(dst, code)
		}
	})
}

// decodeSetReference is decodeSet without its fast path: every hash
// through the bit reader.
func decodeSetReference(dst []uint64, src []byte) ([]uint64, error) {
	dst = dst[:0]
	n, w := binary.Uvarint(src)
	if w <= 0 || w != len(binary.AppendUvarint(nil, n)) || n == 0 || len(src) < w+1 {
		return dst, fmt.Errorf("%w: shingle set length", ErrCorrupt)
	}
	k := uint(src[w])
	src = src[w+1:]
	if k > 63 || n > uint64(len(src))*8/(uint64(k)+1) {
		return dst, fmt.Errorf("%w: shingle set of %d hashes, k %d, in %d bytes", ErrCorrupt, n, k, len(src))
	}
	r := bitReader{src: src}
	prev := uint64(0)
	for i := range n {
		q, ok := r.ones()
		if !ok {
			return dst, fmt.Errorf("%w: shingle set truncated at hash %d of %d", ErrCorrupt, i, n)
		}
		low, ok := r.get(k)
		if !ok {
			return dst, fmt.Errorf("%w: shingle set truncated at hash %d of %d", ErrCorrupt, i, n)
		}
		if q > ^uint64(0)>>k {
			return dst, fmt.Errorf("%w: shingle set hash %d of %d overflows", ErrCorrupt, i, n)
		}
		g := q<<k | low
		if i > 0 {
			if g == ^uint64(0) {
				return dst, fmt.Errorf("%w: shingle set hash %d of %d overflows", ErrCorrupt, i, n)
			}
			g++
		}
		if g > ^prev {
			return dst, fmt.Errorf("%w: shingle set hash %d of %d overflows", ErrCorrupt, i, n)
		}
		prev += g
		dst = append(dst, prev)
	}
	if riceParam(prev, int(n)) != k {
		return dst, fmt.Errorf("%w: shingle set coded with k %d, want %d", ErrCorrupt, k, riceParam(prev, int(n)))
	}
	if !r.done() {
		return dst, fmt.Errorf("%w: shingle set: trailing bits", ErrCorrupt)
	}
	return dst, nil
}

// TestDecodeSetFastPath: decodeSet (a hash a 64-bit window while it
// fits, then the bit reader) decodes what the bit reader alone decodes,
// and refuses with the same error what it refuses: sets of 1 to 3,000
// hashes, uniform or clustered (long runs of the unary part, which leave
// the window), their codes truncated, extended, or with a bit flipped.
func TestDecodeSetFastPath(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	check := func(code []byte) {
		t.Helper()
		got, gerr := decodeSet(nil, code)
		want, werr := decodeSetReference(nil, code)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || gerr == nil && !slices.Equal(got, want) {
			t.Fatalf("code %x: decodeSet = %d hashes, %v; the bit reader %d, %v", code, len(got), gerr, len(want), werr)
		}
	}
	for range 400 {
		n := 1 + r.IntN(3000)
		if r.IntN(2) == 0 {
			n = 1 + r.IntN(20)
		}
		set := make([]uint64, n)
		for i := range set {
			set[i] = r.Uint64()
			if r.IntN(3) == 0 {
				set[i] >>= r.IntN(64) // clustered near 0: long gaps later
			}
		}
		slices.Sort(set)
		set = slices.Compact(set)
		code := appendSet(nil, set)
		if got, err := decodeSet(nil, code); err != nil || !slices.Equal(got, set) {
			t.Fatalf("set of %d hashes: decodeSet = %d hashes, %v", len(set), len(got), err)
		}
		check(code)
		check(code[:r.IntN(len(code))])
		check(append(slices.Clone(code), byte(r.IntN(256))))
		for range 4 {
			bad := slices.Clone(code)
			bad[r.IntN(len(bad))] ^= 1 << r.IntN(8)
			check(bad)
		}
	}
}
