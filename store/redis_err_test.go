package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neardup/neardup/internal/redistest"
	"github.com/neardup/neardup/internal/testcert"
	"github.com/neardup/neardup/sketch"
)

// replyErr is a Redis error reply, as go-redis returns one (a type with a
// RedisError method).
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// TestRedisTransientReplies: the replies of a Redis that cannot answer
// yet (loading its data after a restart, a busy script, a cluster without
// its master) are ErrUnreachable, which the server answers with 503 and
// Retry-After; other replies stay internal errors (issue 32 item 5: 500
// "internal error" while Redis loaded).
func TestRedisTransientReplies(t *testing.T) {
	r := &Redis{loc: "redis://127.0.0.1:6379/0"}
	for _, c := range []struct {
		err       error
		transient bool
	}{
		{replyErr("LOADING Redis is loading the dataset in memory"), true},
		{fmt.Errorf("add script: %w", replyErr("LOADING Redis is loading the dataset in memory")), true},
		{replyErr("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."), true},
		{replyErr("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), true},
		{replyErr("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{replyErr("CLUSTERDOWN The cluster is down"), true},
		{replyErr("ERR unknown command 'FOO'"), false},
		{replyErr("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{errors.New("LOADING but not a reply"), false},
	} {
		if got := errors.Is(r.redisErr(c.err), ErrUnreachable); got != c.transient {
			t.Errorf("redisErr(%q) is ErrUnreachable: %v, want %v", c.err, got, c.transient)
		}
	}
}

// TestRedisTLSAndPassword: a rediss:// index on a Redis that serves TLS
// and asks for a password, given through NEARDUP_REDIS_PASSWORD_FILE (or
// NEARDUP_REDIS_PASSWORD) rather than the URL, its certificate trusted
// through NEARDUP_REDIS_CA_FILE; without them the open fails clearly
// (issue 32 item 7).
func TestRedisTLSAndPassword(t *testing.T) {
	dir := t.TempDir()
	cert, key := testcert.Write(t, dir)
	in := redistest.TLSServer(t, cert, key, "--requirepass", "s3cret-pass")
	url := "rediss://" + in.TLSAddr + "/0?prefix=tls"
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret-pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Setenv(EnvRedisPasswordFile, pwFile)
	t.Setenv(EnvRedisCA, "")
	if _, err := CreateRedis(url, sketch.Default(sketch.MinHash), Options{}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("rediss:// without the authority = %v, want a certificate error", err)
	}
	t.Setenv(EnvRedisCA, cert)
	t.Setenv(EnvRedisPasswordFile, "")
	if _, err := CreateRedis(url, sketch.Default(sketch.MinHash), Options{}); err == nil || !strings.Contains(err.Error(), "NOAUTH") && !strings.Contains(err.Error(), "AUTH") {
		t.Errorf("rediss:// without the password = %v, want an authentication error", err)
	}

	t.Setenv(EnvRedisPasswordFile, pwFile)
	r, err := CreateRedis(url, sketch.Default(sketch.MinHash), Options{})
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := r.NewSketcher()
	text := "a document sent to Redis over TLS, with the password from a file"
	if err := r.Add("d1", sk.Sketch(text)); err != nil {
		t.Fatal(err)
	}
	r.Close()

	t.Setenv(EnvRedisPasswordFile, "")
	t.Setenv(EnvRedisPassword, "s3cret-pass")
	r, err = OpenRedis(url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ms, err := r.Query(nil, sk.Sketch(text), 1)
	if err != nil || len(ms) != 1 || ms[0].ID != "d1" {
		t.Errorf("Check over TLS = %v, %v; want d1", ms, err)
	}
}

// TestRedisDurability: index stats say what the Redis server persists,
// and a warning names what everything weaker than appendfsync always can
// lose (issue 32 item 3: acknowledged documents lost under everysec when
// redis-server was killed during an AOF rewrite).
func TestRedisDurability(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--appendonly", "yes", "--appendfsync", "always"}, DurabilityAlways},
		{[]string{"--appendonly", "yes", "--appendfsync", "everysec"}, DurabilityEverysec},
		{nil, DurabilitySnapshots},
	} {
		in := redistest.Server(t, c.args...)
		r, err := CreateRedis(in.URL("d"), sketch.Default(sketch.MinHash), Options{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := r.Stats()
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if st.RedisDurability != c.want {
			t.Errorf("Redis %v: durability %q, want %q", c.args, st.RedisDurability, c.want)
		}
		if w := DurabilityWarning(st.RedisDurability); (w == "") != (c.want == DurabilityAlways) {
			t.Errorf("Redis %v: warning %q", c.args, w)
		}
	}
}
