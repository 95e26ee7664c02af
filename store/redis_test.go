package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/neardup/neardup/internal/redistest"
	"github.com/neardup/neardup/sketch"
)

// redisTargets starts a single server and a 3-master cluster and returns
// their index URLs (prefix name), by test name: the server in the one-slot
// layout (the default), the cluster in the one-slot and in the spread
// layout.
func redisTargets(t *testing.T, name string) map[string]string {
	t.Helper()
	c := redistest.Cluster(t)
	return map[string]string{
		"server":          redistest.Server(t).URL(name),
		"cluster-oneslot": c.URL(name),
		"cluster-spread":  c.URL(name+"-s") + "&layout=spread",
	}
}

func mustCreateRedis(t testing.TB, url string, p sketch.Spec) *Redis {
	t.Helper()
	r, err := CreateRedis(url, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func mustOpenRedis(t testing.TB, url string) *Redis {
	t.Helper()
	r, err := OpenRedis(url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestRedisMatchesEmbedded runs the same check-and-adds, queries, removes
// and reads on the embedded store and on Redis (one server and a cluster),
// MinHash and SimHash, and wants identical answers: the backends key and
// verify the same way.
func TestRedisMatchesEmbedded(t *testing.T) {
	for name, url := range redisTargets(t, "same") {
		for _, m := range []sketch.Method{sketch.MinHash, sketch.SimHash} {
			t.Run(name+"/"+m.String(), func(t *testing.T) {
				url := strings.Replace(url, "prefix=same", "prefix=same-"+m.String(), 1)
				p := sketch.Default(m)
				emb := mustCreate(t, p)
				red := mustCreateRedis(t, url, p)
				sk, _ := emb.NewSketcher()
				texts := testCorpus(7, 400)
				texts = append(texts, "", texts[3]) // an empty document; a repeat under a new id
				var docs []Doc
				for i, x := range texts {
					docs = append(docs, Doc{ID: fmt.Sprint("d", i), Sketch: sk.Sketch(x)})
				}
				docs = append(docs, docs[5]) // a duplicate id in the batch
				for start := 0; start < len(docs); start += 50 {
					end := min(start+50, len(docs))
					want, err := emb.CheckAndAddBatch(docs[start:end], 0)
					if err != nil {
						t.Fatal(err)
					}
					got, err := red.CheckAndAddBatch(docs[start:end], 0)
					if err != nil {
						t.Fatal(err)
					}
					compareResults(t, want, got)
				}
				if emb.Len() != red.Len() {
					t.Fatalf("Len: embedded %d, redis %d", emb.Len(), red.Len())
				}
				// Adds without a check, then removes.
				for i := range 30 {
					d := Doc{ID: fmt.Sprint("plain", i), Sketch: docs[i].Sketch}
					if e, r := emb.Add(d.ID, d.Sketch), red.Add(d.ID, d.Sketch); fmt.Sprint(e) != fmt.Sprint(r) {
						t.Fatalf("Add %s: embedded %v, redis %v", d.ID, e, r)
					}
				}
				for i := 0; i < len(texts); i += 3 {
					id := fmt.Sprint("d", i)
					e, r := emb.Remove(id), red.Remove(id)
					if !errors.Is(r, errors.Unwrap(e)) && (e == nil) != (r == nil) {
						t.Fatalf("Remove %s: embedded %v, redis %v", id, e, r)
					}
				}
				if err := red.Remove("nope"); !errors.Is(err, ErrNotFound) {
					t.Fatalf("Remove of a missing id: %v, want ErrNotFound", err)
				}
				for _, d := range docs {
					want, err := emb.Query(nil, d.Sketch, 0)
					if err != nil {
						t.Fatal(err)
					}
					got, err := red.Query(nil, d.Sketch, 0)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Fatalf("Query %s: (-embedded +redis)\n%s", d.ID, diff)
					}
					ws, we := emb.Get(d.ID)
					gs, ge := red.Get(d.ID)
					if (we == nil) != (ge == nil) || we == nil && !cmp.Equal(ws, gs) {
						t.Fatalf("Get %s: embedded %v %v, redis %v %v", d.ID, ws, we, gs, ge)
					}
				}
				if emb.Len() != red.Len() {
					t.Fatalf("Len after removes: embedded %d, redis %d", emb.Len(), red.Len())
				}
				type entry struct {
					ID string
					Sk sketch.Sketch
				}
				each := func(x Index) []entry {
					var out []entry
					if err := x.Each(func(id string, sk sketch.Sketch) error {
						sk.Sig = append(sk.Sig[:0:0], sk.Sig...)
						out = append(out, entry{id, sk})
						return nil
					}); err != nil {
						t.Fatal(err)
					}
					return out
				}
				if diff := cmp.Diff(each(emb), each(red)); diff != "" {
					t.Fatalf("Each: (-embedded +redis)\n%s", diff)
				}
				// Another process opening the index sees the same.
				red2 := mustOpenRedis(t, url)
				if !cmp.Equal(red2.Spec(), red.Spec()) || red2.Len() != red.Len() {
					t.Fatalf("reopened: %+v %d, want %+v %d", red2.Spec(), red2.Len(), red.Spec(), red.Len())
				}
			})
		}
	}
}

func compareResults(t *testing.T, want, got []Result) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%d results, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.Added != g.Added || !errors.Is(g.Err, errors.Unwrap(w.Err)) && (w.Err != nil || g.Err != nil) {
			t.Fatalf("result %d: redis added %v err %v; embedded added %v err %v", i, g.Added, g.Err, w.Added, w.Err)
		}
		if len(w.Matches)+len(g.Matches) > 0 && !cmp.Equal(w.Matches, g.Matches) {
			t.Fatalf("result %d matches: (-embedded +redis)\n%s", i, cmp.Diff(w.Matches, g.Matches))
		}
	}
}

// TestRedisConcurrentCheckAndAdd sends near-duplicates at once through
// separate connections (as separate processes would): exactly one of each
// family is added, on a server and on a cluster.
// Each worker sends its variants one by one, then (batch=8) eight
// families per CheckAndAddBatch, where a document held for its candidates
// must not stop the others. With cousins, each family has a document in
// the index before the workers start that shares band keys with its
// variants but is not their duplicate (exact Jaccard about 0.73): every
// variant is held, verified against it and sent again, and the check of
// the second call (the documents committed since the first) is what keeps
// two variants out.
func TestRedisConcurrentCheckAndAdd(t *testing.T) {
	targets := redisTargets(t, "conc")
	for _, cousins := range []bool{false, true} {
		for _, batch := range []int{1, 8} {
			for name, url := range targets {
				t.Run(fmt.Sprint(name, "/batch=", batch, "/cousins=", cousins), func(t *testing.T) {
					url := strings.Replace(url, "prefix=conc", fmt.Sprint("prefix=conc", batch, cousins), 1)
					testConcurrentCheckAndAdd(t, url, batch, nil, cousins)
				})
			}
		}
	}
}

// TestRedisMixedBuilds runs the add script of commit c6819e6 (before the
// fourth session: a held document holds the rest of its call, postings
// read with HGET and rewritten with HSET, the id tested with HEXISTS) in
// two of the four workers and the current one in the others, on one
// index: exactly one of each family is added and the index stays
// consistent, as processes of the two builds sharing an index need.
func TestRedisMixedBuilds(t *testing.T) {
	src, err := os.ReadFile("testdata/add_script_c6819e6.lua")
	if err != nil {
		t.Fatal(err)
	}
	old := redis.NewScript(string(src))
	in := redistest.Server(t)
	for _, batch := range []int{1, 8} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			testConcurrentCheckAndAdd(t, in.URL(fmt.Sprint("mixed", batch)), batch, []*redis.Script{addScript, old}, false)
		})
	}
}

