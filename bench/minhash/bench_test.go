// Package minhashbench compares neardup's MinHash and LSH with
// github.com/ekzhu/minhash-lsh on the same job, in the same run: text to a
// 128-slot signature over word 5-grams, and signatures plus a banded index
// plus one query per document at threshold 0.8.
//
// It is a separate module so that the main module does not depend on the
// peer. The corpus is the first NEARDUP_BENCH_DOCS (default 20000) verses
// of shared/data/bible-kjv-family (248,812 short English verses; set
// NEARDUP_BENCH_DATA to another docs.jsonl.gz); without it the benchmarks
// fall back to the 180 public-domain texts of minhash/testdata.
//
//	cd bench/minhash && go test -run '^$' -bench . -benchtime 3s -count 3 -cpu 1
//	go test -run '^$' -bench 'Parallel' -cpu 1,2
package minhashbench

import (
	"syscall"
	"testing"
	"time"

	ekzhu "github.com/ekzhu/minhash-lsh"

	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
)

const (
	numPerm   = 128
	ngram     = 5
	threshold = 0.8
)

// corpusSet is the lower-cased corpus of the benchmarks of this file
// (neardup's pipeline folds case before shingling; the peer gets the same
// text).
var corpusSet = docSet{nEnv: "NEARDUP_BENCH_DOCS", pathEnv: "NEARDUP_BENCH_DATA", n: 20000,
	name: "bible-kjv-family/docs.jsonl.gz", lower: true}

func loadCorpus(b *testing.B) ([]string, int64) { return corpusSet.load(b) }

func reportCPU(b *testing.B, docs []string, c0 time.Duration) {
	b.ReportMetric(float64((processCPU()-c0).Nanoseconds())/float64(b.N)/float64(len(docs)), "CPU-ns/doc")
}

