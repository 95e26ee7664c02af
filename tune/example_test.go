package tune_test

import (
	"fmt"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/tune"
)

// A sweep of minhash over two shingle sizes and two thresholds.
func ExampleSpace_Configs() {
	base := dedup.Options{}
	sp := tune.Space{
		Shingles:   []shingle.Options{{Unit: shingle.Word, N: 3}, {Unit: shingle.Char, N: 5}},
		Thresholds: []float64{0.7, 0.8},
	}
	for _, c := range sp.Configs(base) {
		fmt.Println(tune.Label(c))
	}
	// Output:
	// word-3 t=0.7 perm=128
	// word-3 t=0.8 perm=128
	// char-5 t=0.7 perm=128
	// char-5 t=0.8 perm=128
}
