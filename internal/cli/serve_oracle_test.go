package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/neardup/neardup/internal/redistest"
	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/store"
)

// groupTexts is issue 27's corpus: groups of 4 variants of a 120-word
// text, each the text with one word replaced (pairwise word-5 Jaccard
// about 0.84), in input order.
func groupTexts(groups int) (ids, texts []string) {
	r := rand.New(rand.NewPCG(27, 150))
	word := func() string { return fmt.Sprintf("w%d", r.IntN(50000)) }
	for g := range groups {
		base := make([]string, 120)
		for i := range base {
			base[i] = word()
		}
		for v := range 4 {
			t := append([]string(nil), base...)
			t[r.IntN(len(t))] = word()
			ids = append(ids, fmt.Sprintf("g%d-v%d", g, v))
			texts = append(texts, strings.Join(t, " "))
		}
	}
	return ids, texts
}

// leaderKeeps writes the documents (in order) and returns the ids that
// neardup dedup --cluster leader --keep first keeps.
func leaderKeeps(t *testing.T, ids, texts []string, order []int) map[string]bool {
	t.Helper()
	dir := t.TempDir()
	in, clusters := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "clusters.jsonl")
	var sb strings.Builder
	for _, i := range order {
		b, _ := json.Marshal(map[string]string{"id": ids[i], "text": texts[i]})
		sb.Write(append(b, '\n'))
	}
	if err := os.WriteFile(in, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI("dedup", "--cluster", "leader", "--keep", "first", "--clusters", clusters, "-o", os.DevNull, in); code != 0 {
		t.Fatalf("dedup: %d %s", code, errs)
	}
	f, err := os.Open(clusters)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kept := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c struct {
			ID   string `json:"id"`
			Kept bool   `json:"kept"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if c.Kept {
			kept[c.ID] = true
		}
	}
	return kept
}

// TestServeRedisLeaderOracle feeds issue 27's 600 texts (150 groups of 4
// near-duplicates at Jaccard about 0.84) to two neardup serve processes
// sharing one Redis index, on a server and on a 3-master cluster (one
// slot and spread layouts), and compares what check-and-add adds with
// neardup dedup --cluster leader --keep first. Sent one at a time in input
// order, alternating between the servers, the index adds exactly the
// documents dedup keeps. Sent concurrently (one client a server, the even
// documents to one and the odd to the other), the documents reach the
// index in an order of their own, and the index adds what dedup keeps
// over that order: dedup over the texts with the added ones first keeps
// exactly them (the count may differ from the input order's where the
// banding missed a pair: store's TestRedisConcurrentExactCheckAndAdd).
// Every match reported either way is exact and at or above the threshold.
func TestServeRedisLeaderOracle(t *testing.T) {
	if !redistest.Available() {
		t.Skip("no redis-server")
	}
	ids, texts := groupTexts(150)
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	want := leaderKeeps(t, ids, texts, order)
	p := sketch.Default(sketch.MinHash)
	k, err := p.NewSketcherWith(sketch.SketcherOptions{Sets: true})
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string][]uint64{}
	for i, txt := range texts {
		var sk sketch.Sketch
		k.Sketch(&sk, txt)
		sets[ids[i]] = sk.Set
	}
	srv, cl := redistest.Server(t), redistest.Cluster(t)
	targets := map[string]func(string) string{
		"server":         func(n string) string { return srv.URL(n) },
		"cluster":        func(n string) string { return cl.URL(n) },
		"cluster-spread": func(n string) string { return cl.URL(n) + "&layout=spread" },
	}
	client := &http.Client{Timeout: 30 * time.Second}
	for name, url := range targets {
		t.Run(name, func(t *testing.T) {
			for _, concurrent := range []bool{false, true} {
				u := url(fmt.Sprint("oracle-", name, "-", concurrent))
				if code, _, errs := runCLI("index", "create", "--index", u); code != 0 {
					t.Fatalf("create: %d %s", code, errs)
				}
				servers := []*child{startServer(t, "--index", u), startServer(t, "--index", u)}
				added := make([]bool, len(ids))
				send := func(i int) error {
					var out struct {
						Added   bool          `json:"added"`
						Matches []store.Match `json:"matches"`
					}
					code, err := post(client, servers[i%2].addr+"/v1/check-and-add", map[string]string{"id": ids[i], "text": texts[i]}, &out)
					if err != nil || code/100 != 2 {
						return fmt.Errorf("%s: check-and-add: %d %v", ids[i], code, err)
					}
					if !out.Added && len(out.Matches) == 0 {
						return fmt.Errorf("%s: neither added nor a duplicate", ids[i])
					}
					for _, m := range out.Matches {
						if j := jaccard.Set(sets[ids[i]], sets[m.ID]); !m.Exact || m.Similarity != j || j < p.Threshold {
							return fmt.Errorf("%s matches %s with %+v; exact Jaccard %v", ids[i], m.ID, m, j)
						}
					}
					added[i] = out.Added
					return nil
				}
				if !concurrent {
					for i := range ids {
						if err := send(i); err != nil {
							t.Fatal(err)
						}
					}
				} else {
					var wg sync.WaitGroup
					errs := make([]error, 2)
					for s := range 2 {
						wg.Go(func() {
							for i := s; i < len(ids) && errs[s] == nil; i += 2 {
								errs[s] = send(i)
							}
						})
					}
					wg.Wait()
					for _, err := range errs {
						if err != nil {
							t.Fatal(err)
						}
					}
				}
				got := map[string]bool{}
				var first, rest []int
				for i, a := range added {
					if a {
						got[ids[i]] = true
						first = append(first, i)
					} else {
						rest = append(rest, i)
					}
				}
				oracle, how := want, "in input order"
				if concurrent {
					oracle, how = leaderKeeps(t, ids, texts, append(first, rest...)), "with the added documents first"
				}
				if d := diffKept(got, oracle); d != "" {
					t.Errorf("concurrent %v: two servers added %d documents; dedup --cluster leader --keep first %s keeps %d:%s", concurrent, len(got), how, len(oracle), d)
				}
				t.Logf("concurrent %v: %d added through two servers; dedup --cluster leader --keep first keeps %d in input order", concurrent, len(got), len(want))
			}
		})
	}
}

// diffKept lists the ids in one set and not the other.
func diffKept(got, want map[string]bool) string {
	var b strings.Builder
	for id := range got {
		if !want[id] {
			fmt.Fprintf(&b, " +%s", id)
		}
	}
	for id := range want {
		if !got[id] {
			fmt.Fprintf(&b, " -%s", id)
		}
	}
	return b.String()
}
