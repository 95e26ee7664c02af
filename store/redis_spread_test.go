package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/neardup/neardup/internal/redistest"
	"github.com/neardup/neardup/sketch"
)

// redisKeys returns every key of the index r (either layout) on every
// master, with its value as HGETALL or GET reads it.
func redisKeys(t *testing.T, r *Redis) map[string]map[string]string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	out := map[string]map[string]string{}
	prefix := r.tag[1 : len(r.tag)-1]
	each := func(ctx context.Context, c *redis.Client) error {
		for _, pat := range []string{"{" + prefix + ":*", r.tag + ":*"} {
			keys, err := c.Keys(ctx, pat).Result()
			if err != nil {
				return err
			}
			for _, k := range keys {
				v := map[string]string{}
				if typ, _ := c.Type(ctx, k).Result(); typ == "hash" {
					v, err = c.HGetAll(ctx, k).Result()
				} else {
					v[""], err = c.Get(ctx, k).Result()
				}
				if err != nil {
					return err
				}
				mu.Lock()
				out[k] = v
				mu.Unlock()
			}
		}
		return nil
	}
	if err := r.eachMaster(ctx, each); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkRedisConsistent wants, in the index r (either layout) with no
// writer running, every record (committed, in the spread layout) with its
// id and all its postings, every id and posting naming such a record, and
// the document counter equal to the records. It returns the number of
// records.
func checkRedisConsistent(t *testing.T, r *Redis) int {
	t.Helper()
	keys := redisKeys(t, r)
	prefix := r.tag[1 : len(r.tag)-1]
	recs := map[uint64]record{}
	ids := map[string]uint64{}
	postings := map[string]bool{} // bucket/field/seq
	for k, h := range keys {
		rest, ok := strings.CutPrefix(k, "{"+prefix+":") // spread
		if !ok {
			rest, _ = strings.CutPrefix(k, r.tag+":") // one slot
		}
		kind, _, _ := strings.Cut(rest, ":")
		for f, v := range h {
			switch kind {
			case "r":
				if r.spread {
					if v == "" || v[0] != stCommitted {
						t.Errorf("record %x left in state %q", f, v[:min(1, len(v))])
						continue
					}
					v = v[1:]
				}
				var rec record
				if err := r.readRecord(&rec, []byte(v)); err != nil {
					t.Fatalf("%s %x: %v", k, f, err)
				}
				rec.sig, rec.id = slices.Clone(rec.sig), slices.Clone(rec.id)
				recs[binary.BigEndian.Uint64([]byte(f))] = rec
			case "i":
				ids[f] = binary.BigEndian.Uint64([]byte(v))
			case "p":
				for j := 0; j < len(v); j += 8 {
					postings[k+"/"+f+"/"+v[j:j+8]] = true
				}
			case "meta", "seq", "docs":
			default:
				t.Errorf("unknown key %q", k)
			}
		}
	}
	for id, s := range ids {
		if rec, ok := recs[s]; !ok || string(rec.id) != id {
			t.Errorf("id %q maps to %d, which is not its committed record", id, s)
		}
	}
	var field []byte
	for s, rec := range recs {
		if ids[string(rec.id)] != s {
			t.Errorf("record %d (%q) without its id", s, rec.id)
		}
		if rec.flags&flagEmpty != 0 {
			continue
		}
		for tb, key := range r.appendKeys(nil, &sketch.Sketch{Sig: rec.sig, FP: rec.fp}) {
			field = postingField(field[:0], tb, key)
			pk := r.postingBucket(tb, key) + "/" + string(field) + "/" + be8(s)
			if !postings[pk] {
				t.Errorf("record %d (%q) lacks its posting in table %d", s, rec.id, tb)
			}
			delete(postings, pk)
		}
	}
	if len(postings) > 0 {
		t.Errorf("%d postings without their committed record", len(postings))
	}
	if r.Len() != int64(len(recs)) {
		t.Errorf("document counter %d, %d records", r.Len(), len(recs))
	}
	return len(recs)
}