func report(b *testing.B, docs []string) {
	b.ReportMetric(float64(len(docs))*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}

// neardupSigner is text -> signature with neardup: shingle hashes
// (XXH3 of each word 5-gram) then Sign. No allocation per document.
type neardupSigner struct {
	sh     *shingle.Shingler
	h      *minhash.Hasher
	hashes []uint64
	sig    minhash.Signature
}

func newNeardupSigner(b *testing.B, fam minhash.Family) *neardupSigner {
	sh, err := shingle.New(shingle.Options{Unit: shingle.Word, N: ngram})
	if err != nil {
		b.Fatal(err)
	}
	h, err := minhash.New(minhash.Options{NumPerm: numPerm, Family: fam})
	if err != nil {
		b.Fatal(err)
	}
	return &neardupSigner{sh: sh, h: h}
}

func (s *neardupSigner) sign(text string) minhash.Signature {
	s.hashes = s.sh.AppendHashes(s.hashes[:0], text)
	s.sig = s.h.Sign(s.sig, s.hashes)
	return s.sig
}

// ekzhuSigner is text -> signature with ekzhu/minhash-lsh: the same word
// tokens (neardup's tokenizer, so both hash the same 5-grams), each 5-gram
// joined by spaces into a reused buffer and pushed. ekzhu has no way to
// reset a Minhash, so the documented use is one NewMinhash per document.
type ekzhuSigner struct {
	sh   *shingle.Shingler
	toks []string
	buf  []byte
}

func newEkzhuSigner(b *testing.B) *ekzhuSigner {
	sh, err := shingle.New(shingle.Options{Unit: shingle.Word, N: 1})
	if err != nil {
		b.Fatal(err)
	}
	return &ekzhuSigner{sh: sh}
}

func (s *ekzhuSigner) sign(text string) []uint64 {
	m := ekzhu.NewMinhash(1, numPerm)
	s.toks = s.sh.Tokens(s.toks[:0], text)
	n := min(ngram, len(s.toks))
	for i := 0; i+n <= len(s.toks); i++ {
		s.buf = s.buf[:0]
		for j, t := range s.toks[i : i+n] {
			if j > 0 {
				s.buf = append(s.buf, ' ')
			}
			s.buf = append(s.buf, t...)
		}
		m.Push(s.buf)
	}
	return m.Signature()
}

// BenchmarkSignatures: text to signature, one core.
func BenchmarkSignatures(b *testing.B) {
	docs, size := loadCorpus(b)
	b.Logf("corpus: %d documents, %d bytes, from %s", len(docs), size, corpusSet.from)
	for _, fam := range []minhash.Family{minhash.MultiplyShift, minhash.Permutation, minhash.OPH} {
		b.Run("neardup-"+fam.String(), func(b *testing.B) {
			s := newNeardupSigner(b, fam)
			b.SetBytes(size)
			b.ReportAllocs()
			c0 := processCPU()
			for b.Loop() {
				for _, d := range docs {
					s.sign(d)
				}
			}
			reportCPU(b, docs, c0)
			report(b, docs)
		})
	}
	b.Run("ekzhu", func(b *testing.B) {
		s := newEkzhuSigner(b)
		b.SetBytes(size)
		b.ReportAllocs()
		c0 := processCPU()
		for b.Loop() {
			for _, d := range docs {
				s.sign(d)
			}
		}
		reportCPU(b, docs, c0)
		report(b, docs)
	})
}

// BenchmarkSignIndexQuery: signatures, then every document into a banded
// index at threshold 0.8, then one query per document. neardup bands as
// datasketch's rule says (9x13 at 0.8); ekzhu chooses its own (k, l) the
// same way (optimalKL) and needs Index() between adding and querying.
func BenchmarkSignIndexQuery(b *testing.B) {
	docs, size := loadCorpus(b)
	for _, fam := range []minhash.Family{minhash.MultiplyShift, minhash.OPH} {
		b.Run("neardup-"+fam.String(), func(b *testing.B) {
			s := newNeardupSigner(b, fam)
			p, err := lsh.Optimal(threshold, numPerm, lsh.Weights{})
			if err != nil {
				b.Fatal(err)
			}
			sigs := make([]uint32, len(docs)*numPerm)
			var cands []uint32
			b.SetBytes(size)
			b.ReportAllocs()
			total := 0
			c0 := processCPU()
			for b.Loop() {
				ix, _ := lsh.New(p, numPerm, lsh.Options{})
				for i, d := range docs {
					copy(sigs[i*numPerm:], s.sign(d))
					ix.Insert(uint32(i), sigs[i*numPerm:(i+1)*numPerm])
				}
				for i := range docs {
					cands, _ = ix.Query(cands[:0], sigs[i*numPerm:(i+1)*numPerm])
					total += len(cands)
				}
			}
			reportCPU(b, docs, c0)
			b.ReportMetric(float64(total)/float64(b.N)/float64(len(docs)), "cands/doc")
			report(b, docs)
		})
	}
	b.Run("ekzhu", func(b *testing.B) {
		s := newEkzhuSigner(b)
		sigs := make([][]uint64, len(docs))
		b.SetBytes(size)
		b.ReportAllocs()
		total := 0
		c0 := processCPU()
		for b.Loop() {
			ix := ekzhu.NewMinhashLSH32(numPerm, threshold)
			for i, d := range docs {
				sigs[i] = s.sign(d)
				ix.Add(i, sigs[i])
			}
			ix.Index()
			for i := range docs {
				total += len(ix.Query(sigs[i]))
			}
		}
		reportCPU(b, docs, c0)
		k, l := ekzhu.NewMinhashLSH32(numPerm, threshold).Params()
		b.ReportMetric(float64(k), "rows")
		b.ReportMetric(float64(l), "bands")
		b.ReportMetric(float64(total)/float64(b.N)/float64(len(docs)), "cands/doc")
		report(b, docs)
	})
}

// processCPU returns the user and system CPU time of the process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSignaturesParallel: text to signature on every core of -cpu,
// one signer per goroutine, for the scaling from 1 to 2 cores. Besides
// wall-clock docs/s it reports CPU-ns/doc (process CPU time over
// documents): on a shared machine, where other processes take cores away,
// a CPU cost per document that stays flat from -cpu 1 to 2 is the sign of
// linear scaling (no contention, no shared state, no allocation).
func BenchmarkSignaturesParallel(b *testing.B) {
	docs, size := loadCorpus(b)
	b.Run("neardup-multiply-shift", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		c0 := processCPU()
		defer func() { reportCPU(b, docs, c0) }()
		b.RunParallel(func(pb *testing.PB) {
			s := newNeardupSigner(b, minhash.MultiplyShift)
			for pb.Next() {
				for _, d := range docs {
					s.sign(d)
				}
			}
		})
		report(b, docs)
	})
	b.Run("ekzhu", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		c0 := processCPU()
		defer func() { reportCPU(b, docs, c0) }()
		b.RunParallel(func(pb *testing.PB) {
			s := newEkzhuSigner(b)
			for pb.Next() {
				for _, d := range docs {
					s.sign(d)
				}
			}
		})
		report(b, docs)
	})
}