// testConcurrentCheckAndAdd runs the workers; worker w uses the add
// script scripts[w % len(scripts)] when scripts is not nil.
func testConcurrentCheckAndAdd(t *testing.T, url string, batch int, scripts []*redis.Script, cousins bool) {
	p := sketch.Default(sketch.MinHash)
	idx := mustCreateRedis(t, url, p)
	const workers, families = 4, 40
	// Families of near-duplicates: a base of 200 words of which every
	// worker changes the last (Jaccard about 0.95 between variants).
	rng := rand.New(rand.NewPCG(11, 1))
	bases := make([][]string, families)
	for f := range bases {
		bases[f] = words(rng, 200)
	}
	records := families
	if cousins {
		sk, _ := idx.NewSketcher()
		for f, base := range bases {
			// Six words in seven changed: word-5 Jaccard about 0.73 with
			// the variants.
			ws := slices.Clone(base)
			for i := 3; i < 6*33; i += 33 {
				ws[i] = fmt.Sprint("cousin", i)
			}
			if err := idx.Add(fmt.Sprint("cousin", f), sk.Sketch(strings.Join(ws, " "))); err != nil {
				t.Fatal(err)
			}
		}
		records += families
	}
	var added [families]atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := OpenRedis(url, Options{})
			if err != nil {
				errs <- err
				return
			}
			defer r.Close()
			if scripts != nil {
				r.add = scripts[w%len(scripts)]
			}
			sk, _ := r.NewSketcher()
			for f0 := 0; f0 < families; f0 += batch {
				var docs []Doc
				for f := f0; f < min(f0+batch, families); f++ {
					ws := slices.Clone(bases[f])
					ws[len(ws)-1] = fmt.Sprint("variant", w)
					d := Doc{ID: fmt.Sprintf("f%d-w%d", f, w), Sketch: sk.Sketch(strings.Join(ws, " "))}
					d.Sketch.Sig = slices.Clone(d.Sketch.Sig)
					docs = append(docs, d)
				}
				rs, err := r.CheckAndAddBatch(docs, 0)
				if err != nil {
					errs <- err
					return
				}
				for k, res := range rs {
					f := f0 + k
					if res.Err != nil {
						errs <- fmt.Errorf("family %d worker %d: %w", f, w, res.Err)
						return
					}
					if res.Added {
						added[f].Add(1)
					} else if len(res.Matches) == 0 {
						errs <- fmt.Errorf("family %d worker %d: neither added nor a duplicate", f, w)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for f := range families {
		if n := added[f].Load(); n != 1 {
			t.Errorf("family %d: %d added, want exactly 1", f, n)
		}
	}
	// The postings claimed by the documents not added are gone.
	if n := checkRedisConsistent(t, idx); n != records {
		t.Errorf("%d records, want %d", n, records)
	}
}

// TestRedisRemoveLeavesNoOrphan adds and removes concurrently and then
// wants no key of the index but its meta and counters.
func TestRedisRemoveLeavesNoOrphan(t *testing.T) {
	in := redistest.Server(t)
	url := in.URL("orphan")
	p := sketch.Default(sketch.SimHash)
	r := mustCreateRedis(t, url, p)
	texts := testCorpus(3, 300)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := mustOpenRedis(t, url)
			sk, _ := x.NewSketcher()
			for i := w; i < len(texts); i += 3 {
				id := fmt.Sprint("d", i)
				if err := x.Add(id, sk.Sketch(texts[i])); err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					if err := x.Remove(id); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	want := int64(len(texts) / 2)
	if r.Len() != want {
		t.Fatalf("Len %d, want %d", r.Len(), want)
	}
	for i := 1; i < len(texts); i += 2 {
		if err := r.Remove(fmt.Sprint("d", i)); err != nil {
			t.Fatal(err)
		}
	}
	wantOnlyCounters(t, r)
}

func TestRedisOpenErrors(t *testing.T) {
	in := redistest.Server(t)
	p := sketch.Default(sketch.MinHash)
	mustCreateRedis(t, in.URL("x"), p)
	if _, err := CreateRedis(in.URL("x"), p, Options{}); !errors.Is(err, ErrExists) {
		t.Errorf("create twice: %v, want ErrExists", err)
	}
	if _, err := OpenRedis(in.URL("y"), Options{}); !errors.Is(err, ErrNotIndex) || !strings.Contains(err.Error(), `prefix "y"`) {
		t.Errorf("open of another prefix: %v, want ErrNotIndex naming the prefix", err)
	}
	c := redis.NewClient(&redis.Options{Addr: in.Addr})
	defer c.Close()
	c.HSet(context.Background(), "{x}:meta", "format", "99")
	if _, err := OpenRedis(in.URL("x"), Options{}); !errors.Is(err, ErrVersion) {
		t.Errorf("open of a newer format: %v, want ErrVersion", err)
	}
	in.Kill()
	if _, err := OpenRedis(in.URL("x"), Options{}); !errors.Is(err, ErrUnreachable) {
		t.Errorf("open with the server down: %v, want ErrUnreachable", err)
	}
	for _, bad := range []string{
		"redis://127.0.0.1:1/0?prefix=a{b}",
		"redis://127.0.0.1:1/x?prefix=a",
		"redis://127.0.0.1:1/0?prefix=a&pool=3",
		"redis://h1:1,h2:2/0?prefix=a",
		"redis+cluster://h1:1,h2:2/3?prefix=a",
		"redis:///0?prefix=a",
		"//u:secret@h:1/0",
		"http://u:secret@h:1/0",
	} {
		_, err := OpenRedis(bad, Options{})
		if !errors.Is(err, ErrParams) {
			t.Errorf("OpenRedis(%q): %v, want ErrParams", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("OpenRedis(%q): %v shows the password", bad, err)
		}
	}
	for _, raw := range []string{"redis://u:secret@h:1/0", "//u:secret@h:1/0", "redis+cluster://:secret@a:1,b:2/"} {
		if got := Redact(raw); strings.Contains(got, "secret") {
			t.Errorf("redact %q: %q", raw, got)
		}
	}
}

// TestRedisKillServer kills redis-server with kill -9 while four
// connections check and add, restarts it, and wants a consistent index
// (every record with its id and all its postings, no posting without its
// record, the counter equal to the records) holding every acknowledged
// document, found by its sketch, with appendfsync always. Under everysec
// the index must be as consistent, but acknowledged documents may be
// lost: while a background fsync is slow, Redis postpones its writes to
// the append-only file for up to 2 s and answers meanwhile (the race
// detector on a loaded machine lost 3 of 301 that way), as
// docs/format/redis.md ("Durability"), `index stats` and `serve` say; the
// loss is logged, not failed.
func TestRedisKillServer(t *testing.T) {
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) {
			lost, acked, n := killRedisRound(t, fsync, false)
			t.Logf("appendfsync %s: %d of %d acknowledged documents lost by kill -9 of redis-server; %d documents after the restart", fsync, lost, acked, n)
			if lost > 0 && fsync == "always" {
				t.Errorf("%d acknowledged documents lost under appendfsync always", lost)
			}
		})
	}
}

// killRedisRound runs one round of TestRedisKillServer: four connections
// check and add until 300 documents are acknowledged (with rewrite, an AOF
// rewrite is started after 150), kill -9 of redis-server, restart, and a
// check of the whole index. It returns the acknowledged documents lost,
// those acknowledged, and the documents after the restart.
func killRedisRound(t *testing.T, fsync string, rewrite bool) (lost, acked int, after int64) {
	t.Helper()
	in := redistest.Server(t, "--appendonly", "yes", "--appendfsync", fsync)
	p := sketch.Default(sketch.MinHash)
	mustCreateRedis(t, in.URL("dur"), p)
	texts := testCorpus(5, 4000)
	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			r := mustOpenRedis(t, in.URL("dur"))
			sk, _ := r.NewSketcher()
			for i := w; i < len(texts); i += 4 {
				id := fmt.Sprint("d", i)
				res, err := r.CheckAndAdd(id, sk.Sketch(texts[i]), 1)
				if errors.Is(err, ErrUnreachable) {
					return // killed
				}
				if err != nil {
					t.Error(err)
					return
				}
				if res.Added {
					mu.Lock()
					ids = append(ids, id)
					mu.Unlock()
				}
			}
		})
	}
	rewritten := !rewrite
	for {
		mu.Lock()
		n := len(ids)
		mu.Unlock()
		if n >= 150 && !rewritten {
			if reply, err := in.Command("BGREWRITEAOF"); err != nil {
				t.Fatalf("BGREWRITEAOF: %q %v", reply, err)
			}
			rewritten = true
		}
		if n >= 300 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	in.Kill()
	wg.Wait()
	if err := in.Start(); err != nil {
		t.Fatal(err)
	}
	r2 := mustOpenRedis(t, in.URL("dur"))
	checkRedisConsistent(t, r2)
	for _, id := range ids {
		sk, err := r2.Get(id)
		if errors.Is(err, ErrNotFound) {
			lost++
			continue
		}
		if err != nil {
			t.Fatalf("acknowledged %s: %v", id, err)
		}
		ms, err := r2.Query(nil, sk, 1)
		if err != nil || len(ms) == 0 || ms[0].ID != id {
			t.Fatalf("query of acknowledged %s: %v %v", id, ms, err)
		}
	}
	return lost, len(ids), r2.Len()
}

