package simhash_test

import (
	"fmt"

	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
)

// The worked example of seed 004: five keywords with weights 5, 2, 3, 1, 4
// and 6-bit hashes.
func ExampleHasher_AddHash() {
	h, _ := simhash.New(simhash.Options{Bits: 6})
	for _, kw := range []struct {
		hash   uint64
		weight float64
	}{{0b100101, 5}, {0b101011, 2}, {0b100111, 3}, {0b101111, 1}, {0b111011, 4}} {
		h.AddHash(simhash.Fingerprint{Lo: kw.hash}, kw.weight)
	}
	fmt.Printf("%06b\n", h.Sum().Lo)
	// Output: 100111
}

// Fingerprints of word 2-grams weighted by count, and an index that finds
// the documents within distance 3.
func ExampleIndex() {
	sh, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: 2})
	h, _ := simhash.New(simhash.Options{Bits: 64})
	docs := []string{
		"the quick brown fox jumps over the lazy dog near the river bank today",
		"the quick brown fox jumps over the lazy dog near the river bank today!",
		"a completely different sentence about bloom filters and hashing",
	}
	idx, _ := simhash.NewIndex(64, 3, simhash.DesignOptions{N: len(docs)})
	var feats []uint64
	for i, d := range docs {
		feats = sh.AppendHashes(feats[:0], d)
		fp := h.Hash(feats)
		for _, m := range idx.Query(fp, nil) {
			fmt.Printf("doc %d is within %d bits of doc %d\n", i, m.Distance, m.ID)
		}
		_ = idx.Insert(i, fp)
	}
	fmt.Println(idx.Design().Tables, "tables")
	// Output:
	// doc 1 is within 0 bits of doc 0
	// 4 tables
}
