package lsh_test

import (
	"fmt"

	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
)

func ExampleOptimal() {
	p, _ := lsh.Optimal(0.8, 128, lsh.Weights{})
	fmt.Printf("%v threshold %.3f P(0.8) %.3f P(0.5) %.4f\n", p, p.Threshold(), p.Probability(0.8), p.Probability(0.5))
	// The area rule catches only 40% of pairs at exactly 0.8; ask for 95%:
	r, _ := lsh.ForRecall(0.8, 128, 0.95)
	fmt.Printf("%v P(0.8) %.3f\n", r, r.Probability(0.8))
	// Output:
	// 9x13 threshold 0.844 P(0.8) 0.399 P(0.5) 0.0011
	// 13x7 P(0.8) 0.953
}

func ExampleIndex() {
	sh, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: 2})
	h, _ := minhash.New(minhash.Options{})
	docs := []string{
		"the quick brown fox jumps over the lazy dog",
		"a completely different sentence about cats",
		"the quick brown fox jumps over the lazy dog again",
	}
	ix, _ := lsh.New(lsh.Params{Bands: 32, Rows: 4}, 128, lsh.Options{KeepSignatures: true})
	for i, d := range docs[:2] {
		ix.Insert(uint32(i), h.Sign(nil, sh.AppendSet(nil, d)))
	}
	cands, _, _ := ix.QuerySimilar(nil, h.Sign(nil, sh.AppendSet(nil, docs[2])), 0.5, nil)
	for _, c := range cands {
		fmt.Println(c.ID, c.Similarity > 0.6)
	}
	// Output: 0 true
}
