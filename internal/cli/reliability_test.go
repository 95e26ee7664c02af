package cli

// The reliability suite: the real command line in child processes, killed,
// starved of disk, flooded and trickled. docs/reliability.md lists what
// each test promises.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/neardup/neardup/internal/smallfs"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/store"
)

// writeDocs writes n random documents (ids d0...) as JSONL.
func writeDocs(t *testing.T, n int) string {
	t.Helper()
	in := filepath.Join(t.TempDir(), "docs.jsonl")
	var sb strings.Builder
	r := rand.New(rand.NewPCG(3, 4))
	for i := range n {
		fmt.Fprintf(&sb, "{\"id\":\"d%d\",\"text\":%q}\n", i, randomText(r))
	}
	if err := os.WriteFile(in, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

// TestIndexAddKill9 kills `index add` with SIGKILL mid-run: every document
// it reported (a result line is written after its batch is on disk) is in
// the index, which reopens with consistent counters.
func TestIndexAddKill9(t *testing.T) {
	dir := createIndex(t)
	in := writeDocs(t, 20000)
	cmd := exec.Command(os.Args[0], "index", "add", "--index", dir, "--batch", "20", "-o", "-", in)
	cmd.Env = append(os.Environ(), "NEARDUP_SERVE_CHILD=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() {
		var line struct {
			ID    string `json:"id"`
			Added bool   `json:"added"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			continue // the last line, cut by the kill
		}
		if line.Added {
			acked = append(acked, line.ID)
		}
		if len(acked) >= 2000 && !killed {
			cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		}
	}
	cmd.Wait()
	if !killed {
		t.Fatalf("index add finished before the kill (%d documents): %s", len(acked), stderr.String())
	}
	t.Logf("%d documents acknowledged before SIGKILL", len(acked))
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatalf("reopening after SIGKILL: %v", err)
	}
	defer s.Close()
	for _, id := range acked {
		if _, err := s.Get(id); err != nil {
			t.Fatalf("acknowledged %s lost after SIGKILL: %v", id, err)
		}
	}
	n := 0
	s.Each(func(string, sketch.Sketch) error { n++; return nil })
	if int64(n) != s.Len() || n < len(acked) {
		t.Errorf("after SIGKILL: %d records, counter %d, %d acknowledged", n, s.Len(), len(acked))
	}
}

// TestServeStartsUnderReserve starts serve on a disk with less free space
// than the reserve: the warning says it in words and names --min-free-mb
// (it was "store: not enough free disk space ..."), and writes get 507.
func TestServeStartsUnderReserve(t *testing.T) {
	mnt := smallfs.Mount(t, 128<<20)
	dir := filepath.Join(mnt, "idx")
	createIndexAt(t, dir)
	smallfs.Fill(t, filepath.Join(mnt, "ballast"), 32<<20) // under the 64 MiB reserve, above a quarter of it
	srv := startServer(t, "--index", dir)
	// The address file is written after the start's warnings.
	msg := srv.stderr.String()
	if !strings.Contains(msg, "neardup: warning: not enough free disk space") || !strings.Contains(msg, "--min-free-mb") || strings.Contains(msg, "store:") {
		t.Errorf("start under the reserve: want a warning naming --min-free-mb, without 'store:':\n%s", msg)
	}
	resp, err := http.Post(srv.addr+"/v1/add", "application/json", strings.NewReader(`{"id":"a","text":"a document"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 507 {
		t.Errorf("add under the reserve = %d, want 507", resp.StatusCode)
	}
}

// TestServeDiskFull serves an index whose disk fills up (the default
// reserve, --min-free-mb 64, on a tmpfs with a little more free): writes
// get 507, checks and /healthz go on, writes resume once space is freed,
// SIGTERM still exits 0, and every acknowledged document is there.
func TestServeDiskFull(t *testing.T) {
	// The ballast is freed later; pebble preallocates each new
	// write-ahead log file (about 1.1 x the 16 MiB memtable).
	mnt := smallfs.Mount(t, 128<<20)
	dir := filepath.Join(mnt, "idx")
	createIndexAt(t, dir)
	ballast := filepath.Join(mnt, "ballast")
	smallfs.Fill(t, ballast, 4*store.DefaultMemTableSize+(3<<20)/2)
	srv := startServer(t, "--index", dir)
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(path string, body []byte) (int, []byte, http.Header) {
		resp, err := client.Post(srv.addr+path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v (the server died?)\n%s", path, err, srv.stderr)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b, resp.Header
	}
	r := rand.New(rand.NewPCG(5, 6))
	acked := 0
	for i := 0; ; i++ {
		if i == 1000 {
			t.Fatal("the disk never filled")
		}
		var docs []map[string]string
		for j := range 50 {
			docs = append(docs, map[string]string{"id": fmt.Sprintf("d%d-%d", i, j), "text": randomText(r)})
		}
		body, _ := json.Marshal(map[string]any{"documents": docs})
		code, b, hdr := post("/v1/batch/add", body)
		if code == 507 {
			if hdr.Get("Retry-After") == "" || bytes.Contains(b, []byte(mnt)) {
				t.Errorf("507 %s, Retry-After %q", b, hdr.Get("Retry-After"))
			}
			break
		}
		if code != 200 {
			t.Fatalf("batch %d = %d %s", i, code, b)
		}
		acked += 50
	}
	filler := filepath.Join(mnt, "filler")
	smallfs.Fill(t, filler, 32<<20) // stays below the reserve while pebble settles
	if code, b, _ := post("/v1/check", []byte(`{"text":"a check on a full disk"}`)); code != 200 {
		t.Errorf("check on a full disk = %d %s", code, b)
	}
	resp, err := client.Get(srv.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(hb, []byte(`"status":"degraded"`)) {
		t.Errorf("healthz on a full disk = %d %s", resp.StatusCode, hb)
	}
	os.Remove(ballast)
	os.Remove(filler)
	if code, b, _ := post("/v1/add", []byte(`{"id":"late","text":"added once space was freed"}`)); code != 201 {
		t.Errorf("add after freeing space = %d %s", code, b)
	} else {
		acked++
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	if err := srv.wait(); err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, srv.stderr)
	}
	t.Logf("server stderr: %d lines", strings.Count(srv.stderr.String(), "\n"))
	if s := srv.stderr.String(); strings.Contains(s, "panic") || strings.Contains(s, "fatal error") {
		t.Errorf("stderr: %s", s)
	}
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Len() != int64(acked) {
		t.Errorf("%d documents in the index, %d acknowledged", st.Len(), acked)
	}
}

// TestServeSlowClients opens connections that trickle their headers or
// their bodies (slowloris) while normal clients go on: the normal
// requests are served, and the server closes the slow connections once
// --timeout passes.
func TestServeSlowClients(t *testing.T) {
	dir := createIndex(t)
	srv := startServer(t, "--index", dir, "--timeout", "2s")
	host := strings.TrimPrefix(srv.addr, "http://")
	var closed atomic.Int32
	var wg sync.WaitGroup
	const slow = 40
	start := time.Now()
	for i := range slow {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		wg.Go(func() {
			var head string
			if i%2 == 0 { // headers, one byte at a time
				head = "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Slow: "
			} else { // a body, one byte at a time
				head = "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"text\":\""
			}
			if _, err := conn.Write([]byte(head)); err != nil {
				closed.Add(1)
				return
			}
			for time.Since(start) < 8*time.Second {
				time.Sleep(200 * time.Millisecond)
				if _, err := conn.Write([]byte("a")); err != nil {
					closed.Add(1)
					return
				}
			}
		})
	}
	client := &http.Client{Timeout: 2 * time.Second}
	var worst time.Duration
	for time.Since(start) < 5*time.Second {
		t0 := time.Now()
		resp, err := client.Post(srv.addr+"/v1/check", "application/json", strings.NewReader(`{"text":"a normal client"}`))
		if err != nil {
			t.Fatalf("a normal request failed among slow clients: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("a normal request = %d", resp.StatusCode)
		}
		worst = max(worst, time.Since(t0))
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	t.Logf("worst normal latency among %d slow clients: %v; %d slow connections closed by the server", slow, worst, closed.Load())
	if closed.Load() != slow {
		t.Errorf("%d of %d slow connections still open after 8 s with --timeout 2s", slow-int(closed.Load()), slow)
	}
	if worst > time.Second {
		t.Errorf("a normal request took %v among slow clients", worst)
	}
}
