package store

import (
	"bytes"
	"testing"

	"github.com/neardup/neardup/simhash"
)

// FuzzDecodeRecord feeds arbitrary bytes to the record decoder of both
// methods: it must return an error or a record that encodes back to the
// same bytes, never panic.
func FuzzDecodeRecord(f *testing.F) {
	mh := DefaultParams(MinHash)
	mh.NumPerm, mh.Bands, mh.Rows = 8, 4, 2
	mh, _ = mh.resolve()
	sh := DefaultParams(SimHash)
	sh128 := Params{Method: SimHash, Bits: 128}
	sh128, _ = sh128.resolve()
	f.Add(mh.appendRecord(nil, "doc-1", &Sketch{Sig: []uint32{1, 2, 3, 4, 5, 6, 7, 8}}, false, false))
	f.Add(mh.appendRecord(nil, "doc-2", &Sketch{Sig: []uint32{1, 2, 3, 4, 5, 6, 7, 8}, Set: []uint64{3, 1 << 60}}, true, false))
	f.Add(mh.appendRecord(nil, "doc-3", &Sketch{Set: []uint64{3, 1 << 60}}, true, true))
	f.Add(sh.appendRecord(nil, "x", &Sketch{FP: simhash.Fingerprint{Lo: 0xdeadbeef}, Empty: true}, false, false))
	f.Add(sh128.appendRecord(nil, "y", &Sketch{FP: simhash.Fingerprint{Hi: 3, Lo: 0xdeadbeef}}, false, false))
	f.Add([]byte{0, 0x80, 0x80, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range []*Params{&mh, &sh, &sh128} {
			var r record
			if err := p.decodeRecord(&r, b); err != nil {
				continue
			}
			sk, err := recordSketch(&r)
			if err != nil {
				continue
			}
			if p.Method == SimHash {
				sk.Sig = nil
			}
			if got := p.appendRecord(nil, string(r.id), &sk, r.hasSet, r.flags&flagBare != 0); !bytes.Equal(got, b) {
				// Non-minimal varints decode but re-encode shorter.
				if len(got) >= len(b) {
					t.Fatalf("%s: %x re-encodes as %x", p.Method, b, got)
				}
			}
		}
	})
}

// FuzzParams feeds arbitrary JSON to the parameters decoder: it must
// refuse it or accept parameters that validate and round-trip.
func FuzzParams(f *testing.F) {
	for _, m := range []Method{MinHash, SimHash} {
		b, _ := DefaultParams(m).MarshalJSON()
		f.Add(b)
	}
	f.Add([]byte(`{"method":"simhash","simhash":{"bits":64,"distance":3,"seed":1,"blocks":40}}`))
	f.Add([]byte(`{"method":"minhash"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Params
		if err := p.UnmarshalJSON(b); err != nil {
			return
		}
		out, err := p.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var q Params
		if err := q.UnmarshalJSON(out); err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		if err := p.Check(q); err != nil {
			t.Fatalf("round trip changed %s: %v", out, err)
		}
		if _, err := NewSketcher(p); err != nil {
			t.Fatalf("accepted params do not make a sketcher: %v", err)
		}
	})
}

// FuzzDecodeMeta covers the counters, version and fingerprint decoders.
func FuzzDecodeMeta(f *testing.F) {
	f.Add(counters{3, 5}.append(nil))
	f.Add(le32(1))
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, err := decodeCounters(b); err == nil && !bytes.Equal(c.append(nil), b) {
			t.Fatalf("counters %x round trip", b)
		}
		if v, err := decodeVersion(b); err == nil && !bytes.Equal(le32(v), b) {
			t.Fatalf("version %x round trip", b)
		}
		for _, n := range []int{1, 32, 64, 65, 128} {
			if fp, err := decodeFP(b, n); err == nil && !bytes.Equal(appendFP(nil, fp, n), b) {
				t.Fatalf("fingerprint %x round trip at %d bits", b, n)
			}
		}
	})
}
