package store

import (
	"errors"
	"fmt"
	"testing"
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
