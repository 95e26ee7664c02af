package simhash

import (
	"encoding/binary"
	"slices"
	"testing"
)

// FuzzIndex is a differential test: fingerprints decoded from the input,
// AllPairs and the Index against a linear scan, for the distance and block
// count the input chooses.
func FuzzIndex(f *testing.F) {
	f.Add([]byte{3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 9})
	f.Add([]byte{8, 12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		k := int(data[0] % 10)
		blocks := int(data[1] % 14)
		if blocks != 0 && (blocks <= k || binomial(blocks, k) > DefaultMaxTables) {
			blocks = 0
		}
		data = data[2:]
		var fps []Fingerprint
		for len(data) >= 8 && len(fps) < 200 {
			fp := Fingerprint{Lo: binary.LittleEndian.Uint64(data)}
			data = data[8:]
			fps = append(fps, fp)
			// Near copies make pairs likely.
			fps = append(fps, Fingerprint{Lo: fp.Lo ^ 1<<(fp.Lo%64) ^ 1<<(fp.Lo>>8%64)})
		}
		opts := DesignOptions{Blocks: blocks, N: len(fps)}
		want := linearPairs(fps, k)
		var got []pair
		if _, err := AllPairs(fps, 64, k, opts, func(i, j, d int) { got = append(got, pair{i, j, d}) }); err != nil {
			t.Fatal(err)
		}
		sortPairs(got)
		if !slices.Equal(got, want) {
			t.Fatalf("k=%d blocks=%d: AllPairs %v, linear scan %v", k, blocks, got, want)
		}
		x, err := NewIndex(64, k, opts)
		if err != nil {
			t.Fatal(err)
		}
		var fromIndex []pair
		for i, fp := range fps {
			for _, m := range x.Query(fp, nil) {
				fromIndex = append(fromIndex, pair{m.ID, i, m.Distance})
			}
			if err := x.Insert(i, fp); err != nil {
				t.Fatal(err)
			}
		}
		sortPairs(fromIndex)
		if !slices.Equal(fromIndex, want) {
			t.Fatalf("k=%d blocks=%d: Index %v, linear scan %v", k, blocks, fromIndex, want)
		}
	})
}

// FuzzParseHex checks that ParseHex never panics and round-trips.
func FuzzParseHex(f *testing.F) {
	for _, s := range []string{"0", "ffffffffffffffff", "0123456789ABCDEF0123456789abcdef", "xyz", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fp, n, err := ParseHex(s)
		if err != nil {
			return
		}
		if back := string(fp.AppendHex(nil, n)); len(back) != len(s) {
			t.Fatalf("ParseHex(%q) then AppendHex = %q", s, back)
		}
		fp2, n2, err := ParseHex(string(fp.AppendHex(nil, n)))
		if err != nil || fp2 != fp || n2 != n {
			t.Fatalf("round trip of %q: %v %v %v", s, fp2, n2, err)
		}
	})
}
