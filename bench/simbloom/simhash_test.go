package simbloom

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
)

// No Go SimHash library is served by the module proxy here
// (github.com/mfonda/simhash, go-dedup/simhash, safeie/simhash and
// yanyiwu/gosimhash all answer 403), so the peer is a straightforward
// reference implementation in the style of mfonda/simhash: words split on
// non-letters and lower-cased, FNV-1a 64 per word, weight 1 per
// occurrence, and a loop over the 64 bits of every feature adding or
// subtracting the weight.

// refFeatures appends the FNV-1a hashes of the lower-cased words of text.
func refFeatures(dst []uint64, text string) []uint64 {
	h := fnv.New64a()
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		h.Reset()
		h.Write([]byte(strings.ToLower(w)))
		dst = append(dst, h.Sum64())
	}
	return dst
}

// refFingerprint is the textbook per-bit loop.
func refFingerprint(features []uint64) uint64 {
	var v [64]int
	for _, f := range features {
		for i := range 64 {
			if f>>uint(i)&1 == 1 {
				v[i]++
			} else {
				v[i]--
			}
		}
	}
	var fp uint64
	for i, s := range v {
		if s > 0 {
			fp |= 1 << uint(i)
		}
	}
	return fp
}

// BenchmarkFingerprint measures fingerprints per second from ready
// features (the hot path), ours against the reference loop.
func BenchmarkFingerprint(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{100, 1000, 10000} {
		feats := make([]uint64, n)
		for i := range feats {
			feats[i] = r.Uint64()
		}
		h, _ := simhash.New(simhash.Options{})
		b.Run(fmt.Sprintf("neardup/features=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(8 * n))
			for b.Loop() {
				h.Hash(feats)
			}
		})
		b.Run(fmt.Sprintf("reference/features=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(8 * n))
			for b.Loop() {
				refFingerprint(feats)
			}
		})
	}
}

// BenchmarkText measures text to fingerprint (tokenise, hash words,
// fingerprint) in MB/s of text over the first 2000 wiki-slice articles.
func BenchmarkText(b *testing.B) {
	texts := loadTexts(b, "wiki-slice", 2000)
	total := 0
	for _, t := range texts {
		total += len(t)
	}
	avg := int64(total / len(texts))
	b.Run("neardup/word1", func(b *testing.B) {
		sh, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: 1})
		h, _ := simhash.New(simhash.Options{})
		var feats []uint64
		b.ReportAllocs()
		b.SetBytes(avg)
		i := 0
		for b.Loop() {
			feats = sh.AppendHashes(feats[:0], texts[i%len(texts)])
			h.Hash(feats)
			i++
		}
	})
	b.Run("neardup/word3", func(b *testing.B) {
		sh, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: 3})
		h, _ := simhash.New(simhash.Options{})
		var feats []uint64
		b.ReportAllocs()
		b.SetBytes(avg)
		i := 0
		for b.Loop() {
			feats = sh.AppendHashes(feats[:0], texts[i%len(texts)])
			h.Hash(feats)
			i++
		}
	})
	b.Run("reference/word1", func(b *testing.B) {
		var feats []uint64
		b.ReportAllocs()
		b.SetBytes(avg)
		i := 0
		for b.Loop() {
			feats = refFeatures(feats[:0], texts[i%len(texts)])
			refFingerprint(feats)
			i++
		}
	})
}

// cpuTime returns the user+system CPU time of the process so far: on a
// shared, loaded machine it is steadier than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// million returns n fingerprints: 90% uniformly random, 10% copies of
// earlier ones with 0 to 4 bits flipped.
func million(n int) []simhash.Fingerprint {
	r := rand.New(rand.NewPCG(3, 4))
	fps := make([]simhash.Fingerprint, n)
	for i := range fps {
		if i > 0 && r.IntN(10) == 0 {
			c := fps[r.IntN(i)]
			for range r.IntN(5) {
				c.Lo ^= 1 << uint(r.IntN(64))
			}
			fps[i] = c
		} else {
			fps[i] = simhash.Fingerprint{Lo: r.Uint64()}
		}
	}
	return fps
}

// TestAllPairsMillion times the all-pairs join at distance 3 over 1M
// fingerprints (batch AllPairs and the incremental Index), and a linear
// scan on a sample of queries, extrapolated to all pairs; it checks the
// sample's answers against the index. Run with -run AllPairsMillion -v.
func TestAllPairsMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	const n, k = 1_000_000, 3
	fps := million(n)

	start, cpu := time.Now(), cpuTime()
	pairs := 0
	d, err := simhash.AllPairs(fps, 64, k, simhash.DesignOptions{}, func(i, j, dist int) { pairs++ })
	if err != nil {
		t.Fatal(err)
	}
	batch, batchCPU := time.Since(start), cpuTime()-cpu
	t.Logf("AllPairs: %d pairs in %.2fs wall, %.2fs CPU; design %v", pairs, batch.Seconds(), batchCPU.Seconds(), d)

	start, cpu = time.Now(), cpuTime()
	x, err := simhash.NewIndex(64, k, simhash.DesignOptions{N: n})
	if err != nil {
		t.Fatal(err)
	}
	var dst []simhash.Match
	ipairs := 0
	for i, fp := range fps {
		dst = x.Query(fp, dst[:0])
		ipairs += len(dst)
		if err := x.Insert(i, fp); err != nil {
			t.Fatal(err)
		}
	}
	incr, incrCPU := time.Since(start), cpuTime()-cpu
	t.Logf("Index (query then insert, one by one): %d pairs in %.2fs wall, %.2fs CPU; design %v", ipairs, incr.Seconds(), incrCPU.Seconds(), x.Design())
	if ipairs != pairs {
		t.Errorf("Index found %d pairs, AllPairs %d", ipairs, pairs)
	}

	// Linear scan on a sample of queries.
	const sample = 2000
	r := rand.New(rand.NewPCG(5, 6))
	start, cpu = time.Now(), cpuTime()
	found := 0
	for range sample {
		q := fps[r.IntN(n)]
		for _, fp := range fps {
			if q.Distance(fp) <= k {
				found++
			}
		}
	}
	per, perCPU := time.Since(start)/sample, (cpuTime()-cpu)/sample
	extrapolated := time.Duration(float64(per) * n / 2)
	extrapolatedCPU := time.Duration(float64(perCPU) * n / 2)
	t.Logf("linear scan: %v wall, %v CPU per query over %d fingerprints (sample of %d queries, %d matches); all pairs extrapolated: %.0fs wall, %.0fs CPU (n/2 queries of n)",
		per, perCPU, n, sample, found, extrapolated.Seconds(), extrapolatedCPU.Seconds())
	t.Logf("speed-up of AllPairs over the extrapolated linear scan: %.0fx wall, %.0fx CPU", extrapolated.Seconds()/batch.Seconds(), extrapolatedCPU.Seconds()/batchCPU.Seconds())

	// The index answers the sampled queries exactly as the scan does.
	r = rand.New(rand.NewPCG(7, 8))
	for range 200 {
		q := fps[r.IntN(n)]
		want := 0
		for _, fp := range fps {
			if q.Distance(fp) <= k {
				want++
			}
		}
		if got := len(x.Query(q, nil)); got != want {
			t.Fatalf("Query found %d, the linear scan %d", got, want)
		}
	}
}
