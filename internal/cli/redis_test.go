package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/neardup/neardup/internal/redistest"
)

// runCLI runs the command line and returns its exit code, stdout and
// stderr.
func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, nil, &out, &errb)
	return code, out.String(), errb.String()
}

// TestIndexCommandsRedis runs every index command, and dedup --against,
// on a Redis server and on a Redis Cluster.
func TestIndexCommandsRedis(t *testing.T) {
	cl := redistest.Cluster(t)
	targets := map[string]string{
		"server":  redistest.Server(t).URL("cli"),
		"cluster": cl.URL("cli"),
		// The spread layout (docs/format/redis.md).
		"cluster-spread": cl.URL("cli-s") + "&layout=spread",
	}
	in := writeDocs(t, 300)
	for name, url := range targets {
		t.Run(name, func(t *testing.T) {
			if code, _, errs := runCLI("index", "create", "--index", url, "--method", "simhash"); code != 0 {
				t.Fatalf("create: %d %s", code, errs)
			}
			if code, _, errs := runCLI("index", "create", "--index", url); code != 2 || !strings.Contains(errs, "already exists") {
				t.Fatalf("create twice: %d %s; want 2, already exists", code, errs)
			}
			res := filepath.Join(t.TempDir(), "res.jsonl")
			code, _, errs := runCLI("index", "add", "--index", url, "--check", "-o", res, "--batch", "64", in)
			out, _ := os.ReadFile(res)
			if code != 0 || strings.Count(string(out), `"added":true`) != 300 {
				t.Fatalf("add: %d %s %s", code, errs, out[:min(len(out), 300)])
			}
			code, _, errs = runCLI("index", "query", "--index", url, "--duplicates-only", "-o", res, in)
			out, _ = os.ReadFile(res)
			if code != 0 || strings.Count(string(out), "\n") != 300 {
				t.Fatalf("query: %d %s; %d lines, want every document its own duplicate", code, errs, strings.Count(string(out), "\n"))
			}
			if code, _, errs = runCLI("index", "remove", "--index", url, "d1", "d2"); code != 0 {
				t.Fatalf("remove: %d %s", code, errs)
			}
			code, stats, errs := runCLI("index", "stats", "--index", url, "--json")
			var st struct {
				Docs    int64  `json:"docs"`
				Backend string `json:"backend"`
			}
			if code != 0 || json.Unmarshal([]byte(stats), &st) != nil || st.Docs != 298 || st.Backend != "redis" {
				t.Fatalf("stats: %d %s %s", code, errs, stats)
			}
			if code, _, errs = runCLI("index", "compact", "--index", url); code != 2 {
				t.Fatalf("compact of a Redis index: %d %s, want a usage error", code, errs)
			}
			// dedup --against the Redis index drops every input document
			// but the two removed.
			clusters := filepath.Join(t.TempDir(), "c.jsonl")
			if code, _, errs = runCLI("dedup", "--method", "simhash", "--against", url, "--clusters", clusters, "-o", os.DevNull, in); code != 0 {
				t.Fatalf("dedup --against: %d %s", code, errs)
			}
			b, _ := os.ReadFile(clusters)
			if n := strings.Count(string(b), `"kept":true`); n != 2 {
				t.Fatalf("dedup --against %s: %d kept, want 2 (the removed documents)", url, n)
			}
		})
	}
	// Clear errors: another prefix, an unreachable server.
	url := strings.Replace(targets["server"], "prefix=cli", "prefix=other", 1)
	if code, _, errs := runCLI("index", "stats", "--index", url); code != 2 || !strings.Contains(errs, `no index with prefix "other"`) {
		t.Errorf("stats of a missing prefix: %d %s", code, errs)
	}
	if code, _, errs := runCLI("index", "stats", "--index", "redis://127.0.0.1:1/0?prefix=x"); code != 1 || !strings.Contains(errs, "--index redis://127.0.0.1:1/0?prefix=x: the Redis server does not answer (") {
		t.Errorf("stats of an unreachable server: %d %s", code, errs)
	}
}

// post sends a JSON body and decodes the JSON answer into out.
func post(c *http.Client, url string, in, out any) (int, error) {
	body, _ := json.Marshal(in)
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s: %v", b, err)
		}
	}
	return resp.StatusCode, nil
}