// TestSameJob checks that both sides see the same shingles: for
// single-shingle-or-more documents, the number of 5-grams each pushes is
// the same, and neardup's signature estimate of a document with itself is 1.
func TestSameJob(t *testing.T) {
	sh, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: ngram})
	tok, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: 1})
	for _, text := range []string{"in the beginning god created the heaven and the earth", "jesus wept", ""} {
		hashes := sh.AppendHashes(nil, text)
		toks := tok.Tokens(nil, text)
		n := 0
		if len(toks) > 0 {
			n = len(toks) - min(ngram, len(toks)) + 1
		}
		if len(hashes) != n {
			t.Errorf("%q: neardup %d shingles, ekzhu harness %d", text, len(hashes), n)
		}
	}
}

// TestBytesPerSignature measures the encoded size of the corpus's
// signatures (128 slots, multiply-shift) in each encoding:
//
//	go test -run BytesPerSignature -v
func TestBytesPerSignature(t *testing.T) {
	docs, _ := loadCorpusT(t)
	sh, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: ngram})
	h, _ := minhash.New(minhash.Options{NumPerm: numPerm, Family: minhash.MultiplyShift})
	var hashes []uint64
	var sig minhash.Signature
	var buf []byte
	for _, enc := range []struct {
		e    minhash.Encoding
		bits int
	}{{minhash.Raw32, 0}, {minhash.Varint, 0}, {minhash.BBit, 16}, {minhash.BBit, 8}, {minhash.BBit, 4}, {minhash.BBit, 1}} {
		total, n := 0, 0
		for _, d := range docs {
			hashes = sh.AppendHashes(hashes[:0], d)
			if len(hashes) == 0 {
				continue
			}
			sig = h.Sign(sig, hashes)
			var err error
			if buf, err = minhash.AppendEncode(buf[:0], sig, enc.e, enc.bits); err != nil {
				t.Fatal(err)
			}
			if want := fixedPayload(enc.e, enc.bits); want > 0 && len(buf) != want {
				t.Fatalf("%s b=%d: %d payload bytes, want %d", enc.e, enc.bits, len(buf), want)
			}
			got, err := minhash.Decode(nil, buf, enc.e, enc.bits, numPerm)
			if err != nil {
				t.Fatalf("%s b=%d: %v", enc.e, enc.bits, err)
			}
			mask := uint32(1)<<max(enc.bits, 1) - 1
			if enc.e != minhash.BBit || enc.bits == 32 {
				mask = ^uint32(0)
			}
			for i := range sig {
				if got[i] != sig[i]&mask {
					t.Fatalf("%s b=%d: slot %d decodes to %#x, want %#x", enc.e, enc.bits, i, got[i], sig[i]&mask)
				}
			}
			total += len(buf)
			n++
		}
		t.Logf("%s b=%d: %.1f payload bytes per signature (+ 1-2 bytes length and 4 bytes CRC in a file), %d documents from %s",
			enc.e, enc.bits, float64(total)/float64(n), n, corpusSet.from)
	}
}

// loadCorpusT loads the corpus from a test (loadCorpus wants a B).
func loadCorpusT(t *testing.T) ([]string, int64) {
	var docs []string
	var size int64
	testing.Benchmark(func(b *testing.B) {
		docs, size = loadCorpus(b)
		for b.Loop() {
		}
	})
	if len(docs) == 0 {
		t.Skip("no corpus")
	}
	return docs, size
}

// fixedPayload is the payload size of a fixed-size encoding of numPerm
// slots, 0 for Varint.
func fixedPayload(e minhash.Encoding, bits int) int {
	switch e {
	case minhash.Raw32:
		return 4 * numPerm
	case minhash.BBit:
		return (numPerm*bits + 7) / 8
	}
	return 0
}
