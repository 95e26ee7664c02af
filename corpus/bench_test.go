package corpus

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchWords makes pseudo-random English-looking text.
func benchText(rng *rand.Rand, words int) string {
	vocab := strings.Fields("the of and to in is was that for it with as his on be at by had are but from or have an they which one you were all we her she there would their will when who him been has more if no out do so can what up said about other into than its time only could new them man some these then two first may any like now my such make over our even most me state after also made many did must before back see through way where get much go well your know should down work year because come people just")
	var b strings.Builder
	for i := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocab[rng.IntN(len(vocab))])
	}
	return b.String()
}

// benchJSONL is about 10 MB of JSONL: 20,000 records of about 500 bytes.
func benchJSONL() (data []byte, docs int) {
	rng := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	for i := range 20000 {
		fmt.Fprintf(&b, `{"id": "doc-%d", "url": "https://example.com/%d", "text": %q, "score": %d}`+"\n", i, i, benchText(rng, 80), i%100)
	}
	return b.Bytes(), 20000
}

// benchWARC is about 10 MB of WARC: HTML responses, one gzip member per
// record when compressed.
func benchWARC(compressed bool) (data []byte, raw int, docs int) {
	rng := rand.New(rand.NewPCG(3, 4))
	var b bytes.Buffer
	for i := range 5000 {
		html := fmt.Sprintf("<html><head><title>Page %d</title><script>var x = %d;</script></head><body><div class=nav><a href=/>Home</a></div><h1>Heading %d</h1><p>%s</p><p>%s</p></body></html>", i, i, i, benchText(rng, 120), benchText(rng, 120))
		rec := response(fmt.Sprintf("https://example.com/page/%d", i), "Content-Type: text/html; charset=utf-8\r\n", html)
		raw += len(rec)
		if compressed {
			b.WriteString(gzipMembers(rec))
		} else {
			b.WriteString(rec)
		}
	}
	return b.Bytes(), raw, 5000
}

// benchRead reads every document of the reader made by open; it reports
// MB/s of decompressed input and docs/s.
func benchRead(b *testing.B, size int, open func() Reader) {
	b.ReportAllocs()
	b.SetBytes(int64(size))
	total := 0
	for b.Loop() {
		r := open()
		n := 0
		for r.Next() {
			n++
		}
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
		r.Close()
		total += n
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "docs/s")
}

func BenchmarkReadJSONL(b *testing.B) {
	data, _ := benchJSONL()
	for _, c := range []struct {
		name string
		comp compression
	}{{"plain", compNone}, {"gzip", compGzip}, {"zstd", compZstd}} {
		in := compressFor(b, "x."+map[compression]string{compNone: "jsonl", compGzip: "gz", compZstd: "zst"}[c.comp], data)
		b.Run(c.name, func(b *testing.B) {
			benchRead(b, len(data), func() Reader {
				return NewJSONL(newDecoder(io.NopCloser(bytes.NewReader(in)), c.comp), "bench.jsonl", Options{})
			})
		})
	}
}

func BenchmarkReadLines(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	var sb strings.Builder
	for range 20000 {
		sb.WriteString(benchText(rng, 80) + "\n")
	}
	data := []byte(sb.String())
	benchRead(b, len(data), func() Reader { return NewLines(io.NopCloser(bytes.NewReader(data)), "bench.txt", Options{}) })
}

func BenchmarkReadWARC(b *testing.B) {
	for _, compressed := range []bool{false, true} {
		data, raw, _ := benchWARC(compressed)
		name := "plain"
		comp := compNone
		if compressed {
			name, comp = "gzip-per-record", compGzip
		}
		b.Run(name, func(b *testing.B) {
			benchRead(b, raw, func() Reader {
				return NewWARC(newDecoder(io.NopCloser(bytes.NewReader(data)), comp), "bench.warc", Options{})
			})
		})
	}
	// A real archive: 128 archived HTML pages in many charsets.
	sample := filepath.Join(sampleDir, "wayback-snapshot-topic-02.warc.gz")
	if data, err := os.ReadFile(sample); err == nil {
		b.Run("wayback-topic-02", func(b *testing.B) {
			benchRead(b, 8462517, func() Reader {
				return NewWARC(newDecoder(io.NopCloser(bytes.NewReader(data)), compGzip), sample, Options{})
			})
		})
	}
}

func BenchmarkWriteJSONL(b *testing.B) {
	data, n := benchJSONL()
	var docs []Document
	r := NewJSONL(io.NopCloser(bytes.NewReader(data)), "x", Options{})
	for r.Next() {
		d := *r.Doc()
		d.Raw = bytes.Clone(d.Raw)
		docs = append(docs, d)
	}
	dir := b.TempDir()
	for _, name := range []string{"out.jsonl", "out.jsonl.zst", "out.parquet"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				w, err := Create(filepath.Join(dir, name))
				if err != nil {
					b.Fatal(err)
				}
				for i := range docs {
					w.Write(&docs[i])
				}
				if err := w.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
		})
	}
}
