package dedup

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/neardup/neardup/sketch"
)

func writeTestCheckpoint(t testing.TB, path string, docs []rawDoc, sketches []DocSketch) {
	w, err := newCkptWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range docs {
		if err := w.add(exact{sketch.Default(sketch.Exact)}, &docs[i], sketches[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.commit(2, 99); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.ck")
	docs := []rawDoc{{id: "a", n: 5}, {id: "", n: 0}, {id: "ünï", n: 1 << 20}}
	sk := []DocSketch{contentID(xxh3.Hash128([]byte("a")).Bytes()), nil, contentID(xxh3.Hash128([]byte("c")).Bytes())}
	writeTestCheckpoint(t, path, docs, sk)
	var i int
	tr, err := readCheckpoint(path, exact{sketch.Default(sketch.Exact)}, func(id string, n int, s DocSketch) error {
		if id != docs[i].id || n != docs[i].n || s != sk[i] {
			t.Errorf("record %d = %q %d %v, want %q %d %v", i, id, n, s, docs[i].id, docs[i].n, sk[i])
		}
		i++
		return nil
	})
	if err != nil || i != 3 || tr.count != 3 || tr.skipped != 2 || tr.inputBytes != 99 {
		t.Fatalf("readCheckpoint: %d records, trailer %+v, err %v", i, tr, err)
	}
	if _, err := readCheckpoint(filepath.Join(t.TempDir(), "none"), exact{sketch.Default(sketch.Exact)}, nil); !os.IsNotExist(err) {
		t.Errorf("missing checkpoint: err %v, want not-exist", err)
	}
}

func FuzzCheckpoint(f *testing.F) {
	path := filepath.Join(f.TempDir(), "seed.ck")
	writeTestCheckpoint(f, path, []rawDoc{{id: "x", n: 3}}, []DocSketch{contentID(xxh3.Hash128([]byte("x")).Bytes())})
	seed, _ := os.ReadFile(path)
	f.Add(seed)
	f.Add([]byte("NDCK\x01E\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.ck")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fed := 0
		tr, err := readCheckpoint(p, exact{sketch.Default(sketch.Exact)}, func(string, int, DocSketch) error { fed++; return nil })
		if err != nil && fed > 0 {
			t.Fatalf("fed %d records from a checkpoint that failed: %v", fed, err)
		}
		if err == nil && uint64(fed) != tr.count {
			t.Fatalf("fed %d records, trailer says %d", fed, tr.count)
		}
	})
}

// TestResumeEveryCodecMethod: --resume's state directory is named from the
// resolved Options (a valid sketch.Spec, the simhash threshold of Verify
// beside it), so that every method with a codec can checkpoint.
func TestResumeEveryCodecMethod(t *testing.T) {
	dir := t.TempDir()
	path := writeTexts(t, dir, []string{"one two three four five six", "one two three four five six", "seven eight nine ten"}, "d%d")
	for _, cfg := range []Options{
		{Method: "simhash", Verify: true, VerifyThreshold: 0.5, Spec: sketch.Spec{Threshold: 0.5}},
		{Method: "minhash"},
		{Method: "exact"},
		{Method: "ksentence"},
	} {
		st, err := Run(context.Background(), cfg, Input{Files: []string{path}, Resume: true}, Outputs{TmpDir: dir})
		if err != nil {
			t.Fatalf("%s: %v", cfg.Method, err)
		}
		if st.Removed != 1 {
			t.Errorf("%s: %d removed, want 1", cfg.Method, st.Removed)
		}
	}
}
