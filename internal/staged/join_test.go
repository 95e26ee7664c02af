package staged

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/neardup/neardup/dedup"
)

// TestJoinStreamedBudget: a component larger than a join's hold goes to
// a scratch file of its own to be streamed, and one whose index and ids
// would pass the task's memory limit stops before it is joined, with a
// message naming its size and the flag; the scratch files go.
func TestJoinStreamedBudget(t *testing.T) {
	tmp := t.TempDir()
	j := &Job{Plan: &Plan{Options: dedup.Options{}, TaskMemory: 1e6, SpillMemory: 4 << 10}, TmpDir: tmp, Stderr: io.Discard, memLimit: 100 << 10}
	acc := &joinAcc{g: 3}
	src := func(fn func(*joinRec) error) error {
		for i := range 200 {
			// Four documents of components of their own among a giant
			// one; the sketches are never decoded: the giant's check
			// comes first.
			comp := uint64(7)
			if i%50 == 0 {
				comp = uint64(i)
			}
			rec := joinRec{doc: uint64(i), comp: comp, id: fmt.Appendf(nil, "d%d", i), length: 10, sketch: make([]byte, 100)}
			if err := fn(&rec); err != nil {
				return err
			}
		}
		return nil
	}
	err := j.joinBatches(context.Background(), acc, src, 200, 0)
	if err == nil || !strings.Contains(err.Error(), "join task 3: a component of 196 documents needs about") || !strings.Contains(err.Error(), "--task-memory 1000000") {
		t.Errorf("a component past the limit: %v", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("scratch files left: %v", left)
	}
}
