package store

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/neardup/neardup/internal/redistest"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/text"
)

func normSpec(m sketch.Method, html, all bool) sketch.Spec {
	n := text.DefaultOptions()
	n.HTML, n.HTMLAll = html, all
	return sketch.Spec{Method: m, Normalize: &n}
}

// TestExtractionRecorded: an index of pages' main content records
// text.MainVersion (or Options.Extraction) at Create and reads it back on
// Open, writable and read-only; other indexes, and one created with
// NoExtraction (as every index made before versions were), record none.
func TestExtractionRecorded(t *testing.T) {
	for _, c := range []struct {
		name string
		sp   sketch.Spec
		ext  int
		want int
	}{
		{"html", normSpec(sketch.MinHash, true, false), 0, text.MainVersion},
		{"html simhash", normSpec(sketch.SimHash, true, false), 0, text.MainVersion},
		{"html given", normSpec(sketch.MinHash, true, false), 7, 7},
		{"html none", normSpec(sketch.MinHash, true, false), NoExtraction, 0},
		{"html-all", normSpec(sketch.MinHash, true, true), 0, 0},
		{"plain", normSpec(sketch.MinHash, false, false), 7, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ix")
			s, err := Create(dir, c.sp, Options{Extraction: c.ext})
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Extraction(); got != c.want {
				t.Errorf("after Create: Extraction() = %d, want %d", got, c.want)
			}
			s.Close()
			for _, ro := range []bool{false, true} {
				s, err := Open(dir, Options{ReadOnly: ro})
				if err != nil {
					t.Fatal(err)
				}
				if got := s.Extraction(); got != c.want {
					t.Errorf("Open (read-only %v): Extraction() = %d, want %d", ro, got, c.want)
				}
				if MainContent(s.Spec()) != (c.name != "html-all" && c.name != "plain") {
					t.Errorf("MainContent = %v", MainContent(s.Spec()))
				}
				s.Close()
			}
		})
	}
	if _, err := Create(filepath.Join(t.TempDir(), "ix"), normSpec(sketch.MinHash, true, false), Options{Extraction: -2}); !errors.Is(err, ErrParams) {
		t.Errorf("Extraction -2: %v, want ErrParams", err)
	}
}

// TestExtractionCorrupt: a malformed 00 "extraction" value is refused as
// corrupt.
func TestExtractionCorrupt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	s, err := Create(dir, normSpec(sketch.MinHash, true, false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Set(keyExtraction, []byte{0, 0, 0, 0}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		if err == nil {
			s.Close()
		}
		t.Errorf("Open of extraction version 0: %v, want ErrCorrupt", err)
	}
}

// TestExtractionRedis: a Redis index records the version in its meta hash
// as the embedded store does.
func TestExtractionRedis(t *testing.T) {
	srv := redistest.Server(t)
	for _, c := range []struct {
		name string
		sp   sketch.Spec
		ext  int
		want int
	}{
		{"html", normSpec(sketch.MinHash, true, false), 0, text.MainVersion},
		{"none", normSpec(sketch.MinHash, true, false), NoExtraction, 0},
		{"plain", normSpec(sketch.MinHash, false, false), 0, 0},
	} {
		url := srv.URL("ext-" + c.name)
		r, err := CreateRedis(url, c.sp, Options{Extraction: c.ext})
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		r, err = OpenRedis(url, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Extraction(); got != c.want {
			t.Errorf("%s: Extraction() = %d, want %d", c.name, got, c.want)
		}
		r.Close()
	}
}
