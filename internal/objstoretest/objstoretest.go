// Package objstoretest starts real object-storage servers for tests: an S3
// server (versitygw with its posix backend over a temporary folder) and a
// Google Cloud Storage emulator (fake-gcs-server). Each runs on a free
// loopback port and is killed when the test ends.
//
// A test that needs one calls S3 or GCS, then Env to point the process
// (and its children) at it, and Bucket for a fresh bucket. When the binary
// is missing the test is skipped with a message saying how to install it,
// unless the environment sets NEARDUP_REQUIRE_S3=1 (or
// NEARDUP_REQUIRE_GCS=1; CI sets both), in which case it fails: a CI run
// must never pass by skipping the object-storage tests.
//
// The binaries are looked up on PATH, then in GOPATH/bin (where
// `go install` puts them):
//
//	go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
//	go install github.com/fsouza/fake-gcs-server@v1.56.1
package objstoretest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The environment variables that turn a missing server binary into a
// test failure instead of a skip.
const (
	RequireS3  = "NEARDUP_REQUIRE_S3"
	RequireGCS = "NEARDUP_REQUIRE_GCS"
)

// The install commands, for messages.
const (
	installS3  = "go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"
	installGCS = "go install github.com/fsouza/fake-gcs-server@v1.56.1"
)

// lookBinary finds a binary on PATH or in GOPATH/bin.
func lookBinary(name string) (string, bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if home, err := os.UserHomeDir(); err == nil {
			gopath = filepath.Join(home, "go")
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, true
		}
	}
	return "", false
}

// need returns the path of a binary, or skips (fails, under require).
func need(t testing.TB, name, require, install string) string {
	t.Helper()
	p, ok := lookBinary(name)
	if ok {
		return p
	}
	if os.Getenv(require) == "1" {
		t.Fatalf("%s not found on PATH or in GOPATH/bin and %s=1: install it with `%s`", name, require, install)
	}
	t.Skipf("%s not found on PATH or in GOPATH/bin: install it with `%s` (set %s=1 to fail instead of skipping)", name, install, require)
	return ""
}

// S3Available tells whether versitygw can be found.
func S3Available() bool { _, ok := lookBinary("versitygw"); return ok }

// GCSAvailable tells whether fake-gcs-server can be found.
func GCSAvailable() bool { _, ok := lookBinary("fake-gcs-server"); return ok }

var portMu sync.Mutex

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// lockedBuffer is written by os/exec while the test may read it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
}

// start runs bin with args, waits until ready answers true (or the
// process exits, or 30 seconds pass) and kills it when the test ends.
func start(t testing.TB, bin string, args []string, addr string, ready func() bool) {
	t.Helper()
	var log lockedBuffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("objstoretest: start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for !ready() {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("objstoretest: %s on %s exited: %v; output:\n%s", filepath.Base(bin), addr, err, log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("objstoretest: %s on %s not ready after 30s; output:\n%s", filepath.Base(bin), addr, log.String())
		}
	}
}

// S3Server is a running versitygw.
type S3Server struct {
	Endpoint  string // http://127.0.0.1:PORT
	AccessKey string
	SecretKey string
	Region    string
	Root      string // the folder its posix backend serves: one directory per bucket
}

// S3 starts versitygw with its posix backend over a temporary folder,
// and returns it ready.
func S3(t testing.TB) *S3Server {
	t.Helper()
	bin := need(t, "versitygw", RequireS3, installS3)
	portMu.Lock()
	defer portMu.Unlock()
	root, sidecar := t.TempDir(), t.TempDir()
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s := &S3Server{Endpoint: "http://" + addr, AccessKey: "neardup-test", SecretKey: "neardup-test-secret", Region: "us-east-1", Root: root}
	// Metadata goes to a sidecar folder, so that the temporary folder
	// needs no extended attributes (tmpfs may lack them).
	args := []string{"--port", addr, "--access", s.AccessKey, "--secret", s.SecretKey, "--region", s.Region,
		"posix", "--sidecar", sidecar, root}
	start(t, bin, args, addr, func() bool {
		resp, err := http.Get(s.Endpoint + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	return s
}

// Env points the AWS SDK of this process and of its children at the
// server, with its credentials, and away from any profile or instance
// role of the machine.
func (s *S3Server) Env(t testing.TB) {
	t.Helper()
	t.Setenv("AWS_ENDPOINT_URL_S3", s.Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", s.Region)
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

var bucketSeq atomic.Int64

// bucketName is a fresh bucket name valid for S3 and GCS.
func bucketName(t testing.TB) string {
	name := strings.ToLower(t.Name())
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, name)
	if len(name) > 40 {
		name = name[:40]
	}
	return strings.Trim(fmt.Sprintf("t-%s-%d", name, bucketSeq.Add(1)), "-")
}

// Bucket creates a fresh bucket and returns its name. The posix backend
// makes a bucket of any directory of its root, so it is made there.
func (s *S3Server) Bucket(t testing.TB) string {
	t.Helper()
	name := bucketName(t)
	if err := os.Mkdir(filepath.Join(s.Root, name), 0o755); err != nil {
		t.Fatal(err)
	}
	return name
}

// GCSServer is a running fake-gcs-server.
type GCSServer struct {
	Host string // 127.0.0.1:PORT, the value of STORAGE_EMULATOR_HOST
}

// GCS starts fake-gcs-server in memory and returns it ready.
func GCS(t testing.TB) *GCSServer {
	t.Helper()
	bin := need(t, "fake-gcs-server", RequireGCS, installGCS)
	portMu.Lock()
	defer portMu.Unlock()
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s := &GCSServer{Host: addr}
	args := []string{"-scheme", "http", "-host", "127.0.0.1", "-port", strconv.Itoa(port),
		"-backend", "memory", "-public-host", addr, "-external-url", "http://" + addr, "-log-level", "warn"}
	start(t, bin, args, addr, func() bool {
		resp, err := http.Get("http://" + addr + "/storage/v1/b")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return s
}

// Env points the Google Cloud Storage client of this process and of its
// children at the emulator.
func (s *GCSServer) Env(t testing.TB) {
	t.Helper()
	t.Setenv("STORAGE_EMULATOR_HOST", s.Host)
}

// Bucket creates a fresh bucket and returns its name.
func (s *GCSServer) Bucket(t testing.TB) string {
	t.Helper()
	name := bucketName(t)
	body := strings.NewReader(`{"name":"` + name + `"}`)
	resp, err := http.Post("http://"+s.Host+"/storage/v1/b", "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("objstoretest: creating bucket %s: %s", name, resp.Status)
	}
	return name
}
