package dedup

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/neardup/neardup/shingle"
)

// TestBloomFinderExact checks exact-duplicate removal against a map: no
// duplicate is missed (no false negatives) and the false positives stay
// near the formula for the filter's fill.
func TestBloomFinderExact(t *testing.T) {
	const n = 20000
	texts := make([]string, n)
	for i := range texts {
		if i%4 == 3 {
			texts[i] = texts[(i*7919)%n%i]
		} else {
			texts[i] = fmt.Sprintf("document number %d with some text", i)
		}
	}
	cfg := DefaultConfig()
	cfg.Method, cfg.BloomN, cfg.BloomFPP = "bloom", n, 0.01
	m, err := NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, pairs := runMethod(t, m, texts, nil)
	seen := map[string]bool{}
	dup := map[int]bool{}
	for _, p := range pairs {
		if p.A != -1 || p.Distance != -1 {
			t.Fatalf("pair %+v: want a drop", p)
		}
		dup[p.B] = true
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
	t.Logf("%d distinct, %d copies, %d false positives", distinct, n-distinct, fp)
}

func TestBloomKeyField(t *testing.T) {
	cfg := DefaultConfig()
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
	cfg := DefaultConfig()
	cfg.Method, cfg.BloomN, cfg.Threshold = "bloom-overlap", 100000, 0.7
	cfg.Shingle = shingle.Options{Unit: shingle.Word, N: 2}
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
	}{{-1, 0.01}, {10, 0}, {10, 1}, {1 << 50, 1e-9}} {
		cfg := DefaultConfig()
		cfg.Method, cfg.BloomN, cfg.BloomFPP = "bloom", c.n, c.p
		if _, err := NewMethod(cfg); err == nil {
			t.Errorf("--bloom-n %d --bloom-fpp %v accepted", c.n, c.p)
		}
	}
	cfg := DefaultConfig()
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
	if d := m.Describe(); d["n"] != uint64(defaultBloomN) || d["hashes"] != 20 {
		t.Errorf("default Describe: n=%v hashes=%v, want %d and 20", d["n"], d["hashes"], defaultBloomN)
	}
}