// family returns the variant v of the near-duplicate family base: its
// last word replaced (Jaccard about 0.95 between variants).
func family(base []string, v string) string {
	ws := slices.Clone(base)
	ws[len(ws)-1] = v
	return strings.Join(ws, " ")
}

// TestRedisSpreadConcurrentCheckAndAdd sends near-duplicates at once from
// 8 connections (as 8 processes would), singly and in batches, to a spread
// index on the 3-master cluster: exactly one of each family is added, and
// the index is consistent afterwards (no pending record, no orphan
// posting). With the check of the protocol switched off (spreadCheck
// answering "no duplicate") it fails: several of a family are added.
func TestRedisSpreadConcurrentCheckAndAdd(t *testing.T) {
	cl := redistest.Cluster(t)
	for _, m := range []sketch.Method{sketch.MinHash, sketch.SimHash} {
		t.Run(m.String(), func(t *testing.T) {
			url := cl.URL("sconc-"+m.String()) + "&layout=spread"
			r := mustCreateRedis(t, url, sketch.Default(m))
			if !r.spread {
				t.Fatal("layout=spread made a one-slot index")
			}
			const workers, families = 8, 30
			rng := rand.New(rand.NewPCG(12, 3))
			bases := make([][]string, families)
			for f := range bases {
				bases[f] = words(rng, 200)
			}
			var added [families]atomic.Int32
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					x := mustOpenRedis(t, url)
					sk, _ := x.NewSketcher()
					var batch []Doc
					var fams []int
					flush := func() bool {
						rs, err := x.CheckAndAddBatch(batch, 0)
						if err != nil {
							t.Error(err)
							return false
						}
						for k, res := range rs {
							if res.Err != nil {
								t.Error(res.Err)
								return false
							}
							if res.Added {
								added[fams[k]].Add(1)
							} else if len(res.Matches) == 0 {
								t.Errorf("family %d worker %d: neither added nor a duplicate", fams[k], w)
							}
						}
						batch, fams = batch[:0], fams[:0]
						return true
					}
					for f := range families {
						// MinHash: variants (Jaccard about 0.95); SimHash: the same
						// text (variants could be more than 3 bits apart).
						v := fmt.Sprint("variant", w)
						if m == sketch.SimHash {
							v = "same"
						}
						d := Doc{ID: fmt.Sprintf("f%d-w%d", f, w), Sketch: sk.Sketch(family(bases[f], v))}
						d.Sketch.Sig = slices.Clone(d.Sketch.Sig) // the Sketcher reuses it
						batch = append(batch, d)
						fams = append(fams, f)
						// Odd workers send batches of 5, even ones single documents.
						if (w%2 == 0 || len(batch) == 5) && !flush() {
							return
						}
					}
				})
			}
			wg.Wait()
			for f := range families {
				if n := added[f].Load(); n != 1 {
					t.Errorf("family %d: %d added, want exactly 1", f, n)
				}
			}
			if n := checkRedisConsistent(t, r); n != families {
				t.Errorf("%d records, want %d", n, families)
			}
		})
	}
}

