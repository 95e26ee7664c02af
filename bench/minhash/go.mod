module github.com/neardup/neardup/bench/minhash

go 1.26.8

require (
	github.com/ekzhu/minhash-lsh v0.0.0-20171225071031-5c06ee8586a1
	github.com/neardup/neardup v0.0.0
	github.com/zeebo/xxh3 v1.1.0
)

require (
	github.com/dgryski/go-metro v0.0.0-20250106013310-edb8663e5e33 // indirect
	github.com/dgryski/go-minhash v0.0.0-20170608043002-7fe510aff544 // indirect
	github.com/dgryski/go-spooky v0.0.0-20170606183049-ed3d087f40e2 // indirect
	github.com/go-ego/gse v0.80.3 // indirect
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/vcaesar/cedar v0.20.2 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace github.com/neardup/neardup => ../..
