package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Health of a Redis index is not asked of Redis on every call: Redis runs
// one command or script at a time, and a batch write's add script (a whole
// request of 10,000 documents, atomic) keeps every other client waiting
// for a second or more, so a /healthz that pinged Redis answered only
// after the writes queued before it (TestServeFloodWriteRedis: over the
// prober's 2 s). Instead the first Health or Status probes the index's
// server and starts a prober that reads the document count every
// healthEvery; both then answer at once from the last probe, and report
// Redis unreachable when the last probe failed or when the probe under
// way has had no answer for healthStall.
const (
	healthEvery = time.Second
	// healthStall is Redis's own default busy-reply-threshold (5 s: a
	// script running longer gets BUSY replies for every other client).
	healthStall = 5 * time.Second
)

// redisHealth is what the prober last found.
type redisHealth struct {
	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc // stops the prober (Close)
	done    chan struct{}      // closed when the prober has stopped
	ready   chan struct{}      // closed when the first probe has answered
	docs    int64              // the count the last answer gave
	err     error              // of the last probe
	since   time.Time          // when the probe under way began; zero when none is
	stall   time.Duration      // healthStall; shorter in tests
}

// Status returns the number of documents and Health as the last probe of
// the server found them (at most healthEvery old), without waiting on a
// server busy with other clients' scripts.
func (r *Redis) Status() (int64, error) {
	if r.closed.Load() {
		return 0, ErrClosed
	}
	h := &r.health
	h.mu.Lock()
	if !h.started {
		h.started = true
		ctx, cancel := context.WithCancel(context.Background())
		h.cancel, h.done, h.ready = cancel, make(chan struct{}), make(chan struct{})
		if h.stall == 0 {
			h.stall = healthStall
		}
		h.mu.Unlock()
		r.probe(ctx) // the first answer is Redis's own
		close(h.ready)
		go r.prober(ctx)
		h.mu.Lock()
	}
	ready := h.ready
	h.mu.Unlock()
	<-ready
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.since.IsZero() {
		if d := time.Since(h.since); d >= h.stall {
			return h.docs, fmt.Errorf("%w: %s: no answer for %v", ErrUnreachable, r.loc, d.Round(time.Millisecond))
		}
	}
	return h.docs, h.err
}

// Health is nil when the index's server answers (Status).
func (r *Redis) Health() error {
	_, err := r.Status()
	return err
}

// prober probes the server every healthEvery until ctx is done.
func (r *Redis) prober(ctx context.Context) {
	defer close(r.health.done)
	t := time.NewTicker(healthEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.probe(ctx)
		}
	}
}

// probe reads the document count from the index's own server (its hash
// slot's master on a cluster) and records the answer.
func (r *Redis) probe(ctx context.Context) {
	h := &r.health
	h.mu.Lock()
	h.since = time.Now()
	stall := h.stall
	h.mu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, stall)
	n, err := r.c.Get(pctx, r.docsKey()).Int64()
	cancel()
	if errors.Is(err, redis.Nil) {
		n, err = 0, nil
	}
	if err != nil {
		err = fmt.Errorf("%w: %s: %v", ErrUnreachable, r.loc, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.since = time.Time{}
	if ctx.Err() != nil {
		return // closing: the last answer stands
	}
	h.err = err
	if err == nil {
		h.docs = n
	}
}

// stopHealth stops the prober and waits for it.
func (r *Redis) stopHealth() {
	h := &r.health
	h.mu.Lock()
	cancel, done := h.cancel, h.done
	h.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}
