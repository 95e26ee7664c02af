package dedup

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/shingle"
)

// bloomTexts makes n texts, every fourth a copy of an earlier one.
func bloomTexts(n int) []string {
	texts := make([]string, n)
	for i := range texts {
		if i%4 == 3 {
			texts[i] = texts[(i*7919)%n%i]
		} else {
			texts[i] = fmt.Sprintf("document number %d with some text", i)
		}
	}
	return texts
}

// TestBloomFinderNamed: while the key map holds every key, each copy is
// paired with the first document of its text (so clusters name it) and
// the filter's false positives are caught: the result is exact.
func TestBloomFinderNamed(t *testing.T) {
	const n = 20000
	texts := bloomTexts(n)
	cfg := Options{}
	cfg.Method, cfg.BloomN, cfg.BloomFPP = "bloom", n, 0.01
	m, err := NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, pairs := runMethod(t, m, texts, nil)
	first := map[string]int{}
	var want []Pair
	for i, s := range texts {
		if j, ok := first[s]; ok {
			want = append(want, Pair{A: j, B: i, Similarity: 1, Distance: -1})
		} else {
			first[s] = i
		}
	}
	if !slices.Equal(pairs, want) {
		t.Fatalf("%d pairs, want %d (each copy with the first document of its text)", len(pairs), len(want))
	}
}

// TestBloomFinderExact checks exact-duplicate removal against a map when
// the key map is full (a small memory budget): no duplicate is missed (no
// false negatives), the copies of texts in the map are named, and the
// false positives stay near the formula for the filter's fill.
func TestBloomFinderExact(t *testing.T) {
	const n = 20000
	texts := bloomTexts(n)
	cfg := Options{}
	cfg.Method, cfg.BloomN, cfg.BloomFPP = "bloom", n, 0.01
	cfg.Memory = 8 * bloomNamedBytes * 1000 // a map of 1000 keys
	m, err := NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, pairs := runMethod(t, m, texts, nil)
	seen := map[string]bool{}
	dup := map[int]bool{}
	named, firsts := 0, map[int]bool{}
	for _, p := range pairs {
		if p.Distance != -1 || p.Similarity != 1 {
			t.Fatalf("pair %+v: want similarity 1", p)
		}
		if p.A != -1 {
			named++
			firsts[p.A] = true
			if p.A >= p.B || texts[p.A] != texts[p.B] {
				t.Fatalf("pair %+v names a document that is not an earlier copy", p)
			}
		}
		dup[p.B] = true
	}
	if named == 0 || len(firsts) > 1000 {
		t.Errorf("%d copies named after %d first documents, want some, after at most the 1000 of the key map", named, len(firsts))
	}
	fp, distinct := 0, 0
	for i, s := range texts {
		switch {
		case seen[s] && !dup[i]:
			t.Fatalf("document %d is a copy but was kept (a false negative)", i)
		case !seen[s] && dup[i]:
			fp++
		}
		if !seen[s] {
			distinct++
		}
		seen[s] = true
	}
	// At most n·p false positives even when full; far fewer while filling.
	if limit := 1.5 * cfg.BloomFPP * float64(distinct); float64(fp) > limit {
		t.Errorf("%d false positives among %d distinct texts, want at most %.0f", fp, distinct, limit)
	}
	t.Logf("%d distinct, %d copies (%d named), %d false positives", distinct, n-distinct, named, fp)
}

func TestBloomKeyField(t *testing.T) {
	cfg := Options{}
	cfg.Method, cfg.KeyField, cfg.BloomN = "bloom", "url", 1000
	m, err := NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"a", "b", "c", "d", "e"}
	keys := []string{"http://x/1", "http://x/2", "http://x/1", "", ""}
	_, pairs := runMethod(t, m, texts, keys)
	if len(pairs) != 1 || pairs[0].B != 2 {
		t.Errorf("pairs %+v, want the one copy of http://x/1 (document 2); empty keys are never duplicates", pairs)
	}
}

