// Command nearthreshold writes a JSONL corpus made to stress a Jaccard
// threshold: families of documents whose word 5-gram Jaccard similarity to
// the family's base document is spread just below and above the
// threshold, as templated pages are. Most variants sit in
// [threshold-0.08, threshold), where a MinHash estimate decides wrongly
// often enough for single linkage to chain unrelated variants.
//
//	go run ./scripts/nearthreshold -families 2000 -variants 10 -o near.jsonl
//
// With -tables it writes repetitive texts instead: number tables that are
// mostly one repeated token with a few random numbers, where the repeated
// shingles dominate count-weighted SimHash fingerprints although two
// tables share almost nothing else (each base has -variants copies with
// one number changed, the true duplicates):
//
//	go run ./scripts/nearthreshold -tables -families 1000 -variants 1 -o tables.jsonl
//
// A variant replaces one contiguous span of m words of the base: with N
// words, the base has N-4 shingles and the variant shares the N-4-(m+4)
// that do not overlap the span, so J = s/(2(N-4)-s) for s shared. The
// output is deterministic for a seed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"strings"
)

func main() {
	families := flag.Int("families", 2000, "base documents")
	variants := flag.Int("variants", 10, "variants of each base")
	words := flag.Int("words", 300, "words per document")
	threshold := flag.Float64("threshold", 0.8, "the Jaccard threshold to stress")
	below := flag.Float64("below", 0.7, "share of variants just below the threshold")
	seed := flag.Uint64("seed", 1, "random seed")
	out := flag.String("o", "near.jsonl", "output file")
	tables := flag.Bool("tables", false, "write repetitive number tables instead")
	flag.Parse()
	if *words < 20 || *families < 1 || *variants < 0 || !(*threshold > 0.1 && *threshold < 1) {
		log.Fatal("nearthreshold: bad flags")
	}
	r := rand.New(rand.NewPCG(*seed, 7))
	vocab := make([]string, 20000)
	for i := range vocab {
		var b strings.Builder
		for range 3 + r.IntN(6) {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		vocab[i] = b.String()
	}
	word := func() string { return vocab[r.IntN(len(vocab))] }
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	if *tables {
		for fam := range *families {
			base := make([]string, *words)
			for i := range base {
				base[i] = "0"
				if r.IntN(10) == 0 {
					base[i] = fmt.Sprint(1 + r.IntN(999))
				}
			}
			if err := enc.Encode(map[string]string{"id": fmt.Sprintf("t%d", fam), "text": strings.Join(base, " ")}); err != nil {
				log.Fatal(err)
			}
			for v := range *variants {
				doc := append([]string(nil), base...)
				doc[r.IntN(len(doc))] = fmt.Sprint(1 + r.IntN(999))
				if err := enc.Encode(map[string]string{"id": fmt.Sprintf("t%d-v%d", fam, v), "text": strings.Join(doc, " ")}); err != nil {
					log.Fatal(err)
				}
			}
		}
		*families = 0
	}
	n := *words
	total := float64(n - 4)
	for fam := range *families {
		base := make([]string, n)
		for i := range base {
			base[i] = word()
		}
		write := func(id string, toks []string) {
			if err := enc.Encode(map[string]string{"id": id, "text": strings.Join(toks, " ")}); err != nil {
				log.Fatal(err)
			}
		}
		write(fmt.Sprintf("f%d", fam), base)
		for v := range *variants {
			var j float64
			if r.Float64() < *below {
				j = *threshold - 0.08*r.Float64()
			} else {
				j = *threshold + (0.98-*threshold)*r.Float64()
			}
			// shared s = 2(N-4) j / (1+j); the span kills m+4 shingles.
			s := 2 * total * j / (1 + j)
			m := max(1, int(total-s)-4)
			m = min(m, n-1)
			start := r.IntN(n - m + 1)
			doc := append([]string(nil), base...)
			for i := start; i < start+m; i++ {
				doc[i] = word()
			}
			write(fmt.Sprintf("f%d-v%d", fam, v), doc)
		}
	}
	if err := w.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}
