//go:build !cgo

// Without cgo the binding cannot be built: this file keeps the package
// (and `CGO_ENABLED=0 go build ./...`) building. scripts/wheel builds the
// real library with cgo and -buildmode=c-shared.
package main

func main() {}
