package store

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/sketch"
)

// benchDocs makes n texts of about 1 KB.
func benchDocs(n int) []string {
	r := rand.New(rand.NewPCG(9, 9))
	docs := make([]string, n)
	for i := range docs {
		var b strings.Builder
		for b.Len() < 1000 {
			fmt.Fprintf(&b, "w%d ", r.IntN(50000))
		}
		docs[i] = b.String()
	}
	return docs
}

func BenchmarkSketch(b *testing.B) {
	docs := benchDocs(256)
	for _, p := range []sketch.Spec{
		sketch.Default(sketch.MinHash),
		{Method: sketch.MinHash, MinHash: sketch.MinHashSpec{Family: minhash.MultiplyShift}},
		{Method: sketch.MinHash, MinHash: sketch.MinHashSpec{Family: minhash.OPH}},
		sketch.Default(sketch.SimHash),
	} {
		name := p.Method.String()
		if p.Method == sketch.MinHash {
			name += "-" + p.MinHash.Family.String()
		}
		for _, sets := range []bool{false, true} {
			if sets && p.Method != sketch.MinHash {
				continue
			}
			b.Run(fmt.Sprintf("%s/sets=%v", name, sets), func(b *testing.B) {
				sk, err := newSketcher(p, sets)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(1000)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					sk.Sketch(docs[i%len(docs)])
					i++
				}
			})
		}
	}
}

// BenchmarkCheckAndAdd measures the store alone (no HTTP) on an index of
// 20,000 documents, with syncs.
func BenchmarkCheckAndAdd(b *testing.B) {
	for _, m := range []sketch.Method{sketch.MinHash, sketch.SimHash} {
		b.Run(m.String(), func(b *testing.B) {
			s, err := Create(b.TempDir(), sketch.Default(m), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			sk, _ := s.NewSketcher()
			docs := benchDocs(20000)
			batch := make([]Doc, 0, 1000)
			for i, d := range docs {
				k := sk.Sketch(d)
				k.Sig = append(minhash.Signature(nil), k.Sig...)
				batch = append(batch, Doc{ID: fmt.Sprint("pre", i), Sketch: k})
				if len(batch) == cap(batch) {
					if _, err := s.AddBatch(batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			sketches := make([]sketch.Sketch, 512)
			for i := range sketches {
				k := sk.Sketch(docs[i] + " new")
				k.Sig = append(minhash.Signature(nil), k.Sig...)
				sketches[i] = k
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := s.CheckAndAdd(fmt.Sprint("q", i), sketches[i%len(sketches)], 10); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
