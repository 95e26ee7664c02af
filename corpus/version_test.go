package corpus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVersionRewritten: a file written again with the same size (one
// letter changed) is refused by a reader opened with the Version an
// earlier reader found (InputVersion), read whole or from a Position, on
// S3 (its ETag), GCS (its generation) and a local disk (its modification
// time), with an error naming the file and what changed. Before, only a
// Position's size was checked: a same-size rewrite was read as if it were
// the file planned, and a file read whole was not checked at all.
func TestVersionRewritten(t *testing.T) {
	data := positionLines(false)
	changed := []byte(strings.Replace(string(data), "document 1 ", "document 9 ", 1))
	if len(changed) != len(data) || string(changed) == string(data) {
		t.Fatal("want a same-size change")
	}
	stores := []struct {
		name, what string
		loc        func(t *testing.T) string
		put        func(t *testing.T, name string, data []byte, first bool)
	}{
		{"local", "modification time", func(t *testing.T) string { return t.TempDir() }, func(t *testing.T, name string, data []byte, first bool) {
			if err := os.WriteFile(name, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if first {
				// An hour ago: the rewrite below, within the same clock
				// tick, would otherwise keep the time.
				old := time.Now().Add(-time.Hour)
				if err := os.Chtimes(name, old, old); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for _, s := range urlStores {
		what := map[string]string{"s3": "ETag", "gcs": "generation"}[s.name]
		stores = append(stores, struct {
			name, what string
			loc        func(t *testing.T) string
			put        func(t *testing.T, name string, data []byte, first bool)
		}{s.name, what, s.loc, func(t *testing.T, name string, data []byte, _ bool) { putURL(t, name, data) }})
	}
	for _, store := range stores {
		t.Run(store.name, func(t *testing.T) {
			name := store.loc(t) + "/docs.jsonl"
			if !strings.Contains(name, "://") {
				name = filepath.Join(strings.TrimSuffix(name, "/docs.jsonl"), "docs.jsonl")
			}
			store.put(t, name, data, true)
			r, err := Open(name, Options{MaxDocBytes: 120})
			if err != nil {
				t.Fatal(err)
			}
			v, ok := InputVersion(r)
			r.Close()
			if !ok || v.Size != int64(len(data)) {
				t.Fatalf("InputVersion %+v, %v: want one of %d bytes", v, ok, len(data))
			}
			_, ps, _ := events(t, name, Options{MaxDocBytes: 120})
			if len(ps) < 2 {
				t.Fatalf("%d positions", len(ps))
			}
			p := ps[len(ps)/2]
			// Unchanged, the file is read, whole and from the position.
			for _, opts := range []Options{{MaxDocBytes: 120, Version: v}, {MaxDocBytes: 120, Version: v, Start: p}} {
				if ev, _, _ := events(t, name, opts); len(ev) == 0 || strings.HasPrefix(ev[len(ev)-1], "err ") {
					t.Fatalf("read with %+v: %q", opts, ev)
				}
			}
			store.put(t, name, changed, false)
			for _, opts := range []Options{{MaxDocBytes: 120, Version: v}, {MaxDocBytes: 120, Version: v, Start: p}} {
				_, err := Open(name, opts)
				if err == nil || !strings.Contains(err.Error(), name+": its "+store.what+" is ") || !strings.Contains(err.Error(), "written again") ||
					!strings.Contains(err.Error(), "a staged job's input must not change until the job is done") {
					t.Errorf("open of a rewritten file (start %+v): %v, want an error naming it and its %s", opts.Start, err, store.what)
				}
			}
		})
	}
}
