// Package redistest starts real Redis servers for tests: one server, or a
// Redis Cluster of three masters made with redis-cli --cluster create. Each
// runs from a temporary directory on free loopback ports and is killed when
// the test ends.
//
// A test that needs Redis calls Server or Cluster. When redis-server or
// redis-cli is not on PATH the test is skipped with a message saying so,
// unless the environment sets NEARDUP_REQUIRE_REDIS=1 (CI does), in which
// case it fails: a CI run must never pass by skipping the Redis tests.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Require is the environment variable that turns a missing redis-server
// into a test failure instead of a skip.
const Require = "NEARDUP_REQUIRE_REDIS"

// need skips (or fails, under Require) the test when a binary is missing.
func need(t testing.TB, bins ...string) {
	t.Helper()
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			if os.Getenv(Require) == "1" {
				t.Fatalf("%s not found on PATH and %s=1: install the Debian packages redis-server and redis-tools", b, Require)
			}
			t.Skipf("%s not found on PATH: install the Debian packages redis-server and redis-tools (set %s=1 to fail instead of skipping)", b, Require)
		}
	}
}

// Available tells whether redis-server and redis-cli are on PATH.
func Available() bool {
	for _, b := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(b); err != nil {
			return false
		}
	}
	return true
}

// portMu keeps two servers of one test binary from picking the same port
// between the probe and the bind.
var portMu sync.Mutex

// freePort returns a loopback TCP port that is free, and whose cluster bus
// port (port + 10000) is free too when bus is set.
func freePort(t testing.TB, bus bool) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !bus {
			return p
		}
		if p+10000 > 65535 {
			continue
		}
		l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		if err != nil {
			continue
		}
		l2.Close()
		return p
	}
	t.Fatal("redistest: no free port pair found")
	return 0
}

// Instance is one running redis-server.
type Instance struct {
	t    testing.TB
	Addr string // 127.0.0.1:PORT
	Port int
	Dir  string // its working directory (AOF, RDB, nodes.conf, log)
	// TLSAddr is 127.0.0.1:PORT of its TLS port (TLSServer), else "".
	TLSAddr  string
	args     []string
	password string // of --requirepass, sent before each command

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Server starts one redis-server with the extra configuration args (pairs
// such as "--appendonly", "yes") and returns it running and ready. It is
// killed when the test ends.
func Server(t testing.TB, args ...string) *Instance {
	t.Helper()
	need(t, "redis-server", "redis-cli")
	return start(t, false, args)
}

// TLSServer is Server with a TLS port too (Instance.TLSAddr), serving the
// PEM certificate and key given and not asking clients for certificates.
func TLSServer(t testing.TB, certFile, keyFile string, args ...string) *Instance {
	t.Helper()
	need(t, "redis-server", "redis-cli")
	return startTLS(t, false, args, func(in *Instance) []string {
		port := freePort(t, false)
		for port == in.Port {
			port = freePort(t, false)
		}
		in.TLSAddr = "127.0.0.1:" + strconv.Itoa(port)
		return []string{"--tls-port", strconv.Itoa(port), "--tls-cert-file", certFile, "--tls-key-file", keyFile,
			"--tls-ca-cert-file", certFile, "--tls-auth-clients", "no"}
	})
}

func start(t testing.TB, cluster bool, args []string) *Instance {
	t.Helper()
	return startTLS(t, cluster, args, nil)
}

func startTLS(t testing.TB, cluster bool, args []string, tlsArgs func(*Instance) []string) *Instance {
	t.Helper()
	portMu.Lock()
	defer portMu.Unlock()
	dir := t.TempDir()
	in := &Instance{t: t, Dir: dir}
	in.Port = freePort(t, cluster)
	in.Addr = "127.0.0.1:" + strconv.Itoa(in.Port)
	if tlsArgs != nil {
		args = append(tlsArgs(in), args...)
	}
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--requirepass" {
			in.password = args[i+1]
		}
	}
	in.args = append([]string{
		"--port", strconv.Itoa(in.Port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--save", "",
		"--logfile", filepath.Join(dir, "redis.log"),
		"--protected-mode", "no",
	}, args...)
	if cluster {
		in.args = append(in.args, "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", "2000")
	}
	if err := in.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Kill)
	return in
}

