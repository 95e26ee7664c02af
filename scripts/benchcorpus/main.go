// Command benchcorpus writes a reproducible benchmark corpus of web-like
// documents of about 1 KB from the wiki-slice evaluation set, for the scale
// benchmarks in docs/benchmarks.md. It is not part of neardup.
//
// Each document is a mosaic of consecutive sentences of one article (so its
// text is real prose), about --size bytes long, starting at a random
// sentence. A fraction --dup of the documents are near-duplicates of an
// earlier document: a copy with a few words deleted, replaced or inserted
// (edit rate 0-3%), like the light edits of re-published pages. The output
// is JSONL ({"id","text"}), zstd-compressed when the name ends in .zst.
//
//	go run ./scripts/benchcorpus -n 1000000 -o /tmp/bench-1m.jsonl.zst
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

func main() {
	src := flag.String("src", "../shared/data/wiki-slice/docs.jsonl.gz", "wiki-slice docs.jsonl.gz (or the same recompressed as .zst)")
	n := flag.Int("n", 100000, "documents to write")
	size := flag.Int("size", 1000, "approximate document size in bytes")
	dup := flag.Float64("dup", 0.2, "fraction of near-duplicate documents")
	seed := flag.Uint64("seed", 1, "random seed")
	out := flag.String("o", "bench.jsonl.zst", "output file (.jsonl or .jsonl.zst)")
	flag.Parse()
	if err := run(*src, *n, *size, *dup, *seed, *out); err != nil {
		fmt.Fprintln(os.Stderr, "benchcorpus:", err)
		os.Exit(1)
	}
}

func run(src string, n, size int, dup float64, seed uint64, out string) error {
	articles, err := loadSentences(src, size)
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	var w io.Writer = f
	var zw *zstd.Encoder
	if strings.HasSuffix(out, ".zst") {
		if zw, err = zstd.NewWriter(f, zstd.WithEncoderLevel(zstd.SpeedDefault)); err != nil {
			return err
		}
		w = zw
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var texts []string // what near-duplicates copy from (bounded reservoir)
	const pool = 50000
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range n {
		var text string
		if len(texts) > 0 && r.Float64() < dup {
			text = edit(r, texts[r.IntN(len(texts))])
		} else {
			// Start where at least size bytes of the article remain, so
			// every document is whole prose, not a stub at an article's end.
			a := articles[r.IntN(len(articles))]
			j := r.IntN(a.starts)
			var b strings.Builder
			for b.Len() < size && j < len(a.sents) {
				if b.Len() > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(a.sents[j])
				j++
			}
			text = b.String()
		}
		if len(texts) < pool {
			texts = append(texts, text)
		} else {
			texts[r.IntN(pool)] = text
		}
		if err := enc.Encode(map[string]string{"id": fmt.Sprintf("doc-%08d", i), "text": text}); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return err
		}
	}
	return f.Close()
}

// edit returns text with 0-3% of its words deleted, replaced or doubled.
func edit(r *rand.Rand, text string) string {
	words := strings.Fields(text)
	edits := r.IntN(len(words)*3/100 + 1)
	for range edits {
		if len(words) < 2 {
			break
		}
		k := r.IntN(len(words))
		switch r.IntN(3) {
		case 0:
			words = append(words[:k], words[k+1:]...)
		case 1:
			words[k] = words[r.IntN(len(words))]
		default:
			words = append(words[:k+1], words[k:]...)
		}
	}
	return strings.Join(words, " ")
}

// article is the sentences of one article; a document may start at any
// of the first starts sentences.
type article struct {
	sents  []string
	starts int
}

// loadSentences splits every article of the wiki-slice into sentences and
// keeps the articles long enough for documents of size bytes.
func loadSentences(path string, size int) ([]article, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The source is gzip (as in shared/data), or zstd when its name ends
	// in .zst (smaller to carry to another machine: zstd -19).
	var src io.Reader
	if strings.HasSuffix(path, ".zst") {
		zr, err := zstd.NewReader(f)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		src = zr
	} else {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, err
		}
		src = gz
	}
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var out []article
	for sc.Scan() {
		var d struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return nil, err
		}
		var sents []string
		for _, para := range strings.Split(d.Text, "\n") {
			for _, s := range strings.SplitAfter(para, ". ") {
				if s = strings.TrimSpace(s); len(s) > 20 {
					sents = append(sents, s)
				}
			}
		}
		// The last start with at least size bytes after it.
		rest, starts := 0, len(sents)
		for starts > 0 && rest < size {
			starts--
			rest += len(sents[starts]) + 1
		}
		if rest >= size && starts > 0 {
			out = append(out, article{sents: sents, starts: starts + 1})
		}
	}
	return out, sc.Err()
}
