package minhash_test

import (
	"fmt"

	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
)

func Example() {
	sh, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: 2})
	a := sh.AppendSet(nil, "the quick brown fox jumps over the lazy dog and runs far away")
	b := sh.AppendSet(nil, "the quick brown fox leaps over the lazy dog and runs far away")

	h, _ := minhash.New(minhash.Options{NumPerm: 256})
	sa, sb := h.Sign(nil, a), h.Sign(nil, b)
	est, _ := minhash.Estimate(sa, sb)
	fmt.Printf("exact %.3f, estimate within 0.1: %v\n", jaccard.Set(a, b), est > jaccard.Set(a, b)-0.1 && est < jaccard.Set(a, b)+0.1)
	// Output: exact 0.714, estimate within 0.1: true
}

func ExampleEstimateBottom() {
	sh, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: 1})
	a := sh.AppendSet(nil, "a rose is a rose is a rose")
	b := sh.AppendSet(nil, "a rose is a flower which is a rose")
	bottom, _ := minhash.NewBottom(8, 0)
	// With s at least the size of the union the estimate is exact (seed 003).
	fmt.Println(minhash.EstimateBottom(bottom.Sketch(nil, a), bottom.Sketch(nil, b), 8))
	// Output: 0.6
}
