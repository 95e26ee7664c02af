package redistest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestServerRestartKeepsAppendOnly(t *testing.T) {
	in := Server(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: in.Addr})
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	in.Kill()
	if err := in.Start(); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("after kill -9 and restart: %q, %v; want v", got, err)
	}
}

func TestCluster(t *testing.T) {
	cl := Cluster(t)
	ctx := context.Background()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	defer c.Close()
	// Keys in different slots land on different masters.
	masters := map[string]bool{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		if err := c.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatal(err)
		}
		n, err := c.MasterForKey(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		masters[n.Options().Addr] = true
	}
	if len(masters) < 2 {
		t.Fatalf("8 keys on %d masters; want the slots spread", len(masters))
	}
}
