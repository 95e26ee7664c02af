package jaccard_test

import (
	"fmt"

	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/shingle"
)

func Example() {
	s, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: 1})
	a, b := "a rose is a rose is a rose", "a rose is a flower which is a rose"
	fmt.Printf("set %.1f, bag %.1f\n",
		jaccard.Set(s.AppendSet(nil, a), s.AppendSet(nil, b)),
		jaccard.Bag(s.AppendBag(nil, a), s.AppendBag(nil, b)))
	// Output: set 0.6, bag 0.7
}