// Start starts the server (again, after Kill) with the same port,
// directory and configuration, and waits until it answers PING with PONG
// (and, with an append-only file, has loaded it).
func (in *Instance) Start() error {
	return in.startUntil(func(reply string) bool { return reply == "+PONG" })
}

// StartLoading is Start that returns as soon as the server answers at
// all, even "-LOADING" while it still loads its data: for tests of what
// clients see during a restart (start it with "--key-load-delay" and
// "--loading-process-events-interval-bytes" to make the load last).
func (in *Instance) StartLoading() error {
	return in.startUntil(func(reply string) bool { return reply != "" })
}

func (in *Instance) startUntil(ready func(reply string) bool) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd != nil {
		return fmt.Errorf("redistest: %s already running", in.Addr)
	}
	cmd := exec.Command("redis-server", in.args...)
	cmd.Dir = in.Dir
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start redis-server: %w", err)
	}
	in.cmd = cmd
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if reply, err := in.command("PING"); err == nil && ready(reply) {
			go func() { <-exited }()
			return nil
		}
		select {
		case err := <-exited:
			in.cmd = nil
			return fmt.Errorf("redistest: redis-server on %s exited: %v; log:\n%s", in.Addr, err, in.log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			in.cmd = nil
			return fmt.Errorf("redistest: redis-server on %s not ready after 20s; log:\n%s", in.Addr, in.log())
		}
	}
}

// Kill kills the server with SIGKILL (nothing is flushed that the
// configured fsync policy has not already written) and waits for it.
func (in *Instance) Kill() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd == nil {
		return
	}
	in.cmd.Process.Kill()
	// The goroutine started in Start reaps it; wait for the port to close.
	for range 500 {
		c, err := net.DialTimeout("tcp", in.Addr, 50*time.Millisecond)
		if err != nil {
			break
		}
		c.Close()
		time.Sleep(10 * time.Millisecond)
	}
	in.cmd = nil
}

func (in *Instance) log() string {
	b, _ := os.ReadFile(filepath.Join(in.Dir, "redis.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Command sends one inline command (such as "BGREWRITEAOF") and returns
// the first line of its reply.
func (in *Instance) Command(cmd string) (string, error) { return in.command(cmd) }

// command sends one inline command and returns the first reply line.
func (in *Instance) command(cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", in.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	br := bufio.NewReader(c)
	if in.password != "" {
		if _, err := c.Write([]byte("AUTH " + in.password + "\r\n")); err != nil {
			return "", err
		}
		if _, err := br.ReadString('\n'); err != nil {
			return "", err
		}
	}
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	line, err := br.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// URL is the neardup index URL of the server with the given key prefix.
func (in *Instance) URL(prefix string) string {
	return "redis://" + in.Addr + "/0?prefix=" + prefix
}

// ClusterInstance is a running Redis Cluster of three masters.
type ClusterInstance struct {
	Nodes []*Instance
}

// Addrs returns the masters' addresses.
func (c *ClusterInstance) Addrs() []string {
	a := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		a[i] = n.Addr
	}
	return a
}

// URL is the neardup index URL of the cluster with the given key prefix.
func (c *ClusterInstance) URL(prefix string) string {
	return "redis+cluster://" + strings.Join(c.Addrs(), ",") + "/?prefix=" + prefix
}

// Cluster starts three redis-servers in cluster mode, joins them with
// redis-cli --cluster create (three masters, no replicas, the 16384 slots
// split between them) and waits until every node reports cluster_state:ok.
func Cluster(t testing.TB, args ...string) *ClusterInstance {
	t.Helper()
	need(t, "redis-server", "redis-cli")
	c := &ClusterInstance{}
	for range 3 {
		c.Nodes = append(c.Nodes, start(t, true, args))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	create := append([]string{"--cluster", "create"}, c.Addrs()...)
	create = append(create, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.CommandContext(ctx, "redis-cli", create...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, n := range c.Nodes {
		for {
			info, err := exec.CommandContext(ctx, "redis-cli", "-h", "127.0.0.1", "-p", strconv.Itoa(n.Port), "cluster", "info").Output()
			if err == nil && strings.Contains(string(info), "cluster_state:ok") {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("redis cluster node %s not ok after 60s: %v\n%s", n.Addr, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}
