// Command store is the load generator of the persistent index and its HTTP
// API (docs/bench/store.md). It is not part of `go test`.
//
//	go run ./bench/store gen -n 1000000 > docs.jsonl        synthetic ~1 KB documents
//	go run ./bench/store http -addr http://127.0.0.1:8080 -mode check-and-add -conns 64 -duration 30s
//	go run ./bench/store http ... -mode batch -batch 100
//	go run ./bench/store http ... -mode add -ack-log acked.txt      record acknowledged ids
//	go run ./bench/store verify -addr ... -ids acked.txt            check they are all there
//
// Documents are sentences of words drawn from a Zipf distribution over a
// 50,000-word vocabulary (about 1 KB each); -dup makes that fraction of
// the documents near-duplicates (a few words changed) of earlier ones.
// http runs a closed loop: -conns clients each send a request, wait for the
// answer, and send the next, for -duration or -n requests, whichever ends
// first; it prints throughput and latency percentiles.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: store gen|http [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "http":
		err = load(os.Args[2:])
	case "verify":
		err = verify(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "store:", err)
		os.Exit(1)
	}
}

// docGen makes synthetic documents.
type docGen struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	vocab []string
	prev  [][]int // recent documents, for near-duplicates
	dup   float64
	buf   []int
}

var vocabulary = func() []string {
	r := rand.New(rand.NewPCG(1, 2))
	v := make([]string, 50000)
	for i := range v {
		n := 2 + r.IntN(8)
		b := make([]byte, n)
		for j := range b {
			b[j] = byte('a' + r.IntN(26))
		}
		v[i] = string(b)
	}
	return v
}()

func newGen(seed uint64, dup float64) *docGen {
	r := rand.New(rand.NewPCG(seed, 7))
	return &docGen{r: r, zipf: rand.NewZipf(r, 1.1, 10, uint64(len(vocabulary)-1)), vocab: vocabulary, dup: dup}
}

// next appends one document's text (about 1 KB) to dst.
func (g *docGen) next(dst []byte) []byte {
	var words []int
	if len(g.prev) > 0 && g.r.Float64() < g.dup {
		words = slices.Clone(g.prev[g.r.IntN(len(g.prev))])
		for range 1 + g.r.IntN(3) {
			words[g.r.IntN(len(words))] = int(g.zipf.Uint64())
		}
	} else {
		words = g.buf[:0]
		n := 0
		for n < 1000 {
			w := int(g.zipf.Uint64())
			words = append(words, w)
			n += len(g.vocab[w]) + 1
		}
		words = slices.Clone(words)
		g.buf = words[:0]
	}
	if len(g.prev) < 1000 {
		g.prev = append(g.prev, words)
	} else {
		g.prev[g.r.IntN(len(g.prev))] = words
	}
	for i, w := range words {
		if i > 0 {
			dst = append(dst, ' ')
		}
		dst = append(dst, g.vocab[w]...)
	}
	return dst
}

func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	n := fs.Int("n", 1000, "documents")
	seed := fs.Uint64("seed", 1, "random seed")
	dup := fs.Float64("dup", 0.05, "fraction of near-duplicates")
	prefix := fs.String("prefix", "d", "id prefix")
	fs.Parse(args)
	g := newGen(*seed, *dup)
	w := bufioWriter(os.Stdout)
	var line []byte
	for i := range *n {
		line = append(line[:0], `{"id":"`...)
		line = append(line, *prefix...)
		line = strconv.AppendInt(line, int64(i), 10)
		line = append(line, `","text":"`...)
		line = g.next(line)
		line = append(line, "\"}\n"...)
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return w.Flush()
}

// unbuffered writes every acknowledged id at once, so that none is lost
// if the load generator itself is stopped.
type unbuffered struct{ io.Writer }

func (unbuffered) Flush() error { return nil }

type flusher interface {
	io.Writer
	Flush() error
}

