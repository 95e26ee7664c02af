package sketch_test

import (
	"fmt"

	"github.com/neardup/neardup/sketch"
)

// Two documents become sketches with the default specification (MinHash
// over word 5-grams, 128 slots, threshold 0.8, 13 bands of 7 rows); their
// band keys decide whether an index makes them candidates, and their
// similarity whether they are duplicates.
func Example() {
	spec, err := sketch.Spec{}.Resolve()
	if err != nil {
		panic(err)
	}
	k, err := spec.NewSketcher()
	if err != nil {
		panic(err)
	}
	var a, b sketch.Sketch
	k.Sketch(&a, "The quick brown fox jumps over the lazy dog near the river bank today.")
	k.Sketch(&b, "The QUICK brown fox jumps over the lazy dog near the river bank, today!")
	sim, _ := spec.Similarity(&a, &b)
	ka, kb := spec.AppendKeys(nil, &a), spec.AppendKeys(nil, &b)
	shared := 0
	for i := range ka {
		if ka[i] == kb[i] {
			shared++
		}
	}
	fmt.Printf("%s, %dx%d bands, similarity %.2f, %d of %d band keys shared, duplicate: %v\n",
		spec.Method, spec.MinHash.Bands, spec.MinHash.Rows, sim, shared, len(ka), spec.Duplicate(&a, &b))
	// Output: minhash, 13x7 bands, similarity 1.00, 13 of 13 band keys shared, duplicate: true
}
