//go:build long

package store

import "testing"

// TestRedisKillDuringRewrite is TestRedisKillServer with an AOF rewrite
// started (BGREWRITEAOF) halfway through, 10 rounds per policy (issue 32
// item 3): under appendfsync always nothing acknowledged may be lost;
// under everysec the losses are counted and logged, for
// docs/format/redis.md ("Durability"), which says that a kill during a
// slow fsync can lose up to about 2 s.
func TestRedisKillDuringRewrite(t *testing.T) {
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) {
			var lost, acked, lossy int
			for round := range 10 {
				l, a, _ := killRedisRound(t, fsync, true)
				lost, acked = lost+l, acked+a
				if l > 0 {
					lossy++
					t.Logf("round %d: %d of %d acknowledged documents lost", round, l, a)
				}
			}
			t.Logf("appendfsync %s, kill -9 during an AOF rewrite: %d of %d acknowledged documents lost, in %d of 10 rounds", fsync, lost, acked, lossy)
			if fsync == "always" && lost > 0 {
				t.Errorf("appendfsync always lost %d acknowledged documents", lost)
			}
		})
	}
}
