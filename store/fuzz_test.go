package store

import (
	"bytes"
	"slices"
	"testing"

	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/sketch"
)

// FuzzDecodeRecord feeds arbitrary bytes to the record decoder of both
// methods: it must return an error or a record that encodes back to the
// same bytes (an empty record's sketch as zeros), never panic.
func FuzzDecodeRecord(f *testing.F) {
	mh := sketch.Default(sketch.MinHash)
	mh.MinHash.NumPerm, mh.MinHash.Bands, mh.MinHash.Rows = 8, 4, 2
	mhs, _ := resolveSpec(mh)
	sh128s, _ := resolveSpec(sketch.Spec{Method: sketch.SimHash, SimHash: sketch.SimHashSpec{Bits: 128}})
	sh := sketch.Default(sketch.SimHash)
	mhc, shc, sh128c := codecOf(&mhs), codecOf(&sh), codecOf(&sh128s)
	f.Add(mhc.appendRecord(nil, "doc-1", &sketch.Sketch{Sig: []uint32{1, 2, 3, 4, 5, 6, 7, 8}}, false, false))
	f.Add(mhc.appendRecord(nil, "doc-2", &sketch.Sketch{Sig: []uint32{1, 2, 3, 4, 5, 6, 7, 8}, Set: []uint64{3, 1 << 60}}, true, false))
	f.Add(mhc.appendRecord(nil, "doc-3", &sketch.Sketch{Set: []uint64{3, 1 << 60}}, true, true))
	f.Add(shc.appendRecord(nil, "x", &sketch.Sketch{FP: simhash.Fingerprint{Lo: 0xdeadbeef}, Empty: true}, false, false))
	f.Add(sh128c.appendRecord(nil, "y", &sketch.Sketch{FP: simhash.Fingerprint{Hi: 3, Lo: 0xdeadbeef}}, false, false))
	f.Add([]byte{0, 0x80, 0x80, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range []*recordCodec{&mhc, &shc, &sh128c} {
			var r record
			if err := p.decodeRecord(&r, b); err != nil {
				continue
			}
			sk, err := recordSketch(&r)
			if err != nil {
				continue
			}
			if !p.minHash {
				sk.Sig = nil
			}
			want := b
			if sk.Empty {
				// An empty record's sketch is not read: it re-encodes as
				// zeros (the record's tail: an empty record has no set).
				want = slices.Clone(b)
				clear(want[len(want)-p.sketchBytes():])
			}
			if got := p.appendRecord(nil, string(r.id), &sk, r.hasSet, r.flags&flagBare != 0); !bytes.Equal(got, want) {
				// Non-minimal varints decode but re-encode shorter.
				if len(got) >= len(b) {
					t.Fatalf("%+v: %x re-encodes as %x", *p, b, got)
				}
			}
		}
	})
}

// FuzzSpec feeds arbitrary JSON to the decoder of an index's stored Spec:
// it must refuse it or accept a Spec that validates and round-trips.
func FuzzSpec(f *testing.F) {
	for _, m := range []sketch.Method{sketch.MinHash, sketch.SimHash} {
		b, _ := sketch.Default(m).MarshalJSON()
		f.Add(b)
	}
	f.Add([]byte(`{"method":"simhash","simhash":{"bits":64,"distance":3,"seed":1,"blocks":40}}`))
	f.Add([]byte(`{"method":"minhash"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeSpec(b)
		if err != nil {
			return
		}
		out, err := p.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		q, err := decodeSpec(out)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		if err := CheckSpec(p, q); err != nil {
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
