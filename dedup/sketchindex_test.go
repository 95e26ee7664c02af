package dedup

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/sketch"
)

// sketchIndex is a SketchIndex of a resolved spec over some texts: a
// document is found when its sketch (MinHash signature or SimHash
// fingerprint, not Empty) equals an indexed text's, whichever path the
// lookup takes; it counts the lookups by each path (by normalised text,
// those of a text that is not empty).
type sketchIndex struct {
	spec             sketch.Spec
	ids              map[string]string // sketchKey -> indexed id
	text, norm, skch *atomic.Int64
}

func sketchKey(s *sketch.Sketch) (string, bool) {
	if s.Empty {
		return "", false
	}
	return fmt.Sprint(s.Sig, s.FP), true
}

func newSketchIndex(t *testing.T, spec sketch.Spec, texts map[string]string) sketchIndex {
	t.Helper()
	x := sketchIndex{spec: spec, ids: map[string]string{}, text: new(atomic.Int64), norm: new(atomic.Int64), skch: new(atomic.Int64)}
	k, err := spec.NewSketcher()
	if err != nil {
		t.Fatal(err)
	}
	for id, txt := range texts {
		var s sketch.Sketch
		k.Sketch(&s, txt)
		if key, ok := sketchKey(&s); ok {
			x.ids[key] = id
		}
	}
	return x
}

func (x sketchIndex) find(s *sketch.Sketch) (string, float64, bool, error) {
	key, ok := sketchKey(s)
	if !ok {
		return "", 0, false, nil
	}
	id, ok := x.ids[key]
	return id, 0.9, ok, nil
}

func (x sketchIndex) MemoryBytes() int64 { return 0 }
func (x sketchIndex) Spec() sketch.Spec  { return x.spec }

func (x sketchIndex) NewChecker() (func(string) (string, float64, bool, error), error) {
	k, err := x.spec.NewSketcher()
	var s sketch.Sketch
	return func(txt string) (string, float64, bool, error) {
		x.text.Add(1)
		k.Sketch(&s, txt)
		return x.find(&s)
	}, err
}

func (x sketchIndex) NewNormalizedChecker() (func([]byte) (string, float64, bool, error), error) {
	k, err := x.spec.NewSketcher()
	var s sketch.Sketch
	return func(norm []byte) (string, float64, bool, error) {
		if len(norm) > 0 { // an empty text is never sketched
			x.norm.Add(1)
		}
		k.SketchNormalized(&s, norm)
		return x.find(&s)
	}, err
}

func (x sketchIndex) NewSketchChecker() (func(*sketch.Sketch) (string, float64, bool, error), error) {
	return func(s *sketch.Sketch) (string, float64, bool, error) {
		x.skch.Add(1)
		if x.spec.Method == sketch.SimHash && s.Set != nil {
			return "", 0, false, fmt.Errorf("a SimHash sketch with a shingle set: an index keeps none")
		}
		return x.find(s)
	}, nil
}

// byText hides sketchIndex's Spec and its other checkers: Run looks
// every document up by its raw text.
type byText struct{ x sketchIndex }

func (b byText) NewChecker() (func(string) (string, float64, bool, error), error) {
	return b.x.NewChecker()
}
func (b byText) MemoryBytes() int64 { return 0 }

// TestSketchIndexPaths: a minhash or simhash run against a SketchIndex of
// its own specification hands it the sketch it made for every document
// it sketches, in memory, spilled, with --verify, in the cascade (whose
// copies, not sketched, go by their normalised text) and in a staged sign
// task (SketchRanges); the outputs and hits are those of the raw text's
// lookups.
func TestSketchIndexPaths(t *testing.T) {
	texts := scaleCorpus(4)
	indexed := map[string]string{}
	for k := 3; k < len(texts); k += 17 {
		indexed[fmt.Sprintf("old-%d", k)] = texts[k]
	}
	dir := t.TempDir()
	in := writeTexts(t, dir, texts, "d%d")
	for _, v := range []struct {
		name  string
		cfg   Options
		spill bool
	}{
		{"minhash", Options{Method: "minhash"}, false},
		{"minhash spill", Options{Method: "minhash", Spill: true, Memory: 1 << 20}, true},
		{"minhash cascade", Options{Method: "minhash", Cascade: true}, false},
		{"simhash", Options{Method: "simhash"}, false},
		{"simhash verify", Options{Method: "simhash", Verify: true}, false},
		{"simhash spill", Options{Method: "simhash", Spill: true, Memory: 1 << 20}, true},
		{"simhash cascade", Options{Method: "simhash", Cascade: true}, false},
		{"simhash cascade spill", Options{Method: "simhash", Cascade: true, Spill: true, Memory: 1 << 20}, true},
	} {
		cfg := v.cfg
		cfg.Workers = 2
		spec, err := cfg.ResolveSpec()
		if err != nil {
			t.Fatal(err)
		}
		ix := newSketchIndex(t, spec, indexed)
		want := runInput(t, cfg, v.spill, Input{Files: []string{in}, AgainstIndexes: []Index{byText{ix}}})
		if !bytes.Contains(want[1], []byte(`"index":true`)) {
			t.Fatalf("%s: no index hit: the comparison would test nothing", v.name)
		}
		ix.text.Store(0)
		got := runInput(t, cfg, v.spill, Input{Files: []string{in}, AgainstIndexes: []Index{ix}})
		for k, what := range outputNames {
			if !bytes.Equal(got[k], want[k]) {
				t.Errorf("%s: %s differ from the raw text's lookups", v.name, what)
			}
		}
		if ix.text.Load() != 0 || ix.skch.Load() == 0 || cfg.Cascade != (ix.norm.Load() > 0) {
			t.Errorf("%s: %d lookups by raw text, %d by normalised text, %d by sketch; want the sketch's (the normalised text's for a cascade's copies only)",
				v.name, ix.text.Load(), ix.norm.Load(), ix.skch.Load())
		}
		if cfg.Cascade || v.spill {
			continue // SketchRanges: the others' configurations
		}
		hits := func(x Index) (map[string]string, int64) {
			t.Helper()
			got := map[string]string{}
			st, err := SketchRanges(context.Background(), cfg, Input{AgainstIndexes: []Index{x}}, corpus.Open, []DocRange{{File: in, Lo: 0, Hi: -1}}, func(d *SignedDoc) error {
				if d.Index != "" {
					got[d.ID] = d.Index
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return got, int64(st.IndexMatches)
		}
		ix.text.Store(0)
		ix.norm.Store(0)
		ix.skch.Store(0)
		wantHits, _ := hits(byText{ix})
		ix.text.Store(0)
		gotHits, n := hits(ix)
		if fmt.Sprint(gotHits) != fmt.Sprint(wantHits) || n != int64(len(wantHits)) {
			t.Errorf("%s: SketchRanges found %d documents (stats %d), the raw text's lookups %d: %v", v.name, len(gotHits), n, len(wantHits), gotHits)
		}
		if ix.text.Load() != 0 || ix.norm.Load() != 0 || ix.skch.Load() == 0 {
			t.Errorf("%s: SketchRanges: %d lookups by raw text, %d by normalised text, %d by sketch; want the sketch's",
				v.name, ix.text.Load(), ix.norm.Load(), ix.skch.Load())
		}
	}
}
