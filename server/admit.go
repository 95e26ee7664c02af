package server

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/neardup/neardup/internal/sysinfo"
)

// Admission control bounds the server's memory under a flood: the bodies
// being received or served total at most Config.MaxInflightBytes (a body
// counts its Content-Length, or Config.MaxBodyBytes when the length is not
// declared, reserved before a byte of it is read), and at most
// Config.MaxConcurrent requests whose bodies have arrived are served at
// once (a slow sender holds no slot while its body trickles in; the
// server's read timeout ends it). A request beyond either limit waits up
// to Config.QueueWait for room, then gets 503 with Retry-After and changes
// nothing. /healthz and
// /metrics are never held back. A request holds about twice its body: the
// body while its texts are decoded from it (the body is let go then), then
// the texts and the sketches of one chunk of documents (sketchChunkBytes).
// A batch write keeps the encoded records and keys of the chunks sketched
// (store.Index.NewBatchWrite: store.Write on the embedded store,
// store.RedisWrite on Redis) until its one write: where they outgrow the
// body (character shingles: about 7 times it), the request's charge grows
// to them (charge.growTo, after each chunk: one chunk's records late), so
// a request holds at most about twice its charge (on Redis, plus the add
// script's arguments while it runs: about 50 bytes a band key). So the
// limits bound the memory of requests in flight (docs/reliability.md
// gives the measured figures).

// Defaults of the admission limits.
const (
	DefaultMaxConcurrent = 64
	// MaxDefaultInflightBytes caps the default of Config.MaxInflightBytes,
	// which is otherwise 1/64 of the machine's memory.
	MaxDefaultInflightBytes = 128 << 20
	DefaultQueueWait        = 250 * time.Millisecond
)

// DefaultInflightBytes returns the default of Config.MaxInflightBytes:
// 1/64 of the physical memory, at most MaxDefaultInflightBytes, and never
// below maxBody (a request of the largest allowed size must fit). A
// request holds about twice its body, and the garbage collector lets the
// heap grow to twice what is live, so the requests in flight take about
// 1/16 of the memory (measured: the process grew by up to 5 times
// MaxInflightBytes under a flood of batch checks, 5.7 of batch writes).
func DefaultInflightBytes(maxBody int64) int64 {
	n := int64(MaxDefaultInflightBytes)
	if ram := sysinfo.TotalRAM(); ram > 0 {
		n = min(n, ram/64)
	}
	return max(n, maxBody)
}

type admission struct {
	conc, bytes       *semaphore.Weighted
	maxConc, maxBytes int64
	wait              time.Duration

	inflightBytes             atomic.Int64
	rejectedConc, rejectedMem atomic.Uint64
}

func newAdmission(maxConc, maxBytes int64, wait time.Duration) *admission {
	return &admission{
		conc: semaphore.NewWeighted(maxConc), bytes: semaphore.NewWeighted(maxBytes),
		maxConc: maxConc, maxBytes: maxBytes, wait: wait,
	}
}

// admitBytes reserves room for r's body, at most maxBody bytes (its
// Content-Length, or maxBody when the length is not declared), before a
// byte of it is read; it returns the request's charge, to release when
// the request is served, or an error to answer (503) when there is no
// room within the queue wait.
func (a *admission) admitBytes(ctx context.Context, r *http.Request, maxBody int64) (*charge, error) {
	n := r.ContentLength
	if n < 0 || n > maxBody {
		n = maxBody // unknown length: room for the largest body
	}
	ctx, cancel := context.WithTimeout(ctx, a.wait)
	defer cancel()
	if n > 0 && !a.bytes.TryAcquire(n) {
		if err := a.bytes.Acquire(ctx, n); err != nil {
			a.rejectedMem.Add(1)
			return nil, errorf(http.StatusServiceUnavailable, "server busy: request bodies in flight would exceed %d bytes; retry later", a.maxBytes)
		}
	}
	a.inflightBytes.Add(n)
	return &charge{a: a, n: n}, nil
}

// A charge is the room a request holds within MaxInflightBytes: its body,
// or more for a batch write whose encoded records outgrow it (growTo). A
// request holds at most about twice its charge: its body and the texts
// decoded from it, then the texts not yet sketched and the records made
// from those sketched.
type charge struct {
	a *admission
	n int64
}

// growTo makes the charge at least n bytes, waiting up to the queue
// wait for the room; an error to answer (503 with Retry-After, or 413 when
// n is more than the limit itself) when there is none. The request's work
// so far is lost then, but nothing has been written.
func (c *charge) growTo(ctx context.Context, n int64) error {
	more := n - c.n
	if more <= 0 {
		return nil
	}
	if n > c.a.maxBytes {
		return errorf(http.StatusRequestEntityTooLarge, "the batch's documents take more than %d bytes in the index's encoding, more than requests in flight may hold; send fewer documents a request", c.a.maxBytes)
	}
	if !c.a.bytes.TryAcquire(more) {
		ctx, cancel := context.WithTimeout(ctx, c.a.wait)
		defer cancel()
		if err := c.a.bytes.Acquire(ctx, more); err != nil {
			c.a.rejectedMem.Add(1)
			return &httpError{code: http.StatusServiceUnavailable, retryAfter: retryAfterBusy,
				msg: fmt.Sprintf("server busy: the requests in flight would hold more than %d bytes; nothing was changed; retry later", c.a.maxBytes)}
		}
	}
	c.a.inflightBytes.Add(more)
	c.n = n
	return nil
}

// release gives the charge's room back.
func (c *charge) release() {
	c.a.inflightBytes.Add(-c.n)
	if c.n > 0 {
		c.a.bytes.Release(c.n)
	}
}

// admitSlot takes one of the MaxConcurrent slots for a request whose body
// has been read: a client that sends its body slowly holds no slot while
// it does (issue 32: 70 connections trickling a byte every 0.5 s held all
// 64 slots, and every other request got 503 for the whole --timeout).
func (a *admission) admitSlot(ctx context.Context) (func(), error) {
	if !a.conc.TryAcquire(1) {
		ctx, cancel := context.WithTimeout(ctx, a.wait)
		defer cancel()
		if err := a.conc.Acquire(ctx, 1); err != nil {
			a.rejectedConc.Add(1)
			return nil, errorf(http.StatusServiceUnavailable, "server busy: %d requests in flight, the most it serves at once; retry later", a.maxConc)
		}
	}
	return func() { a.conc.Release(1) }, nil
}

// retryAfterBusy is the Retry-After, in seconds, of a request refused for
// want of room.
const retryAfterBusy = "1"
