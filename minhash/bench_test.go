package minhash

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/neardup/neardup/shingle"
)

// benchDocs returns the fixture texts, one document each.
func benchDocs(b *testing.B) ([]string, int) {
	f, err := os.Open("testdata/pairs.tsv")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var docs []string
	size := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		x, y, _ := strings.Cut(strings.ToLower(sc.Text()), "\t")
		docs = append(docs, x, y)
		size += len(x) + len(y)
	}
	return docs, size
}

// BenchmarkSign measures text to signature (word 5-gram hashing included)
// at 128 slots, per family. One op is the whole fixture (180 documents).
func BenchmarkSign(b *testing.B) {
	docs, size := benchDocs(b)
	for _, fam := range families {
		b.Run(fam.String(), func(b *testing.B) {
			sh, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: 5})
			h, _ := New(Options{Family: fam})
			var hashes []uint64
			sig := make(Signature, 0, 128)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				for _, d := range docs {
					hashes = sh.AppendHashes(hashes[:0], d)
					sig = h.Sign(sig, hashes)
				}
			}
			b.ReportMetric(float64(len(docs))*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
		})
	}
}

// BenchmarkShingleOnly is the shingling share of BenchmarkSign.
func BenchmarkShingleOnly(b *testing.B) {
	docs, size := benchDocs(b)
	sh, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: 5})
	var hashes []uint64
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range docs {
			hashes = sh.AppendHashes(hashes[:0], d)
		}
	}
}
