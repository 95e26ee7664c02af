package store

import (
	"encoding/binary"
	"errors"
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