func TestBloomOverlap(t *testing.T) {
	cfg := Options{}
	cfg.Method, cfg.BloomN, cfg.Spec.Threshold = "bloom-overlap", 100000, 0.7
	cfg.Spec.Shingle = shingle.Options{Unit: shingle.Word, N: 2}
	m, err := NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := strings.Fields("one two three four five six seven eight nine ten eleven twelve")
	edited := append([]string(nil), base...)
	edited[11] = "dozen" // 10 of 11 bigrams shared: 0.91
	half := append([]string(nil), base[:6]...)
	half = append(half, "x", "y", "z", "w", "v", "u") // 5 of 11 shared
	texts := []string{strings.Join(base, " "), strings.Join(edited, " "), strings.Join(half, " "), "!!!"}
	_, pairs := runMethod(t, m, texts, nil)
	if len(pairs) != 1 || pairs[0].B != 1 || math.Abs(pairs[0].Similarity-10.0/11) > 1e-9 {
		t.Errorf("pairs %+v, want document 1 with overlap 10/11", pairs)
	}
	cfg.KeyField = "url"
	if _, err := NewMethod(cfg); err == nil {
		t.Error("bloom-overlap with --key-field accepted")
	}
}

func TestBloomMethodErrors(t *testing.T) {
	for _, c := range []struct {
		n int
		p float64
	}{{-1, 0.01}, {10, -0.5}, {10, 1}, {1 << 50, 1e-9}} {
		cfg := Options{}
		cfg.Method, cfg.BloomN, cfg.BloomFPP = "bloom", c.n, c.p
		if _, err := NewMethod(cfg); err == nil {
			t.Errorf("--bloom-n %d --bloom-fpp %v accepted", c.n, c.p)
		}
	}
	cfg := Options{}
	cfg.Method = "bloom"
	m, err := NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Add (for a pipeline that does not know DropFinder) fails clearly.
	fd, _ := m.NewFinder()
	sk, _ := m.NewSketcher()
	s, _ := sk.Sketch(&Doc{Text: []byte("x")})
	if err := fd.Add(0, s, func(Pair) {}); !errors.Is(err, ErrNeedsDrop) {
		t.Errorf("Add of the bloom finder: %v, want ErrNeedsDrop", err)
	}
	if d := m.Facts(); d.N != uint64(defaultBloomN) || d.Hashes != 20 {
		t.Errorf("default facts: n=%v hashes=%v, want %d and 20", d.N, d.Hashes, defaultBloomN)
	}
}

// The clusters file of a bloom run names the kept document for every
// removed copy (so that `neardup eval` can score it), and the summary
// counts the clusters; copies of keys that only an earlier run's
// --bloom-filter holds stay unnamed (Stats.Dropped).
func TestBloomRunClustersNamed(t *testing.T) {
	dir := t.TempDir()
	path := writeTexts(t, dir, []string{"alpha text", "beta text", "alpha text", "gamma", "alpha text", "beta text"}, "d%d")
	cfg := Options{}
	cfg.Method, cfg.BloomFile = "bloom", filepath.Join(dir, "seen.bloom")
	out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), Pairs: filepath.Join(dir, "p.jsonl")}
	st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Removed != 3 || st.Clusters != 2 || st.Pairs != 3 || st.Dropped != 0 {
		t.Errorf("removed %d, clusters %d, pairs %d, dropped %d; want 3, 2, 3, 0", st.Removed, st.Clusters, st.Pairs, st.Dropped)
	}
	b, _ := os.ReadFile(out.Clusters)
	for _, want := range []string{`{"id":"d2","cluster":"d0","kept":false}`, `{"id":"d4","cluster":"d0","kept":false}`, `{"id":"d5","cluster":"d1","kept":false}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("clusters lack %s:\n%s", want, b)
		}
	}
	// A second run over new documents: "alpha text" is only in the saved
	// filter, so its copy is removed without a name; the two copies of a
	// new text are named.
	path2 := writeTexts(t, t.TempDir(), []string{"alpha text", "delta", "delta"}, "e%d")
	st, err = Run(context.Background(), cfg, Input{Files: []string{path2}}, Outputs{Clusters: filepath.Join(dir, "c2.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	if st.Removed != 2 || st.Dropped != 1 || st.Clusters != 1 {
		t.Errorf("second run: removed %d, dropped %d, clusters %d; want 2, 1, 1", st.Removed, st.Dropped, st.Clusters)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "c2.jsonl"))
	for _, want := range []string{`{"id":"e0","cluster":"e0","kept":false}`, `{"id":"e2","cluster":"e1","kept":false}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("second run's clusters lack %s:\n%s", want, b)
		}
	}
}

