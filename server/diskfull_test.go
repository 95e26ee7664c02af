package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neardup/neardup/internal/smallfs"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/store"
)

// TestDiskFull serves an index on a small tmpfs until its disk is full:
// writes get 507 with Retry-After and change nothing, checks and /healthz
// go on (reporting the degraded state), and writes are accepted again once
// space is freed, without a restart.
func TestDiskFull(t *testing.T) {
	mnt := smallfs.Mount(t, 6<<20)
	st, err := store.Create(filepath.Join(mnt, "idx"), sketch.Default(sketch.MinHash),
		store.Options{CacheSize: 1 << 20, MemTableSize: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := New(st, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	ballast := filepath.Join(mnt, "ballast")
	smallfs.Fill(t, ballast, 4<<20)

	post := func(path, body string) (int, string, http.Header) {
		resp, err := ts.Client().Post(ts.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	acked := 0
	full := false
	for i := 0; i < 2000 && !full; i++ {
		var sb strings.Builder
		sb.WriteString(`{"documents":[`)
		for j := range 50 {
			if j > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"id":"d%d-%d","text":"%s"}`, i, j, randomWords(i*50+j, 60))
		}
		sb.WriteString(`]}`)
		code, body, hdr := post("/v1/batch/add", sb.String())
		switch code {
		case 200:
			acked += 50
		case 507:
			full = true
			if hdr.Get("Retry-After") == "" {
				t.Errorf("507 without Retry-After")
			}
			if strings.Contains(body, mnt) {
				t.Errorf("507 names a path: %s", body)
			}
		default:
			t.Fatalf("batch %d = %d %s, want 200 or 507", i, code, body)
		}
	}
	if !full || acked == 0 {
		t.Fatalf("full %v after %d documents: the test does not fill the disk", full, acked)
	}
	// Pebble deletes obsolete files in the background, freeing space a
	// small write could then take: keep the disk below the reserve.
	filler := filepath.Join(mnt, "filler")
	smallfs.Fill(t, filler, 512<<10)
	if st.Len() != int64(acked) {
		t.Errorf("index has %d documents, %d were acknowledged", st.Len(), acked)
	}
	if code, body, _ := post("/v1/add", `{"id":"late","text":"a late document"}`); code != 507 {
		t.Errorf("add on a full disk = %d %s", code, body)
	}
	if code, body, _ := post("/v1/check", `{"text":"a late document"}`); code != 200 {
		t.Errorf("check on a full disk = %d %s", code, body)
	}
	code, v := do(t, ts, "GET", "/healthz", "")
	if code != 200 || v["status"] != "degraded" || v["writable"] != false {
		t.Errorf("healthz on a full disk = %d %v", code, v)
	}
	code, v = do(t, ts, "GET", "/metrics", "")
	if m, _ := v["raw"].(string); code != 200 || !strings.Contains(m, "neardup_index_writable 0") || !strings.Contains(m, "neardup_writes_refused_disk_full_total 2") {
		t.Errorf("metrics on a full disk = %d:\n%s", code, m)
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if code, body, _ := post("/v1/add", `{"id":"late","text":"a late document"}`); code != 201 {
		t.Errorf("add after freeing space = %d %s", code, body)
	}
	if code, v := do(t, ts, "GET", "/healthz", ""); code != 200 || v["status"] != "ok" {
		t.Errorf("healthz after freeing space = %d %v", code, v)
	}
}

// TestDiskFullAtStart serves an index opened on a disk too full to replay
// its write-ahead log (opened read-only by the store): writes get 507 and
// /healthz says "degraded" as on a disk that fills while serving, but
// freeing space is not enough here, so both say to restart the server
// (they said "until space is freed", and writes stayed refused after it
// was).
func TestDiskFullAtStart(t *testing.T) {
	mnt := smallfs.Mount(t, 6<<20)
	dir := filepath.Join(mnt, "idx")
	opts := store.Options{CacheSize: 1 << 20, MemTableSize: 256 << 10} // 1 MiB kept free
	st, err := store.Create(dir, sketch.Default(sketch.MinHash), opts)
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := st.NewSketcher()
	if err := st.Add("a", sk.Sketch(randomWords(1, 60))); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ballast := filepath.Join(mnt, "ballast")
	smallfs.Fill(t, ballast, 64<<10)
	st, err = store.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := New(st, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for _, freed := range []bool{false, true} {
		if freed {
			if err := os.Remove(ballast); err != nil {
				t.Fatal(err)
			}
		}
		code, v := do(t, ts, "POST", "/v1/add", `{"id":"late","text":"a late document"}`)
		if msg, _ := v["error"].(string); code != 507 || !strings.Contains(msg, "restart the server") {
			t.Errorf("space freed %v: add = %d %v, want 507 saying to restart the server", freed, code, v)
		}
		code, v = do(t, ts, "GET", "/healthz", "")
		if r, _ := v["reason"].(string); code != 200 || v["status"] != "degraded" || !strings.Contains(r, "restart the server") {
			t.Errorf("space freed %v: healthz = %d %v, want degraded saying to restart the server", freed, code, v)
		}
	}
}

// randomWords returns n words chosen by seed, as JSON-safe text.
func randomWords(seed, n int) string {
	var sb strings.Builder
	x := uint64(seed)*0x9e3779b97f4a7c15 + 1
	for i := range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "w%d", x%20000)
	}
	return sb.String()
}