func bufioWriter(w io.Writer) flusher {
	return &bufWriter{w: w, buf: make([]byte, 0, 1<<20)}
}

type bufWriter struct {
	w   io.Writer
	buf []byte
}

func (b *bufWriter) Write(p []byte) (int, error) {
	if len(b.buf)+len(p) > cap(b.buf) {
		if err := b.Flush(); err != nil {
			return 0, err
		}
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *bufWriter) Flush() error {
	_, err := b.w.Write(b.buf)
	b.buf = b.buf[:0]
	return err
}

type report struct {
	Mode       string  `json:"mode"`
	Conns      int     `json:"conns"`
	Batch      int     `json:"batch"`
	Seconds    float64 `json:"seconds"`
	Requests   int64   `json:"requests"`
	Documents  int64   `json:"documents"`
	Errors     int64   `json:"errors"`
	Added      int64   `json:"added"`
	Duplicates int64   `json:"duplicates"`
	ReqPerSec  float64 `json:"requests_per_second"`
	DocsPerSec float64 `json:"documents_per_second"`
	P50ms      float64 `json:"p50_ms"`
	P90ms      float64 `json:"p90_ms"`
	P99ms      float64 `json:"p99_ms"`
	P999ms     float64 `json:"p999_ms"`
	MaxMs      float64 `json:"max_ms"`
	FirstError string  `json:"first_error,omitempty"`
}

func load(args []string) error {
	fs := flag.NewFlagSet("http", flag.ExitOnError)
	addr := fs.String("addr", "http://127.0.0.1:8080", "server URL; several, comma-separated, share the clients round-robin (servers of one shared index)")
	mode := fs.String("mode", "check-and-add", "check, check-and-add, add or batch (batch check-and-add)")
	conns := fs.Int("conns", 32, "concurrent clients")
	batch := fs.Int("batch", 100, "documents per request in batch mode")
	duration := fs.Duration("duration", 20*time.Second, "run time limit")
	maxReq := fs.Int64("n", 0, "stop after this many requests (0: no limit)")
	dup := fs.Float64("dup", 0.05, "fraction of near-duplicates")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "random seed (ids are unique per seed)")
	token := fs.String("token", "", "bearer token")
	warmup := fs.Duration("warmup", 2*time.Second, "run this long before measuring")
	ackLog := fs.String("ack-log", "", "append the id of every acknowledged added document to this file")
	maxErrs := fs.Int64("max-errors", 0, "stop after this many failed requests (0: never)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the load generator to this file")
	fs.Parse(args)
	if *cpuProfile != "" {
		stop, err := profileCPU(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	path := map[string]string{"check": "/v1/check", "check-and-add": "/v1/check-and-add", "add": "/v1/add", "batch": "/v1/batch/check-and-add"}[*mode]
	if path == "" {
		return fmt.Errorf("unknown -mode %q", *mode)
	}
	perReq := 1
	if *mode == "batch" {
		perReq = *batch
	}
	tr := &http.Transport{MaxIdleConns: *conns * 2, MaxIdleConnsPerHost: *conns * 2, DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), *warmup+*duration)
	defer cancel()
	var reqs, docs, errs, added, dups atomic.Int64
	var firstErr atomic.Value
	lat := make([][]time.Duration, *conns)
	measureFrom := time.Now().Add(*warmup)
	var ackMu sync.Mutex
	var ackW flusher
	if *ackLog != "" {
		f, err := os.OpenFile(*ackLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		ackW = unbuffered{f}
	}
	addrs := strings.Split(*addr, ",")
	var wg sync.WaitGroup
	for c := range *conns {
		wg.Go(func() {
			base := addrs[c%len(addrs)]
			g := newGen(*seed+uint64(c)*1000003, *dup)
			var body []byte
			for i := 0; ctx.Err() == nil; i++ {
				if *maxReq > 0 && reqs.Load() >= *maxReq {
					return
				}
				body = body[:0]
				if *mode == "batch" {
					body = append(body, `{"documents":[`...)
				}
				for j := range perReq {
					if j > 0 {
						body = append(body, ',')
					}
					body = fmt.Appendf(body, `{"id":"s%x-c%d-%d-%d","text":"`, *seed, c, i, j)
					body = g.next(body)
					body = append(body, `"}`...)
				}
				if *mode == "batch" {
					body = append(body, `]}`...)
				}
				req, _ := http.NewRequestWithContext(ctx, "POST", base+path, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if *token != "" {
					req.Header.Set("Authorization", "Bearer "+*token)
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						if n := errs.Add(1); *maxErrs > 0 && n >= *maxErrs {
							cancel()
						}
						firstErr.CompareAndSwap(nil, err.Error())
					}
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				d := time.Since(t0)
				if ackW != nil && resp.StatusCode/100 == 2 {
					logAcks(&ackMu, ackW, b)
				}
				if t0.Before(measureFrom) {
					continue
				}
				if resp.StatusCode/100 != 2 {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%d %s", resp.StatusCode, b))
					continue
				}
				added.Add(int64(bytes.Count(b, []byte(`"added":true`))))
				dups.Add(int64(bytes.Count(b, []byte(`"duplicate":true`))))
				reqs.Add(1)
				docs.Add(int64(perReq))
				lat[c] = append(lat[c], d)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(measureFrom).Seconds()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		i := int(p * float64(len(all)))
		if i >= len(all) {
			i = len(all) - 1
		}
		return float64(all[i].Microseconds()) / 1000
	}
	rep := report{Mode: *mode, Conns: *conns, Batch: perReq, Seconds: elapsed, Requests: reqs.Load(), Documents: docs.Load(),
		Errors: errs.Load(), Added: added.Load(), Duplicates: dups.Load(),
		ReqPerSec: float64(reqs.Load()) / elapsed, DocsPerSec: float64(docs.Load()) / elapsed,
		P50ms: pct(0.5), P90ms: pct(0.9), P99ms: pct(0.99), P999ms: pct(0.999), MaxMs: pct(1)}
	if e, ok := firstErr.Load().(string); ok {
		rep.FirstError = e
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// profileCPU starts a CPU profile written to path; stop ends it.
func profileCPU(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, err
}

// logAcks writes the ids of the added documents of a response.
func logAcks(mu *sync.Mutex, w io.Writer, body []byte) {
	var out struct {
		ID      string `json:"id"`
		Added   bool   `json:"added"`
		Results []struct {
			ID    string `json:"id"`
			Added bool   `json:"added"`
		} `json:"results"`
	}
	if json.Unmarshal(body, &out) != nil {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if out.Added {
		fmt.Fprintln(w, out.ID)
	}
	for _, r := range out.Results {
		if r.Added {
			fmt.Fprintln(w, r.ID)
		}
	}
}

// verify checks that every id of an ack log is in the index.
func verify(args []string) error {
	fs := flag.NewFlagSet("verify", flag.ExitOnError)
	addr := fs.String("addr", "http://127.0.0.1:8080", "server URL")
	ids := fs.String("ids", "", "file of ids, one per line")
	token := fs.String("token", "", "bearer token")
	fs.Parse(args)
	b, err := os.ReadFile(*ids)
	if err != nil {
		return err
	}
	var n, missing int
	for _, id := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(id) == 0 {
			continue
		}
		n++
		req, _ := http.NewRequest("GET", *addr+"/v1/docs/"+string(id), nil)
		if *token != "" {
			req.Header.Set("Authorization", "Bearer "+*token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			missing++
			fmt.Fprintf(os.Stderr, "missing: %s (%d)\n", id, resp.StatusCode)
		}
	}
	fmt.Printf("%d acknowledged ids checked, %d missing\n", n, missing)
	if missing > 0 || n == 0 {
		return fmt.Errorf("verification failed")
	}
	return nil
}
