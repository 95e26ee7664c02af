package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/neardup/neardup/internal/redistest"
	"github.com/neardup/neardup/sketch"
)

// redisCPU is the CPU time (user + system, seconds) redis-server has used.
func redisCPU(b *testing.B, addr string) float64 {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var s float64
	for line := range strings.SplitSeq(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, _ := strconv.ParseFloat(v, 64)
			s += f
		}
	}
	return s
}

// BenchmarkRedisCheckAndAdd measures check-and-add of new documents, one
// per call and in batches of 100, with the CPU time of redis-server per
// document (redis-us/doc) beside the client's.
func BenchmarkRedisCheckAndAdd(b *testing.B) {
	in := redistest.Server(b)
	texts := testCorpus(9, 20000)
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprint("batch=", batch), func(b *testing.B) {
			r := mustCreateRedis(b, in.URL(fmt.Sprint("bench", batch)), sketch.Default(sketch.MinHash))
			sk, _ := r.NewSketcher()
			docs := make([]Doc, len(texts))
			for i, x := range texts {
				docs[i] = Doc{ID: fmt.Sprint("d", i), Sketch: sk.Sketch(x)}
				docs[i].Sketch.Sig = append(docs[i].Sketch.Sig[:0:0], docs[i].Sketch.Sig...)
			}
			c0 := redisCPU(b, in.Addr)
			n := 0
			b.ResetTimer()
			for b.Loop() {
				lo := n % len(docs)
				hi := min(lo+batch, len(docs))
				if _, err := r.CheckAndAddBatch(docs[lo:hi], 1); err != nil {
					b.Fatal(err)
				}
				n += hi - lo
			}
			b.StopTimer()
			b.ReportMetric((redisCPU(b, in.Addr)-c0)*1e6/float64(n), "redis-us/doc")
		})
	}
}