// TestBloomKeyFieldSkipInvalid: with SkipInvalid, the records without the
// key are skipped in the second pass too (the kept records and the
// examples), so that it sees the documents of the first. The second pass
// did not know of the key and failed with "input changed while it was
// being read". A record with an empty text and no key is such a record
// too: the first pass took it as an empty document, the second could not
// tell it from the skipped ones.
func TestBloomKeyFieldSkipInvalid(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	recs := `{"id":"1","url":"u","text":"x"}
{"id":"2","text":"y"}
{"id":"3","url":"u","text":"z"}
{"id":"4","text":""}
{"id":"5","url":"v","text":"w"}
`
	if err := os.WriteFile(in, []byte(recs), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, examples := range []int{0, 3} {
		cfg := Options{KeyField: "url"}
		cfg.Method = "bloom"
		kept := filepath.Join(dir, fmt.Sprintf("kept%d.jsonl", examples))
		st, err := Run(context.Background(), cfg, Input{Files: []string{in}, SkipInvalid: true, Examples: examples}, Outputs{Kept: kept})
		if err != nil {
			t.Fatalf("examples %d: %v", examples, err)
		}
		b, err := os.ReadFile(kept)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"id":"1","url":"u","text":"x"}
{"id":"5","url":"v","text":"w"}
`
		if string(b) != want || st.Skipped != 2 || st.Documents != 3 {
			t.Errorf("examples %d: %d documents, %d skipped, kept:\n%s\nwant 3, 2 and\n%s", examples, st.Documents, st.Skipped, b, want)
		}
	}
	// Without SkipInvalid, the empty text without a key is a bad record.
	if err := os.WriteFile(in, []byte(`{"id":"4","text":""}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Options{KeyField: "url"}
	cfg.Method = "bloom"
	var rec *corpus.RecordError
	if _, err := Run(context.Background(), cfg, Input{Files: []string{in}}, Outputs{}); !errors.As(err, &rec) || rec.ID != "4" {
		t.Errorf("an empty text without the key: %v, want a bad record of id 4", err)
	}
}

// TestBloomKeyFieldEmptyText: with KeyField, a record whose text is empty
// (or white space) is compared by its key as any other: it was an empty
// document, never a duplicate, and never entered the filter, so that a
// later record with its key and a text was kept too.
func TestBloomKeyFieldEmptyText(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.jsonl")
	recs := `{"id":"1","url":"u","text":""}
{"id":"2","url":"u","text":""}
{"id":"3","url":"u","text":"abc"}
{"id":"4","url":"v","text":"  "}
{"id":"5","url":"","text":""}
`
	if err := os.WriteFile(in, []byte(recs), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Options{KeyField: "url"}
	cfg.Method = "bloom"
	var got []string
	st, err := Run(context.Background(), cfg, Input{Files: []string{in}}, Outputs{OnCluster: func(id, cluster string, kept bool) {
		got = append(got, fmt.Sprintf("%s:%s:%v", id, cluster, kept))
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1:1:true", "2:1:false", "3:1:false", "4:4:true", "5:5:true"}
	if !slices.Equal(got, want) || st.Empty != 1 {
		t.Errorf("clusters %v, %d empty; want %v and 1 (the record without a key)", got, st.Empty, want)
	}
}

// TestBloomFactsNumber: the bloom method's Duplicate fact, a sentence
// shown by the summary and in --stats "params", wrote the key map's
// capacity without thousands separators ("at most 24684096 keys"); it
// must write it as the summary writes counts (24,684,096).
func TestBloomFactsNumber(t *testing.T) {
	cfg := Options{Method: "bloom", Memory: 8 * bloomNamedBytes * 24684096}
	m, err := NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Facts().Duplicate; !strings.Contains(d, "at most 24,684,096 keys") {
		t.Errorf("Duplicate = %q, want it to say \"at most 24,684,096 keys\"", d)
	}
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 123456: "123,456", -1234567: "-1,234,567"} {
		if got := number(n); got != want {
			t.Errorf("number(%d) = %q, want %q", n, got, want)
		}
	}
}