// FuzzParseRedisURL: any string is parsed or refused with ErrParams, never
// a panic; an accepted URL has hosts and a prefix without hash-tag braces,
// and the message of a refusal never shows a password.
func FuzzParseRedisURL(f *testing.F) {
	for _, s := range []string{
		"redis://127.0.0.1:6379/0?prefix=a", "redis://u:pw@h:1/2?prefix=x", "redis+cluster://a:1,b:2/?prefix=n",
		"redis://h", "redis://h:1/x", "redis://:@/?prefix={", "redis+cluster://h:1/5", "rediss://h:1/0",
		"redis://u:secret@h:1/0?prefix=a&x=1", "redis://%zz", "redis+cluster://a:1/?prefix=n&layout=spread", "redis://h:1/0?layout=one&layout=x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := parseRedisURL(raw)
		if err != nil {
			if !errors.Is(err, ErrParams) {
				t.Fatalf("%q: %v, not ErrParams", raw, err)
			}
			return
		}
		if len(u.opts.Addrs) == 0 || u.prefix == "" || strings.ContainsAny(u.prefix, "{}") || u.layout != "" && u.layout != layoutOne && u.layout != layoutSpread {
			t.Fatalf("%q accepted as %+v, prefix %q", raw, u.opts.Addrs, u.prefix)
		}
		if u.opts.Password != "" && u.opts.Password != "xxxxx" && strings.Contains(u.loc, ":"+u.opts.Password+"@") {
			t.Fatalf("%q: location %q shows the password", raw, u.loc)
		}
	})
}

