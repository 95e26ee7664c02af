package shingle_test

import (
	"fmt"

	"github.com/neardup/neardup/shingle"
)

func Example() {
	s, err := shingle.New(shingle.Options{Unit: shingle.Word, N: 4})
	if err != nil {
		panic(err)
	}
	text := "a rose is a rose is a rose"
	fmt.Println(len(s.AppendHashes(nil, text)), "shingles,", len(s.AppendSet(nil, text)), "distinct")
	// Output: 5 shingles, 3 distinct
}
