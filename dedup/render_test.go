package dedup

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestAppendUint32(t *testing.T) {
	check := func(v uint32) {
		if got, want := string(appendUint32([]byte("x"), v)), "x"+strconv.FormatUint(uint64(v), 10); got != want {
			t.Fatalf("appendUint32(%d) = %q, want %q", v, got, want)
		}
	}
	for p := uint64(1); p <= 1<<32; p *= 10 {
		for _, v := range []uint64{p - 1, p, p + 1} {
			if v < 1<<32 {
				check(uint32(v))
			}
		}
	}
	check(1<<32 - 1)
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		check(r.Uint32() >> r.IntN(32))
	}
}
