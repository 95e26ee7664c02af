package bloom_test

import (
	"fmt"

	"github.com/neardup/neardup/bloom"
)

// Drop repeated URLs in one pass, with memory fixed by (n, p).
func Example() {
	f, err := bloom.New(1000000, 1e-6, bloom.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d bits (%.1f per item), %d hashes\n", f.M(), float64(f.M())/1e6, f.K())
	for _, url := range []string{"https://a.example/1", "https://b.example/2", "https://a.example/1"} {
		if f.AddString(url) {
			fmt.Println("duplicate:", url)
		}
	}
	fmt.Printf("formula FPP at capacity: %.2g\n", bloom.FPP(1000000, f.M(), f.K()))
	// Output:
	// 28755200 bits (28.8 per item), 20 hashes
	// duplicate: https://a.example/1
	// formula FPP at capacity: 1e-06
}