// roundTrips counts a client's round trips: commands and pipelines, but
// not the handshake of a new connection.
type roundTrips struct{ n atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "hello" { // a new connection's handshake
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if cmds[0].Name() != "client" { // a new connection's handshake
			h.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// TestRedisBatchRoundTrips checks a batch of new documents in one round
// trip (the add script, no lookup first), and a batch whose documents
// share keys with the index in three (script, candidates' records, script
// for the held documents), with the embedded index's answers: documents
// after a held one that depend on it (a duplicate of it, the same id) wait
// for it, the others are added in the first call.
func TestRedisBatchRoundTrips(t *testing.T) {
	p := sketch.Default(sketch.MinHash)
	emb := mustCreate(t, p)
	red := mustCreateRedis(t, redistest.Server(t).URL("trips"), p)
	var h roundTrips
	red.c.AddHook(&h)
	sk, _ := red.NewSketcher()
	rng := rand.New(rand.NewPCG(21, 1))
	var bases [][]string
	doc := func(id string, ws []string) Doc {
		d := Doc{ID: id, Sketch: sk.Sketch(strings.Join(ws, " "))}
		d.Sketch.Sig = slices.Clone(d.Sketch.Sig)
		return d
	}
	fresh := func(prefix string, n int) []Doc {
		var docs []Doc
		for i := range n {
			bases = append(bases, words(rng, 150))
			docs = append(docs, doc(fmt.Sprint(prefix, i), bases[len(bases)-1]))
		}
		return docs
	}
	run := func(docs []Doc, trips int64) {
		t.Helper()
		want, err := emb.CheckAndAddBatch(docs, 0)
		if err != nil {
			t.Fatal(err)
		}
		n0 := h.n.Load()
		got, err := red.CheckAndAddBatch(docs, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n := h.n.Load() - n0; n != trips {
			t.Errorf("%d round trips, want %d", n, trips)
		}
		compareResults(t, want, got)
	}
	run(fresh("w", 1), 2) // EVALSHA, then EVAL loads the script
	hget0 := hgetCalls(t, red)
	run(fresh("a", 100), 1)
	// New documents share no key with the index: their postings are
	// claimed with HSETNX, never read (1,300 HGET before).
	if n := hgetCalls(t, red) - hget0; n != 0 {
		t.Errorf("%d HGET for a batch of new documents, want 0", n)
	}
	x := bases[30] // a document of the index
	docs := fresh("b", 40)
	a := doc("held", mutate(rng, x, 1))                       // a near-duplicate of x: held, then answered
	b := doc("held", words(rng, 150))                         // the same id: waits for a
	c := doc("copy", mutate(rng, x, 1))                       // a duplicate of a (and x): waits for a
	docs = slices.Insert(docs, 10, a, fresh("c", 1)[0], b, c) // and a new document between them
	reads := func() int64 { return hgetCalls(t, red) + commandCalls(t, red, "hsetnx") }
	reads0 := reads()
	run(docs, 3)
	// The 13 postings of the 44 documents are read (HGET) or claimed
	// (HSETNX) by the first script, and again only for b, the one
	// document sent again (a and c are answered as duplicates of x); plus
	// the ids of the 41 documents the first script adds and of b (HSETNX)
	// and the record of x; a's postings shared with x are claimed in vain
	// and read. Until the held document held the whole rest of its call,
	// the 32 documents after a were read twice (989 HGET).
	shared := 0
	xd := doc("x", x)
	xk := red.appendKeys(nil, &xd.Sketch)
	for t, k := range red.appendKeys(nil, &a.Sketch) {
		if k == xk[t] {
			shared++
		}
	}
	if n, want := reads()-reads0, int64(13*45+41+1+1+shared); shared == 0 || n != want {
		t.Errorf("%d HGET and HSETNX for the batch, want %d (13 postings of 44 documents and of b again, 42 ids, x's record, %d postings of a shared with x)", n, want, shared)
	}
	if emb.Len() != red.Len() {
		t.Fatalf("Len: embedded %d, redis %d", emb.Len(), red.Len())
	}
	var ids [2][]string
	for k, x := range []Index{emb, red} {
		if err := x.Each(func(id string, _ sketch.Sketch) error {
			ids[k] = append(ids[k], id)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The same documents; b, held behind a, is numbered after the
	// documents of its batch that do not depend on a (docs/format/redis.md,
	// "Check-and-add on one slot").
	want := slices.DeleteFunc(slices.Clone(ids[0]), func(id string) bool { return id == "held" })
	want = append(want, "held")
	if diff := cmp.Diff(want, ids[1]); diff != "" {
		t.Fatalf("Each: (-embedded with b last +redis)\n%s", diff)
	}

	// A held document that is added after all (a candidate of x, not a
	// near-duplicate), and a later new document with its id: the later one
	// waits for it and is refused, as in the embedded index.
	var near []string
	for k := 0; near == nil; k++ {
		if k == 1000 {
			t.Fatal("no candidate of x below the threshold")
		}
		ws := mutate(rand.New(rand.NewPCG(uint64(k), 2)), x, 4+k%8)
		d := doc("probe", ws)
		if cs, _ := emb.Candidates(nil, d.Sketch); len(cs) > 0 {
			if ms, _ := emb.Query(nil, d.Sketch, 0); len(ms) == 0 {
				near = ws
			}
		}
	}
	run([]Doc{doc("cand", near), fresh("e", 1)[0], doc("cand", words(rng, 150))}, 3)
	// No posting claimed by a document not added is left.
	checkRedisConsistent(t, red)
}

// hgetCalls is the number of HGET commands the index's server has run
// (scripts' included).
func hgetCalls(t *testing.T, r *Redis) int64 { return commandCalls(t, r, "hget") }

// commandCalls is the number of calls of a command the index's server has
// run (scripts' included).
func commandCalls(t *testing.T, r *Redis, name string) int64 {
	t.Helper()
	info, err := r.c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+name+":calls="); ok {
			n, _ := strconv.ParseInt(v[:strings.IndexByte(v, ',')], 10, 64)
			return n
		}
	}
	return 0
}

// TestRedisNoRetryAfterTimeout: the client that parseRedisURL configures
// does not send a command again after a read timeout. A script that
// outlives the timeout has run (or will): sent again, it would run twice
// (go-redis retries a timed-out command three times by default, and a
// batch's add script, sent again, found its own documents and refused
// them as duplicate ids).
func TestRedisNoRetryAfterTimeout(t *testing.T) {
	in := redistest.Server(t)
	u, err := parseRedisURL(in.URL("noretry"))
	if err != nil {
		t.Fatal(err)
	}
	u.opts.ReadTimeout = 200 * time.Millisecond
	c := redis.NewUniversalClient(u.opts)
	defer c.Close()
	// INCR, then keep the server busy for 500 ms (a script cannot sleep).
	slow := redis.NewScript(`redis.call('INCR', KEYS[1])
local t0 = redis.call('TIME')
local start = t0[1] * 1000000 + t0[2]
while true do
  local t = redis.call('TIME')
  if t[1] * 1000000 + t[2] - start > 500000 then break end
end
return 1`)
	ctx := context.Background()
	if err := slow.Load(ctx, c).Err(); err != nil {
		t.Fatal(err)
	}
	// Alone and in a pipeline (the write path pipelines its scripts; a
	// pipeline that timed out is sent again whole by default).
	run := map[string]func() error{
		"alone": func() error { return slow.EvalSha(ctx, c, []string{"{noretry}:n"}).Err() },
		"pipelined": func() error {
			p := c.Pipeline()
			slow.EvalSha(ctx, p, []string{"{noretry}:n"})
			_, err := p.Exec(ctx)
			return err
		},
	}
	for _, name := range []string{"alone", "pipelined"} {
		if err := c.Set(ctx, "{noretry}:n", 0, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := run[name](); err == nil {
			t.Fatalf("%s: the slow script did not time out", name)
		}
		time.Sleep(2 * time.Second) // any retry would have run by now
		n, err := c.Get(ctx, "{noretry}:n").Int()
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("%s: the script ran %d times, want 1: the client sent it again after the timeout", name, n)
		}
	}
}

// TestRedisUpgradeRoundTrips: Upgrade reads the ids, then the records, then
// replaces them, three round trips for a call however many documents it
// has; an id given twice in a call counts once upgraded, once already.
func TestRedisUpgradeRoundTrips(t *testing.T) {
	p := sketch.Default(sketch.MinHash)
	url := redistest.Server(t).URL("uptrips")
	old, err := CreateRedis(url, p, Options{EstimateOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	red := mustOpenRedis(t, url)
	sk, err := NewSketcher(p)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(27, 4))
	var docs []Doc
	for i := range 60 {
		d := Doc{ID: fmt.Sprint("d", i), Sketch: sk.Sketch(strings.Join(words(rng, 100), " "))}
		d.Sketch.Sig = slices.Clone(d.Sketch.Sig)
		docs = append(docs, d)
	}
	if _, err := red.AddBatch(docs); err != nil {
		t.Fatal(err)
	}
	var h roundTrips
	red.c.AddHook(&h)
	// The meta hash and the replace script, loaded once.
	if res, err := red.Upgrade(docs[:1]); err != nil || res.Upgraded != 1 {
		t.Fatalf("Upgrade(1) = %+v, %v", res, err)
	}
	n0 := h.n.Load()
	batch := append(slices.Clone(docs[1:50]), Doc{ID: "absent", Sketch: docs[0].Sketch})
	res, err := red.Upgrade(batch)
	if err != nil || res != (UpgradeResult{Upgraded: 49, Missing: 1}) {
		t.Fatalf("Upgrade(50) = %+v, %v", res, err)
	}
	if n := h.n.Load() - n0; n != 3 {
		t.Errorf("Upgrade of 50 documents: %d round trips, want 3", n)
	}
	res, err = red.Upgrade([]Doc{docs[50], docs[50], docs[0]})
	if err != nil || res != (UpgradeResult{Upgraded: 1, Already: 2}) {
		t.Fatalf("Upgrade with an id twice = %+v, %v", res, err)
	}
	for _, d := range docs[:51] {
		got, err := red.Get(d.ID)
		if err != nil || !slices.Equal(got.Set, d.Sketch.Set) || !slices.Equal(got.Sig, d.Sketch.Sig) {
			t.Fatalf("Get(%s) after Upgrade: %v; its set or signature differ", d.ID, err)
		}
	}
	if got, _ := red.Get(docs[51].ID); got.Set != nil {
		t.Errorf("%s, never upgraded, has a set", docs[51].ID)
	}
}