// TestServeRedisTwoProcesses sends near-duplicates at once to two serve
// processes on one Redis index (a server, then a cluster): exactly one of
// each family is added.
func TestServeRedisTwoProcesses(t *testing.T) {
	cl := redistest.Cluster(t)
	targets := map[string]string{
		"server":  redistest.Server(t).URL("two"),
		"cluster": cl.URL("two"),
		// The spread layout (docs/format/redis.md).
		"cluster-spread": cl.URL("two-s") + "&layout=spread",
	}
	for name, url := range targets {
		t.Run(name, func(t *testing.T) {
			if code, _, errs := runCLI("index", "create", "--index", url); code != 0 {
				t.Fatalf("create: %d %s", code, errs)
			}
			servers := []*child{startServer(t, "--index", url), startServer(t, "--index", url)}
			client := &http.Client{Timeout: 20 * time.Second}
			const families, perServer = 60, 3
			r := rand.New(rand.NewPCG(5, 5))
			bases := make([][]string, families)
			for f := range bases {
				bases[f] = strings.Fields(randomText(r))
			}
			var added [families]atomic.Int32
			var wg sync.WaitGroup
			for s, srv := range servers {
				for w := range perServer {
					wg.Go(func() {
						for f := range families {
							ws := append([]string(nil), bases[f]...)
							ws[len(ws)-1] = fmt.Sprintf("variant-%d-%d", s, w)
							var out struct {
								Added   bool              `json:"added"`
								Matches []json.RawMessage `json:"matches"`
							}
							code, err := post(client, srv.addr+"/v1/check-and-add", map[string]string{"id": fmt.Sprintf("f%d-s%d-w%d", f, s, w), "text": strings.Join(ws, " ")}, &out)
							if err != nil || code/100 != 2 {
								t.Errorf("check-and-add: %d %v", code, err)
								return
							}
							if out.Added {
								added[f].Add(1)
							} else if len(out.Matches) == 0 {
								t.Errorf("family %d: neither added nor a duplicate", f)
							}
						}
					})
				}
			}
			wg.Wait()
			for f := range families {
				if n := added[f].Load(); n != 1 {
					t.Errorf("family %d: %d added through two servers, want exactly 1", f, n)
				}
			}
		})
	}
}

// TestServeRedisKill9 loads one of two serve processes on one Redis index,
// kills it with SIGKILL, and finds every document it acknowledged through
// the other: under appendfsync always and everysec alike, an acknowledged
// document is in Redis before serve answers.
func TestServeRedisKill9(t *testing.T) {
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) {
			serveRedisKill9(t, redistest.Server(t, "--appendonly", "yes", "--appendfsync", fsync).URL("kill"))
		})
	}
	// The spread layout (docs/format/redis.md): a writer killed between
	// its pending record and its commit leaves nothing acknowledged
	// behind, and the other server is not blocked by what it left.
	t.Run("cluster-spread", func(t *testing.T) {
		serveRedisKill9(t, redistest.Cluster(t, "--appendonly", "yes", "--appendfsync", "always").URL("kill")+"&layout=spread")
	})
}

func serveRedisKill9(t *testing.T, url string) {
	if code, _, errs := runCLI("index", "create", "--index", url); code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	a, b := startServer(t, "--index", url), startServer(t, "--index", url)
	client := &http.Client{Timeout: 10 * time.Second}
	load := startAckLoad(t, a.addr, 4, 7, func(g, i int, r *rand.Rand) (string, []ackDoc) {
		docs := make([]ackDoc, 4)
		for j := range docs {
			docs[j] = ackDoc{fmt.Sprintf("g%d-%d-%d", g, i, j), randomText(r)}
		}
		return "/v1/batch/check-and-add", docs
	})
	acked := load.killAfter(t, a, 300)
	for id, text := range acked {
		var out struct {
			Matches []struct {
				ID string `json:"id"`
			} `json:"matches"`
		}
		code, err := post(client, b.addr+"/v1/check", map[string]string{"text": text}, &out)
		if err != nil || code != 200 || len(out.Matches) == 0 || out.Matches[0].ID != id {
			t.Fatalf("acknowledged %s not found through the other server: %d %v %+v", id, code, err, out)
		}
	}
	t.Logf("%d acknowledged documents found through the other server", len(acked))
}

// TestIndexCopy copies a directory index to Redis and back, resumes an
// interrupted copy, and refuses a target with other parameters.
func TestIndexCopy(t *testing.T) {
	in := redistest.Server(t)
	t.Run("server", func(t *testing.T) { indexCopy(t, in.URL("copy"), in.URL("other")) })
	cl := redistest.Cluster(t)
	t.Run("cluster-spread", func(t *testing.T) { indexCopy(t, cl.URL("copy")+"&layout=spread", cl.URL("other")) })
}

