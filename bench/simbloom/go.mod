module github.com/neardup/neardup/bench/simbloom

go 1.26.8

require (
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/neardup/neardup v0.0.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/go-ego/gse v0.80.3 // indirect
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/vcaesar/cedar v0.20.2 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/neardup/neardup => ../..
