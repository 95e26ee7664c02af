package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/neardup/neardup/internal/redistest"
	"github.com/neardup/neardup/sketch"
)

// busyScript keeps the server busy for ARGV[1] milliseconds, as a batch
// write's add script does (a script cannot sleep).
var busyScript = redis.NewScript(`local t0 = redis.call('TIME')
local start = t0[1] * 1000000 + t0[2]
while true do
  local t = redis.call('TIME')
  if t[1] * 1000000 + t[2] - start > tonumber(ARGV[1]) * 1000 then break end
end
return 1`)

// TestRedisHealthAnswersAtOnce: while another client's script keeps Redis
// busy, Status answers at once from the last probe (the document count
// included) instead of waiting behind the script, and reports Redis
// unreachable once a probe has gone unanswered for the stall limit, when
// the server is gone, and healthy again when it is back.
func TestRedisHealthAnswersAtOnce(t *testing.T) {
	in := redistest.Server(t)
	r := mustCreateRedis(t, in.URL("health"), sketch.Default(sketch.MinHash))
	sk, err := r.NewSketcher()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.AddBatch([]Doc{{ID: "a", Sketch: sk.Sketch("one two three four five six seven")}, {ID: "b", Sketch: sk.Sketch("eight nine ten eleven twelve")}}); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Status(); n != 2 || err != nil {
		t.Fatalf("Status = %d, %v; want 2, nil", n, err)
	}
	other := redis.NewClient(&redis.Options{Addr: in.Addr, ReadTimeout: -1})
	defer other.Close()
	busy := func(ms int) chan error {
		ch := make(chan error, 1)
		go func() { ch <- busyScript.Run(context.Background(), other, nil, ms).Err() }()
		time.Sleep(300 * time.Millisecond) // the script is running
		return ch
	}
	// A 2.5 s script: the answers come at once, healthy, with the count.
	done := busy(2500)
	var worst time.Duration
	for range 10 {
		t0 := time.Now()
		n, err := r.Status()
		worst = max(worst, time.Since(t0))
		if n != 2 || err != nil {
			t.Errorf("Status while a script runs = %d, %v; want 2, nil", n, err)
		}
		time.Sleep(150 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if worst > 200*time.Millisecond {
		t.Errorf("Status took %v while a script ran: it waited on Redis", worst)
	}
	// A script past the stall limit: unreachable, answered at once.
	r.health.mu.Lock()
	r.health.stall = 700 * time.Millisecond
	r.health.mu.Unlock()
	time.Sleep(1200 * time.Millisecond) // a probe with the short limit
	done = busy(3000)
	deadline := time.Now().Add(3 * time.Second)
	for {
		t0 := time.Now()
		_, err := r.Status()
		if d := time.Since(t0); d > 200*time.Millisecond {
			t.Errorf("Status took %v while a script ran", d)
		}
		if errors.Is(err, ErrUnreachable) {
			t.Logf("a script past the stall limit: %v", err)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Status = %v with a probe unanswered for 3 s, want ErrUnreachable", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	<-done // BUSY past the server's own limit, or nil
	waitHealth := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, err := r.Status()
			if (err == nil) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Status = %v 5 s on, want healthy %v", err, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitHealth(true)
	in.Kill()
	waitHealth(false)
	if err := in.Start(); err != nil {
		t.Fatal(err)
	}
	waitHealth(true)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Status(); !errors.Is(err, ErrClosed) {
		t.Errorf("Status after Close = %v, want ErrClosed", err)
	}
}
