package store_test

import (
	"fmt"
	"log"
	"os"

	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/store"
)

// A news aggregator keeps one index on disk and asks, for each arriving
// article, whether it near-duplicates one already seen.
func Example() {
	dir, err := os.MkdirTemp("", "neardup-index")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// The defaults dedup uses too: word 5-shingles, 128 slots, 13 bands of
	// 7 rows, 0.8.
	idx, err := store.Create(dir, sketch.Default(sketch.MinHash), store.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer idx.Close()
	sk, err := idx.NewSketcher()
	if err != nil {
		log.Fatal(err)
	}
	articles := []struct{ id, text string }{
		{"a1", "The central bank raised interest rates by a quarter point on Tuesday, citing persistent inflation in services and housing."},
		{"a2", "The central bank raised interest rates by a quarter point on Tuesday, citing persistent inflation in services and housing!"},
		{"a3", "A rare comet will be visible to the naked eye this weekend for the first time in six thousand years."},
	}
	for _, a := range articles {
		r, err := idx.CheckAndAdd(a.id, sk.Sketch(a.text), 0)
		if err != nil {
			log.Fatal(err)
		}
		if r.Added {
			fmt.Printf("%s: new\n", a.id)
		} else {
			fmt.Printf("%s: duplicate of %s (similarity %.2f)\n", a.id, r.Matches[0].ID, r.Matches[0].Similarity)
		}
	}
	fmt.Println("documents:", idx.Len())
	// Output:
	// a1: new
	// a2: duplicate of a1 (similarity 1.00)
	// a3: new
	// documents: 2
}
