package dedup

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/neardup/neardup/corpus"
)

// TestStagedSketchDamage: a damaged or cut staged sketch is an error,
// never a panic, and an intact one decodes to what was encoded.
func TestStagedSketchDamage(t *testing.T) {
	docs := []corpus.Document{{ID: "a", Text: "the quick brown fox jumps over the lazy dog again and again"}, {ID: "b", Text: "   "}}
	var got []SignedDoc
	open := func(name string, opts corpus.Options) (corpus.Reader, error) {
		return Docs(name, docs).Open(opts)
	}
	_, err := SketchRanges(context.Background(), Options{Workers: 1}, Input{}, open, []DocRange{{File: "mem", Lo: 0, Hi: 2}}, func(d *SignedDoc) error {
		got = append(got, SignedDoc{ID: d.ID, Len: d.Len, Sketch: append([]byte(nil), d.Sketch...), Keys: append([]uint64(nil), d.Keys...)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0].Sketch) == 0 || len(got[1].Sketch) != 0 || len(got[0].Keys) == 0 {
		t.Fatalf("signed %+v", got)
	}
	_, st, err := stagedOf(Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := st.(minhashStager).m
	b := got[0].Sketch
	var sk minhashSketch
	if _, err := m.decodeStaged(b, &sk, nil); err != nil {
		t.Fatal(err)
	}
	if again := m.appendStaged(nil, &sk, sk.keys); !bytes.Equal(again, b) {
		t.Errorf("decoded and encoded again: %d bytes, not the %d encoded", len(again), len(b))
	}
	if !slices.Equal(sk.keys, got[0].Keys) {
		t.Errorf("decoded keys %x, signed %x", sk.keys, got[0].Keys)
	}
	for n := range len(b) {
		if _, err := m.decodeStaged(b[:n], &sk, nil); err == nil {
			t.Errorf("cut at %d of %d: no error", n, len(b))
		}
	}
	for k := range len(b) {
		c := append([]byte(nil), b...)
		c[k] ^= 0xff
		m.decodeStaged(c, &sk, nil) // must not panic
	}
	res, err := JoinComponents(context.Background(), Options{}, []JoinDoc{{Doc: 0, ID: "a", Sketch: b}, {Doc: 1, ID: "a2", Sketch: b}}, JoinOptions{Workers: 1, TmpDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 1 || res.Removed[0] != (Removal{Doc: 1, Cluster: "a"}) || res.Pairs != 1 {
		t.Errorf("join of two copies: %+v", res)
	}
}