func indexCopy(t *testing.T, url, other string) {
	dir := createIndex(t)
	docs := writeDocs(t, 500)
	if code, _, errs := runCLI("index", "add", "--index", dir, "-q", docs); code != 0 {
		t.Fatalf("add: %d %s", code, errs)
	}
	// An interrupted copy: the target already holds part of the source.
	part := filepath.Join(t.TempDir(), "part.jsonl")
	b, _ := os.ReadFile(docs)
	lines := strings.SplitAfter(string(b), "\n")
	os.WriteFile(part, []byte(strings.Join(lines[:120], "")), 0o644)
	if code, _, errs := runCLI("index", "create", "--index", url); code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	if code, _, errs := runCLI("index", "add", "--index", url, "-q", part); code != 0 {
		t.Fatalf("add part: %d %s", code, errs)
	}
	code, out, errs := runCLI("index", "copy", "--from", dir, "--to", url, "--batch", "64", "--json")
	var sum copySummary
	if code != 0 || json.Unmarshal([]byte(out), &sum) != nil || sum.Copied != 380 || sum.Present != 120 || sum.TargetDocs != 500 {
		t.Fatalf("copy to redis: %d %s %s", code, errs, out)
	}
	back := filepath.Join(t.TempDir(), "back")
	code, out, errs = runCLI("index", "copy", "--from", url, "--to", back, "--json")
	if code != 0 || json.Unmarshal([]byte(out), &sum) != nil || sum.Copied != 500 || sum.TargetDocs != 500 {
		t.Fatalf("copy back: %d %s %s", code, errs, out)
	}
	// The copy answers every query as the original.
	r1, r2 := filepath.Join(t.TempDir(), "q1"), filepath.Join(t.TempDir(), "q2")
	if code, _, errs := runCLI("index", "query", "--index", dir, "-o", r1, "-q", docs); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := runCLI("index", "query", "--index", back, "-o", r2, "-q", docs); code != 0 {
		t.Fatal(errs)
	}
	a, _ := os.ReadFile(r1)
	c, _ := os.ReadFile(r2)
	if !bytes.Equal(a, c) {
		t.Fatal("queries of the copied index differ from the original's")
	}
	runCLI("index", "create", "--index", other, "--method", "simhash")
	if code, _, errs := runCLI("index", "copy", "--from", dir, "--to", other); code != 2 || !strings.Contains(errs, "incompatible") {
		t.Fatalf("copy into an index of other parameters: %d %s", code, errs)
	}
}

// TestServeWhileRedisLoads restarts the Redis under a running serve with
// a load slowed down to a couple of seconds (key-load-delay): while Redis
// answers LOADING, check-and-add gets 503 with Retry-After, never 500
// (issue 32 item 5: 48 of one round were 500 "internal error"); once it
// has loaded, the document added before the restart is found again.
func TestServeWhileRedisLoads(t *testing.T) {
	in := redistest.Server(t, "--key-load-delay", "400", "--loading-process-events-interval-bytes", "1024")
	url := in.URL("load")
	if code, _, errs := runCLI("index", "create", "--index", url); code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	srv := startServer(t, "--index", url)
	client := &http.Client{Timeout: 20 * time.Second}
	text := randomText(rand.New(rand.NewPCG(9, 9)))
	var out struct {
		Added   bool              `json:"added"`
		Matches []json.RawMessage `json:"matches"`
	}
	if code, err := post(client, srv.addr+"/v1/check-and-add", map[string]string{"id": "before", "text": text}, &out); err != nil || code/100 != 2 || !out.Added {
		t.Fatalf("check-and-add before the restart: %d %v %+v", code, err, out)
	}
	// 4,000 more keys make the load last about 1.6 s; SAVE writes them
	// (and the document) to the RDB the restart loads.
	for _, cmd := range []string{`EVAL "for i=1,4000 do redis.call('set','junk:'..i,'v') end" 0`, "SAVE"} {
		if reply, err := in.Command(cmd); err != nil || strings.HasPrefix(reply, "-") {
			t.Fatalf("%s: %q %v", cmd, reply, err)
		}
	}
	in.Kill()
	if err := in.StartLoading(); err != nil {
		t.Fatal(err)
	}
	if reply, _ := in.Command("PING"); !strings.HasPrefix(reply, "-LOADING") {
		t.Fatalf("Redis was not loading after the restart (PING: %q): the test proves nothing", reply)
	}
	body := `{"id":"during","text":` + strconvQuote(text+" during") + `}`
	loading, deadline := 0, time.Now().Add(30*time.Second)
	for {
		resp, err := client.Post(srv.addr+"/v1/check-and-add", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			if !strings.Contains(string(b), `"before"`) {
				t.Errorf("after the load the document added before is not a match: %s", b)
			}
			break
		}
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("while Redis loads: %d (Retry-After %q) %s; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
		loading++
		if time.Now().After(deadline) {
			t.Fatalf("still 503 after 30 s: %s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if loading == 0 {
		t.Errorf("no request was answered while Redis loaded: the test proves nothing")
	}
	t.Logf("%d requests answered 503 with Retry-After while Redis loaded", loading)
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
