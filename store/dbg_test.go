package store

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/neardup/neardup/internal/redistest"
)

func TestDbgSpread(t *testing.T) {
	url := redistest.Server(t).URL("dbg") + "&layout=spread"
	r := mustCreateRedis(t, url, DefaultParams(MinHash))
	sk, _ := r.NewSketcher()
	rng := rand.New(rand.NewPCG(12, 3))
	var batch []Doc
	for f := range 5 {
		batch = append(batch, Doc{ID: fmt.Sprint("f", f), Sketch: sk.Sketch(family(words(rng, 200), "x"))})
	}
	rs, err := r.CheckAndAddBatch(batch, 0)
	for _, x := range rs {
		t.Logf("%+v", x)
	}
	t.Log(err)
}
