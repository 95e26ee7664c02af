package text

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neardup/neardup/internal/sysinfo"
)

// sharedData opens shared/data/NAME/docs.jsonl.gz in the nearest parent
// directory that has it (the main checkout and the worktrees sit at
// different depths) and calls f for each document, or skips the test when
// the evaluation data is not present.
func sharedData(t testing.TB, name string, f func(doc map[string]any) bool) {
	t.Helper()
	path := filepath.Join("..", "..", "shared", "data", name, "docs.jsonl.gz")
	for dir, _ := filepath.Abs("."); ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, "shared", "data", name, "docs.jsonl.gz")
		if _, err := os.Stat(p); err == nil {
			path = p
			break
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	file, err := os.Open(path)
	if err != nil {
		t.Skipf("evaluation data not present: %v", err)
	}
	defer file.Close()
	zr, err := gzip.NewReader(file)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<26)
	for line := 1; sc.Scan(); line++ {
		var doc map[string]any
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		if !f(doc) {
			break
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestHTMLReadabilityPages runs HTMLToText on the article HTML of Mozilla
// Readability's test pages and compares it with the bundle's reference text,
// both normalised line by line.
func TestHTMLReadabilityPages(t *testing.T) {
	n := mustNew(t, with(func(o *Options) { o.KeepNewlines = true }))
	limit := 1000
	if testing.Short() || raceEnabled {
		limit = 20
	}
	pages, bad := 0, 0
	sharedData(t, "html-pages", func(doc map[string]any) bool {
		src, _ := doc["expected_html"].(string)
		want, _ := doc["expected_text"].(string)
		if src == "" || want == "" {
			return true
		}
		pages++
		txt, err := HTMLToText(nil, strings.NewReader(src))
		if err != nil {
			t.Fatalf("%v: %v", doc["id"], err)
		}
		got, wantN := n.String(string(txt)), n.String(want)
		if got != wantN {
			bad++
			gl, wl := strings.Split(got, "\n"), strings.Split(wantN, "\n")
			for i := 0; i < len(gl) && i < len(wl); i++ {
				if gl[i] != wl[i] {
					t.Logf("%v: line %d: got %q, want %q", doc["id"], i+1, gl[i], wl[i])
					break
				}
			}
		}
		// The whole source page goes through without error.
		full, _ := doc["text"].(string)
		if _, err := HTMLToText(nil, strings.NewReader(full)); err != nil {
			t.Errorf("%v: HTMLToText(source.html): %v", doc["id"], err)
		}
		return pages < limit
	})
	t.Logf("%d pages, %d differ from the reference text", pages, bad)
	if bad > pages/10 {
		t.Errorf("%d of %d pages differ from the reference text, want at most 10%%", bad, pages)
	}
}

// TestIdempotentRealText checks idempotence on real documents of the
// evaluation data, when it is present.
func TestIdempotentRealText(t *testing.T) {
	limit := 3000
	if testing.Short() || raceEnabled {
		limit = 200
	}
	opts := idempotenceOptions()
	ns := make([]*Normalizer, len(opts))
	for i, o := range opts {
		ns[i] = mustNew(t, o)
	}
	for _, name := range []string{"bible-zh-scripts", "tang-editions", "bbc-news", "pawsx-zh"} {
		t.Run(name, func(t *testing.T) {
			docs := 0
			sharedData(t, name, func(doc map[string]any) bool {
				s, _ := doc["text"].(string)
				for i, n := range ns {
					once := n.String(s)
					if twice := n.String(once); twice != once {
						t.Errorf("%v, options %d: Normalize(Normalize(text)) != Normalize(text):\n%q\n%q", doc["id"], i, once, twice)
						return false
					}
				}
				docs++
				return docs < limit
			})
			t.Logf("%d documents", docs)
		})
	}
}

// TestT2SBibleParallel normalises the Traditional (ChiUn) and Simplified
// (ChiUns) editions of the Chinese Union Version with T2S on and counts the
// verses that become identical.
func TestT2SBibleParallel(t *testing.T) {
	n := mustNew(t, with(func(o *Options) { o.T2S = true }))
	plain := mustNew(t, DefaultOptions())
	trad := map[string]string{}
	simp := map[string]string{}
	limit := 1 << 30
	if testing.Short() || raceEnabled {
		limit = 4000
	}
	sharedData(t, "bible-zh-scripts", func(doc map[string]any) bool {
		v, _ := doc["version"].(string)
		verse, _ := doc["verse"].(string)
		s, _ := doc["text"].(string)
		switch v {
		case "ChiUn":
			trad[verse] = s
		case "ChiUns":
			simp[verse] = s
		}
		return len(trad)+len(simp) < limit
	})
	// OpenCC's t2s keeps 著 and 藉, which are also Simplified characters
	// (著作, 慰藉); this edition writes the particle 着 and 借 instead.
	variants := strings.NewReplacer("著", "着", "藉", "借")
	pairs, same, sameBefore, variantOnly, shown := 0, 0, 0, 0, 0
	for verse, tr := range trad {
		si, ok := simp[verse]
		if !ok {
			continue
		}
		pairs++
		if plain.String(tr) == plain.String(si) {
			sameBefore++
		}
		a, b := n.String(tr), n.String(si)
		if a == b {
			same++
		} else if variants.Replace(a) == variants.Replace(b) {
			variantOnly++
		} else if shown < 5 {
			shown++
			t.Logf("%s: %q vs %q", verse, a, b)
		}
	}
	t.Logf("%d parallel verses: %d identical after T2S (%d without it), %d more differ only by 著/着 or 藉/借",
		pairs, same, sameBefore, variantOnly)
	if pairs > 0 && same < pairs*88/100 {
		t.Errorf("only %d of %d parallel verses identical after T2S, want at least 88%%", same, pairs)
	}
}

// dataTexts returns the text of up to n documents of a shared data set.
func dataTexts(tb testing.TB, name string, n int) []string {
	var texts []string
	sharedData(tb, name, func(doc map[string]any) bool {
		if s, ok := doc["text"].(string); ok {
			texts = append(texts, s)
		}
		return len(texts) < n
	})
	return texts
}

// TestASCIIFastPathRealText compares the ASCII fast paths with the
// per-character path on English and Chinese corpora, with the default
// options and with KeepNewlines and stop words.
func TestASCIIFastPathRealText(t *testing.T) {
	n := 3000
	if testing.Short() || raceEnabled {
		n = 300
	}
	for _, o := range []Options{DefaultOptions(), with(func(o *Options) { o.KeepNewlines, o.StopWords = true, true })} {
		fast := mustNew(t, o)
		slow := mustNew(t, o)
		slow.slow = true
		for _, set := range []string{"bbc-news", "pawsx-zh", "tang-editions", "bible-kjv-family"} {
			for i, s := range dataTexts(t, set, n) {
				if got, want := fast.String(s), slow.String(s); got != want {
					t.Fatalf("%s document %d, options %+v: the ASCII fast path gives %+q, the per-character path %+q", set, i, o, got, want)
				}
			}
		}
	}
}

// BenchmarkNormalizeData normalises real English and Chinese documents
// (up to 2,000 of each set, 300 wiki-slice articles) with the default
// options, with the ASCII fast paths ("fast") and without them
// ("per-character", the code before them). It reports the CPU time of
// the process per document (CPU-ns/doc; compare these on a busy machine)
// beside the wall clock (ns/doc):
//
//	go test -run '^$' -bench NormalizeData -benchtime 20x -cpu 1 ./text
func BenchmarkNormalizeData(b *testing.B) {
	for _, c := range []struct {
		name, set string
		n         int
	}{
		{"en/bbc-news", "bbc-news", 2000}, {"en/wiki-slice", "wiki-slice", 300},
		{"zh/pawsx-zh", "pawsx-zh", 2000}, {"zh/tang-editions", "tang-editions", 2000},
	} {
		b.Run(c.name, func(b *testing.B) {
			texts := dataTexts(b, c.set, c.n)
			size := 0
			for _, s := range texts {
				size += len(s)
			}
			for _, slow := range []bool{false, true} {
				name := "fast"
				if slow {
					name = "per-character"
				}
				b.Run(name, func(b *testing.B) {
					n := mustNew(b, DefaultOptions())
					n.slow = slow
					var dst []byte
					b.SetBytes(int64(size))
					b.ReportAllocs()
					c0 := sysinfo.CPUSeconds()
					for b.Loop() {
						for _, s := range texts {
							dst = n.Append(dst[:0], s)
						}
					}
					if c0 != 0 {
						b.ReportMetric((sysinfo.CPUSeconds()-c0)*1e9/float64(b.N)/float64(len(texts)), "CPU-ns/doc")
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(texts)), "ns/doc")
				})
			}
		})
	}
}
