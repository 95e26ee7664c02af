package simbloom

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	bnb "github.com/bits-and-blooms/bloom/v3"

	"github.com/neardup/neardup/bloom"
)

func urlKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "https://www.example.org/articles/%d/page-%x.html", i, i*7919)
	}
	return keys
}

// BenchmarkBloom measures Add+Test pairs per second (one Add of a new key
// and one Test of an absent key per operation) for filters sized for 1M
// keys, ours against bits-and-blooms/bloom/v3 at the same (n, p).
func BenchmarkBloom(b *testing.B) {
	const n = 1 << 20
	keys := urlKeys(2 * n)
	for _, p := range []float64{1e-2, 1e-6} {
		b.Run(fmt.Sprintf("neardup/p=%g", p), func(b *testing.B) {
			f, _ := bloom.New(n, p, bloom.Options{})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				f.Add(keys[i%n])
				f.Test(keys[n+i%n])
				i++
			}
		})
		b.Run(fmt.Sprintf("bitsandblooms/p=%g", p), func(b *testing.B) {
			f := bnb.NewWithEstimates(n, p)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				f.Add(keys[i%n])
				f.Test(keys[n+i%n])
				i++
			}
		})
		// Ours is safe for concurrent use; bits-and-blooms needs a lock.
		b.Run(fmt.Sprintf("neardup-parallel/p=%g", p), func(b *testing.B) {
			f, _ := bloom.New(n, p, bloom.Options{})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					f.Add(keys[i%n])
					f.Test(keys[n+i%n])
					i += 7
				}
			})
		})
		b.Run(fmt.Sprintf("bitsandblooms-mutex-parallel/p=%g", p), func(b *testing.B) {
			f := bnb.NewWithEstimates(n, p)
			var mu sync.Mutex
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					mu.Lock()
					f.Add(keys[i%n])
					f.Test(keys[n+i%n])
					mu.Unlock()
					i += 7
				}
			})
		})
	}
}

// distinctParagraphs returns the distinct non-empty lines of a dataset.
func distinctParagraphs(t *testing.T, dataset string) []string {
	seen := map[string]bool{}
	var out []string
	for _, doc := range loadTexts(t, dataset, 0) {
		for line := range strings.SplitSeq(doc, "\n") {
			line = strings.TrimSpace(line)
			if line != "" && !seen[line] {
				seen[line] = true
				out = append(out, line)
			}
		}
	}
	return out
}

// TestBloomFPRRealCorpus fills filters sized for n with n distinct real
// paragraphs (wiki-slice, then verses of bible-kjv-family) and tests the
// remaining distinct paragraphs, which were never added: every hit is a
// false positive. The measured rate must stay within 1.5x of p; it is
// reported next to the formula and to bits-and-blooms at the same (n, p).
// Run with -run BloomFPRRealCorpus -v.
func TestBloomFPRRealCorpus(t *testing.T) {
	for _, dataset := range []string{"wiki-slice", "bible-kjv-family"} {
		keys := distinctParagraphs(t, dataset)
		half := len(keys) / 2
		in, out := keys[:half], keys[half:]
		for _, p := range []float64{1e-2, 1e-3, 1e-4} {
			f, err := bloom.New(uint64(len(in)), p, bloom.Options{})
			if err != nil {
				t.Fatal(err)
			}
			peer := bnb.NewWithEstimates(uint(len(in)), p)
			for _, k := range in {
				f.AddString(k)
				peer.AddString(k)
			}
			fp, peerFP := 0, 0
			for _, k := range out {
				if f.TestString(k) {
					fp++
				}
				if peer.TestString(k) {
					peerFP++
				}
			}
			for _, k := range in {
				if !f.TestString(k) {
					t.Fatalf("%s: false negative", dataset)
				}
			}
			rate := float64(fp) / float64(len(out))
			peerRate := float64(peerFP) / float64(len(out))
			formula := bloom.FPP(uint64(len(in)), f.M(), f.K())
			t.Logf("%s: n=%d added, %d absent tested, p=%g: neardup m=%d k=%d FPR %.3g (%d; %.2fx p; formula %.3g); bits-and-blooms m=%d k=%d FPR %.3g (%d)",
				dataset, len(in), len(out), p, f.M(), f.K(), rate, fp, rate/p, formula, peer.Cap(), peer.K(), peerRate, peerFP)
			// Tolerance: 1.5x p, plus 4 standard deviations of the count
			// when fewer than 100 false positives are expected.
			limit := 1.5*p + 4*math.Sqrt(p*float64(len(out)))/float64(len(out))
			if rate > limit {
				t.Errorf("%s p=%g: measured FPR %.3g above %.3g", dataset, p, rate, limit)
			}
		}
	}
}
