package jaccard_test

import (
	"fmt"

	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/shingle"
)

func ExampleJoin() {
	docs := []string{
		"the quick brown fox jumps over the lazy dog",
		"the quick brown fox jumped over the lazy dog",
		"a completely different sentence about cats",
		"the quick brown fox jumps over the lazy dog",
	}
	sh, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: 1})
	sets := make([][]uint64, len(docs))
	for i, d := range docs {
		sets[i] = sh.AppendSet(nil, d)
	}
	err := jaccard.Join(sets, 0.7, func(i, j int, sim float64) {
		fmt.Printf("%d %d %.3f\n", i, j, sim)
	})
	if err != nil {
		fmt.Println(err)
	}
	// Unordered output:
	// 0 3 1.000
	// 0 1 0.778
	// 1 3 0.778
}

func ExampleIndex() {
	sh, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: 2})
	ix, _ := jaccard.NewIndex(0.5)
	for _, d := range []string{
		"to be or not to be that is the question",
		"whether tis nobler in the mind to suffer",
		"to be or not to be that is the real question",
	} {
		fmt.Println("set", ix.Len())
		_, err := ix.Add(sh.AppendSet(nil, d), func(j int, sim float64) {
			fmt.Printf("  similar to set %d: %.3f\n", j, sim)
		})
		if err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// set 0
	// set 1
	// set 2
	//   similar to set 0: 0.700
}
