package minhash

import (
	"bytes"
	"errors"
	"io"
	"math"
	"slices"
	"testing"
)

func TestEncodeRoundTrip(t *testing.T) {
	pairs := loadPairs(t)
	h, _ := New(Options{})
	for _, tc := range []struct {
		enc  Encoding
		bits int
	}{{Raw32, 0}, {Varint, 0}, {BBit, 1}, {BBit, 8}, {BBit, 13}, {BBit, 32}} {
		var total int
		var buf []byte
		for _, p := range pairs {
			sig := h.Sign(nil, p.a)
			var err error
			buf, err = AppendEncode(buf[:0], sig, tc.enc, tc.bits)
			if err != nil {
				t.Fatal(err)
			}
			total += len(buf)
			got, err := Decode(nil, buf, tc.enc, tc.bits, len(sig))
			if err != nil {
				t.Fatalf("%s/%d: Decode: %v", tc.enc, tc.bits, err)
			}
			want := sig
			if tc.enc == BBit && tc.bits < 32 {
				want = slices.Clone(sig)
				for i := range want {
					want[i] &= 1<<tc.bits - 1
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s/%d: round trip differs", tc.enc, tc.bits)
			}
		}
		t.Logf("%s b=%d: %.1f bytes per 128-slot signature (mean over %d docs)", tc.enc, tc.bits, float64(total)/float64(len(pairs)), len(pairs))
		want := map[Encoding]int{Raw32: 512, BBit: (128*tc.bits + 7) / 8}
		if w, ok := want[tc.enc]; ok && total != w*len(pairs) {
			t.Errorf("%s/%d: %d bytes, want %d", tc.enc, tc.bits, total, w*len(pairs))
		}
	}
}

// TestEstimateBBit checks b-bit minhash against the full estimate on real
// pairs: with b = 8 the mean absolute difference stays below 0.02.
func TestEstimateBBit(t *testing.T) {
	pairs := loadPairs(t)
	h, _ := New(Options{NumPerm: 256})
	var diff float64
	for _, p := range pairs {
		a, b := h.Sign(nil, p.a), h.Sign(nil, p.b)
		full, _ := Estimate(a, b)
		ea, _ := AppendEncode(nil, a, BBit, 8)
		eb, _ := AppendEncode(nil, b, BBit, 8)
		da, _ := Decode(nil, ea, BBit, 8, 256)
		db, _ := Decode(nil, eb, BBit, 8, 256)
		got, err := EstimateBBit(da, db, 8)
		if err != nil {
			t.Fatal(err)
		}
		diff += math.Abs(got - full)
	}
	if diff /= float64(len(pairs)); diff > 0.02 {
		t.Errorf("b-bit (8) estimate differs from the full one by %.4f on average, want <= 0.02", diff)
	}
	if _, err := EstimateBBit(Signature{1}, Signature{1}, 0); err == nil {
		t.Error("EstimateBBit with b = 0 succeeded")
	}
}

func TestWriterReader(t *testing.T) {
	pairs := loadPairs(t)
	h, _ := New(Options{Family: MultiplyShift, Seed: 99})
	for _, enc := range []Encoding{Raw32, Varint, BBit} {
		var file bytes.Buffer
		w, err := NewWriter(&file, h.Header(enc, 16))
		if err != nil {
			t.Fatal(err)
		}
		var sigs []Signature
		for _, p := range pairs {
			s := h.Sign(nil, p.b)
			sigs = append(sigs, s)
			if err := w.Write(s); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Write(Signature{1, 2}); !errors.Is(err, ErrLength) {
			t.Errorf("Write of a short signature: %v, want ErrLength", err)
		}
		data := file.Bytes()
		t.Logf("%s: %d bytes for %d signatures (%.1f each, header %d)", enc, len(data), len(sigs), float64(len(data)-headerSize)/float64(len(sigs)), headerSize)
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Header().Check(h); err != nil {
			t.Errorf("Check against its own hasher: %v", err)
		}
		other, _ := New(Options{Family: MultiplyShift, Seed: 100})
		if err := r.Header().Check(other); !errors.Is(err, ErrMismatch) {
			t.Errorf("Check against another seed: %v, want ErrMismatch", err)
		}
		other, _ = New(Options{Family: MultiplyShift, Seed: 99, NumPerm: 64})
		if err := r.Header().Check(other); !errors.Is(err, ErrMismatch) {
			t.Errorf("Check against another K: %v, want ErrMismatch", err)
		}
		i := 0
		for r.Next() {
			want := sigs[i]
			if enc == BBit {
				want = slices.Clone(want)
				for j := range want {
					want[j] &= 0xFFFF
				}
			}
			if !slices.Equal(r.Signature(), want) {
				t.Fatalf("%s: record %d differs", enc, i)
			}
			i++
		}
		if r.Err() != nil || i != len(sigs) {
			t.Fatalf("%s: read %d of %d, err %v", enc, i, len(sigs), r.Err())
		}

		// Corruptions.
		for name, mutate := range map[string]func([]byte) []byte{
			"version":   func(b []byte) []byte { b[4] = FormatVersion + 1; return b },
			"magic":     func(b []byte) []byte { b[0] = 'X'; return b },
			"header":    func(b []byte) []byte { b[12] ^= 1; return b },
			"payload":   func(b []byte) []byte { b[headerSize+3] ^= 0x10; return b },
			"truncated": func(b []byte) []byte { return b[:len(b)-3] },
			"short":     func(b []byte) []byte { return b[:10] },
		} {
			b := mutate(slices.Clone(data))
			r, err := NewReader(bytes.NewReader(b))
			if err == nil {
				for r.Next() {
				}
				err = r.Err()
			}
			switch {
			case name == "version" && !errors.Is(err, ErrVersion):
				t.Errorf("%s/%s: %v, want ErrVersion", enc, name, err)
			case name != "version" && !errors.Is(err, ErrFormat):
				t.Errorf("%s/%s: %v, want ErrFormat", enc, name, err)
			}
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		src  []byte
		enc  Encoding
		bits int
		k    int
	}{
		{[]byte{1, 2, 3}, Raw32, 0, 1},
		{[]byte{0x80}, Varint, 0, 1},
		{[]byte{1, 2}, Varint, 0, 1},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x7f}, Varint, 0, 1}, // above 2^32
		{[]byte{1}, BBit, 4, 4},
		{nil, 9, 0, 1},
		{nil, Raw32, 0, 0},
		{nil, BBit, 33, 1},
	} {
		if _, err := Decode(nil, tc.src, tc.enc, tc.bits, tc.k); !errors.Is(err, ErrFormat) {
			t.Errorf("Decode(%v, %s, %d, %d) = %v, want ErrFormat", tc.src, tc.enc, tc.bits, tc.k, err)
		}
	}
}

// FuzzDecode: Decode never panics, and what it accepts re-encodes to the
// same bytes (the encodings are canonical, varint included).
func FuzzDecode(f *testing.F) {
	h, _ := New(Options{NumPerm: 8})
	sig := h.Sign(nil, []uint64{1, 2, 3})
	for _, enc := range []Encoding{Raw32, Varint, BBit} {
		b, _ := AppendEncode(nil, sig, enc, 5)
		f.Add(b, uint8(enc), uint8(5), uint8(8))
	}
	f.Fuzz(func(t *testing.T, src []byte, enc, bits, k uint8) {
		got, err := Decode(nil, src, Encoding(enc), int(bits), int(k))
		if err != nil {
			return
		}
		again, err := AppendEncode(nil, got, Encoding(enc), int(bits))
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if Encoding(enc) == Varint {
			// Non-minimal varints (0x80 0x00) decode but re-encode shorter.
			back, err := Decode(nil, again, Varint, 0, int(k))
			if err != nil || !slices.Equal(back, got) {
				t.Fatalf("varint round trip: %v", err)
			}
			return
		}
		if !bytes.Equal(again, src) && Encoding(enc) != BBit {
			t.Fatalf("re-encode differs: %x vs %x", again, src)
		}
	})
}

// FuzzReader: a Reader over arbitrary bytes never panics and stops with an
// error or at a clean end.
func FuzzReader(f *testing.F) {
	h, _ := New(Options{NumPerm: 4})
	for _, enc := range []Encoding{Raw32, Varint, BBit} {
		var b bytes.Buffer
		w, _ := NewWriter(&b, h.Header(enc, 3))
		w.Write(h.Sign(nil, []uint64{7}))
		w.Write(h.Sign(nil, []uint64{8, 9}))
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		n := 0
		for r.Next() {
			if len(r.Signature()) != r.Header().NumPerm {
				t.Fatalf("signature of %d slots, header says %d", len(r.Signature()), r.Header().NumPerm)
			}
			n++
		}
		if r.Err() == nil && n > len(data) {
			t.Fatal("more records than bytes")
		}
		_ = io.EOF
	})
}