// TestRedisSpreadRemoveLeavesNoOrphan adds near-duplicates (so that some
// writers abort) and removes concurrently on the cluster, then removes
// everything: only meta, seq and docs remain on the masters.
func TestRedisSpreadRemoveLeavesNoOrphan(t *testing.T) {
	url := redistest.Cluster(t).URL("sorphan") + "&layout=spread"
	r := mustCreateRedis(t, url, sketch.Default(sketch.SimHash))
	texts := testCorpus(4, 240)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			x := mustOpenRedis(t, url)
			sk, _ := x.NewSketcher()
			for i := range texts {
				// Every worker sends every text: one of the four is added.
				id := fmt.Sprintf("d%d-w%d", i, w)
				res, err := x.CheckAndAdd(id, sk.Sketch(texts[i]), 0)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Added && i%2 == 0 {
					if err := x.Remove(id); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	checkRedisConsistent(t, r)
	var ids []string
	if err := r.Each(func(id string, _ sketch.Sketch) error { ids = append(ids, id); return nil }); err != nil {
		t.Fatal(err)
	}
	if int64(len(ids)) != r.Len() {
		t.Fatalf("Each gave %d documents, Len %d", len(ids), r.Len())
	}
	for _, id := range ids {
		if err := r.Remove(id); err != nil {
			t.Fatal(err)
		}
	}
	wantOnlyCounters(t, r)
}

// wantOnlyCounters wants no key of the index r (either layout) but its
// meta, seq and docs, and no document: after every document was removed.
func wantOnlyCounters(t *testing.T, r *Redis) {
	t.Helper()
	for k := range redisKeys(t, r) {
		switch k {
		case r.metaKey(), r.seqKey(), r.docsKey():
		default:
			t.Errorf("key %q left after every document was removed", k)
		}
	}
	if r.Len() != 0 {
		t.Fatalf("Len %d after removing everything", r.Len())
	}
}

// TestRedisSpreadDeadWriter leaves documents pending, as a writer that
// dies between its pending record and its commit: no reader sees them,
// and another writer waits for them no longer than the pending timeout,
// aborts them, removes what they left and goes on; a retry of the dead
// request under the same id is added.
func TestRedisSpreadDeadWriter(t *testing.T) {
	url := redistest.Cluster(t).URL("dead") + "&layout=spread"
	dead := mustCreateRedis(t, url, sketch.Default(sketch.MinHash))
	dead.spreadStop = true
	live := mustOpenRedis(t, url)
	live.pendingTimeout = 300 * time.Millisecond
	sk, _ := live.NewSketcher()
	rng := rand.New(rand.NewPCG(1, 2))
	base := words(rng, 200)
	a, b := sk.Sketch(family(base, "a")), sk.Sketch(family(base, "b"))
	for _, add := range []func() error{
		func() error { _, err := dead.CheckAndAdd("a", a, 0); return err },
		func() error { return dead.Add("a", a) },
	} {
		if err := add(); !errors.Is(err, errSpreadStopped) {
			t.Fatalf("the hook did not stop the write: %v", err)
		}
		// A pending document is not in the index.
		if ms, err := live.Query(nil, a, 0); err != nil || len(ms) != 0 {
			t.Fatalf("query sees a pending document: %v %v", ms, err)
		}
		if _, err := live.Get("a"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get of a pending document: %v, want ErrNotFound", err)
		}
		if err := live.Remove("a"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Remove of a pending document: %v, want ErrNotFound", err)
		}
		n := 0
		live.Each(func(string, sketch.Sketch) error { n++; return nil })
		if n != 0 || live.Len() != 0 {
			t.Fatalf("Each sees %d documents, Len %d, with only pending ones", n, live.Len())
		}
	}
	// A near-duplicate waits for the lower-numbered pending ones, then
	// aborts them.
	start := time.Now()
	res, err := live.CheckAndAdd("b", b, 0)
	if err != nil || !res.Added {
		t.Fatalf("near-duplicate of dead pending documents: %+v %v, want added", res, err)
	}
	if el := time.Since(start); el < live.pendingTimeout || el > live.pendingTimeout+5*time.Second {
		t.Fatalf("took %v with a pending timeout of %v", el, live.pendingTimeout)
	}
	// The dead writer's id is free again: the client's retry of "a" is
	// answered as a duplicate of b, and an unrelated document under the id
	// is added.
	if res, err := live.CheckAndAdd("a", a, 0); err != nil || res.Added || len(res.Matches) != 1 || res.Matches[0].ID != "b" {
		t.Fatalf("retry of a: %+v %v, want a duplicate of b", res, err)
	}
	if err := live.Add("a", sk.Sketch("something else entirely")); err != nil {
		t.Fatalf("add under the dead writer's id: %v", err)
	}
	if n := checkRedisConsistent(t, live); n != 2 {
		t.Fatalf("%d records, want 2", n)
	}
	// A dead writer holding an id alone (its document a duplicate of
	// nothing) delays a writer of the same id by the timeout.
	c := sk.Sketch(strings.Join(words(rng, 100), " "))
	if _, err := dead.CheckAndAdd("c", c, 0); !errors.Is(err, errSpreadStopped) {
		t.Fatal(err)
	}
	if res, err := live.CheckAndAdd("c", c, 0); err != nil || !res.Added {
		t.Fatalf("retry of the dead writer's c: %+v %v, want added", res, err)
	}
	checkRedisConsistent(t, live)
}

// TestRedisSpreadFormat: a spread index is format 2 with layout spread
// in its meta, which a build reading only format 1 refuses (ErrVersion,
// as TestRedisOpenErrors shows for a newer format); a URL asking for the
// other layout is refused; the default is the one-slot layout of format 1,
// on a cluster as on a single server, and ?layout=spread makes a spread
// index on either. An index that keeps shingle sets (the default) is
// format 3 in either layout; an estimate-only one keeps 1 or 2.
func TestRedisSpreadFormat(t *testing.T) {
	cl := redistest.Cluster(t)
	srv := redistest.Server(t)
	p := sketch.Default(sketch.MinHash)
	ctx := context.Background()
	for _, tc := range []struct {
		url, layout, format string
		estimateOnly        bool
	}{
		{cl.URL("fmt") + "&layout=spread", layoutSpread, "2", true},
		{cl.URL("fmt1"), layoutOne, "1", true},
		{srv.URL("fmt"), layoutOne, "1", true},
		{srv.URL("fmt2") + "&layout=spread", layoutSpread, "2", true},
		{cl.URL("fmt3") + "&layout=spread", layoutSpread, "4", false},
		{srv.URL("fmt4"), layoutOne, "4", false},
	} {
		r, err := CreateRedis(tc.url, p, Options{EstimateOnly: tc.estimateOnly})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		meta, err := r.c.HGetAll(ctx, r.metaKey()).Result()
		if err != nil {
			t.Fatal(err)
		}
		if meta["layout"] != tc.layout || meta["format"] != tc.format || r.spread != (tc.layout == layoutSpread) {
			t.Errorf("%s: meta %v, spread %v; want layout %s, format %s", tc.url, meta, r.spread, tc.layout, tc.format)
		}
		other := layoutOne
		if tc.layout == layoutOne {
			other = layoutSpread
		}
		base, _, _ := strings.Cut(tc.url, "&layout")
		if _, err := OpenRedis(base+"&layout="+other, Options{}); !errors.Is(err, ErrParams) || !strings.Contains(err.Error(), "layout "+tc.layout) {
			t.Errorf("open %s with layout %s: %v, want ErrParams naming the layout", base, other, err)
		}
		st, err := r.Stats()
		if err != nil || fmt.Sprint(st.FormatVersion) != tc.format {
			t.Errorf("%s: stats format %d %v", tc.url, st.FormatVersion, err)
		}
		// Only the program's own format: one above it is refused.
		r.c.HSet(ctx, r.metaKey(), "format", RedisFormatVersion+1)
		if _, err := OpenRedis(tc.url, Options{}); !errors.Is(err, ErrVersion) {
			t.Errorf("open of format %d: %v, want ErrVersion", RedisFormatVersion+1, err)
		}
	}
	if _, err := OpenRedis(srv.URL("x")+"&layout=wide", Options{}); !errors.Is(err, ErrParams) {
		t.Errorf("layout=wide: %v, want ErrParams", err)
	}
}
