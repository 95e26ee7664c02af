package staged

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// packOf writes sections as a pack and returns its bytes.
func packOf(t testing.TB, sections [][]byte) []byte {
	var buf bytes.Buffer
	p := newPackWriter(&buf, len(sections))
	for k, s := range sections {
		p.section(k)
		if _, err := p.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.finish(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestParsePackIndex: the index of a written pack gives back each
// section's place, length and CRC32C; an index whose section lengths
// overflow past the sections' end is refused, CRC32C or not.
func TestParsePackIndex(t *testing.T) {
	sections := [][]byte{[]byte("first"), nil, []byte("third section"), {}, []byte("x")}
	b := packOf(t, sections)
	n := len(sections)
	tail := b[len(b)-int(packIndexSize(n)):]
	for first := range n {
		for k := 0; first+k <= n; k++ {
			secs, err := parsePackIndex(tail, int64(len(b)), n, first, k)
			if err != nil {
				t.Fatalf("sections %d+%d: %v", first, k, err)
			}
			if len(secs) != k {
				t.Fatalf("sections %d+%d: %d returned", first, k, len(secs))
			}
			for x, s := range secs {
				want := sections[first+x]
				if got := b[s.off : s.off+s.n]; !bytes.Equal(got, want) || s.crc != crc32.Checksum(want, castagnoli) {
					t.Errorf("section %d: %q (crc %08x), want %q", first+x, got, s.crc, want)
				}
			}
		}
	}
	// Sections 1 and 2 claim 2^63-1 bytes each, which brings the sum
	// through int64 overflow back to byte 3, and section 3 the rest up
	// to the sections' end; the index's CRC32C is made right.
	bad := bytes.Clone(tail)
	end := int64(len(b)) - packIndexSize(n)
	for x, l := range []uint64{5, 1<<63 - 1, 1<<63 - 1, uint64(end - 3), 0} {
		binary.LittleEndian.PutUint64(bad[x*packEntrySize:], l)
	}
	fixPackCRC(bad)
	if secs, err := parsePackIndex(bad, int64(len(b)), n, 0, n); err == nil {
		t.Errorf("an overflowing index was taken: %+v", secs)
	}
}

// fixPackCRC sets the CRC32C of a pack's index b (its last bytes).
func fixPackCRC(b []byte) {
	if len(b) >= packTrailerLen {
		binary.LittleEndian.PutUint32(b[len(b)-12:], crc32.Checksum(b[:len(b)-12], castagnoli))
	}
}

// FuzzParsePackIndex: any index, its CRC32C made right or not, is refused
// or gives sections that lie within the pack's sections, one after the
// other; never a panic.
func FuzzParsePackIndex(f *testing.F) {
	f.Add(packOf(f, [][]byte{[]byte("a"), nil, []byte("bc")}), uint8(3), uint8(0), uint8(3), false)
	f.Add(packOf(f, [][]byte{nil}), uint8(1), uint8(0), uint8(1), true)
	f.Fuzz(func(t *testing.T, pack []byte, n, first, k uint8, fix bool) {
		size := int64(len(pack))
		isize := packIndexSize(int(n))
		tail := bytes.Clone(pack[max(0, len(pack)-int(isize)):])
		if fix {
			fixPackCRC(tail)
		}
		if int(first)+int(k) > int(n) {
			k = n - min(n, first)
		}
		secs, err := parsePackIndex(tail, size, int(n), int(first), int(k))
		if err != nil {
			return
		}
		end := size - isize
		prev := int64(-1)
		for _, s := range secs {
			if s.off < 0 || s.n < 0 || s.off+s.n > end || s.off < prev {
				t.Fatalf("section at %d of %d bytes in a pack whose sections end at %d", s.off, s.n, end)
			}
			prev = s.off + s.n
		}
	})
}