func TestBottomEncoding(t *testing.T) {
	pairs := loadPairs(t)
	for _, s := range []int{16, 128} {
		b, _ := NewBottom(s, 0)
		total := 0
		for _, p := range pairs {
			sk := b.Sketch(nil, p.a)
			enc, err := AppendBottom(nil, sk)
			if err != nil {
				t.Fatal(err)
			}
			total += len(enc)
			got, err := DecodeBottom(nil, enc)
			if err != nil || !slices.Equal(got, sk) {
				t.Fatalf("bottom round trip: %v", err)
			}
		}
		t.Logf("bottom-%d delta/varint: %.1f bytes per sketch (raw: 8 per value)", s, float64(total)/float64(len(pairs)))
	}
	if _, err := AppendBottom(nil, []uint64{3, 3}); !errors.Is(err, ErrFormat) {
		t.Errorf("AppendBottom of a repeat: %v", err)
	}
	for _, bad := range [][]byte{nil, {2, 1, 0}, {1, 1, 9}, {1}, {2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}} {
		if _, err := DecodeBottom(nil, bad); !errors.Is(err, ErrFormat) {
			t.Errorf("DecodeBottom(%v) = %v, want ErrFormat", bad, err)
		}
	}
}

// FuzzDecodeBottom: never panics; accepted input re-encodes to a sketch
// that decodes to the same values.
func FuzzDecodeBottom(f *testing.F) {
	enc, _ := AppendBottom(nil, []uint64{1, 5, 1 << 40, math.MaxUint64})
	f.Add(enc)
	f.Fuzz(func(t *testing.T, src []byte) {
		got, err := DecodeBottom(nil, src)
		if err != nil {
			return
		}
		again, err := AppendBottom(nil, got)
		if err != nil {
			t.Fatalf("decoded sketch does not re-encode: %v", err)
		}
		back, err := DecodeBottom(nil, again)
		if err != nil || !slices.Equal(back, got) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// TestFamilyWireBytes pins the family byte of the file header: the
// constants were renumbered (OPH became the zero value), the bytes on disk
// were not.
func TestFamilyWireBytes(t *testing.T) {
	for f, want := range map[Family]byte{Permutation: 0, MultiplyShift: 1, OPH: 2} {
		h, err := New(Options{NumPerm: 4, Family: f})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := NewWriter(&buf, h.Header(Raw32, 0)); err != nil {
			t.Fatal(err)
		}
		if got := buf.Bytes()[6]; got != want {
			t.Errorf("%s: header family byte %d, want %d", f, got, want)
		}
		r, err := NewReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if r.Header().Family != f {
			t.Errorf("%s: read back as %s", f, r.Header().Family)
		}
	}
}
