package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/neardup/neardup/internal/executor"
	"github.com/neardup/neardup/internal/objstore"
	"github.com/neardup/neardup/internal/staged"
)

// TestUsageFromTasks: usage.json and the stage lines come from what the
// tasks recorded in the work folder when no executor reported them (as
// under Slurm), the executor's report winning where there is one.
func TestUsageFromTasks(t *testing.T) {
	ctx := context.Background()
	work, err := objstore.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer work.Close()
	put := func(stage string, i int, peak int64, cpu time.Duration) {
		b, _ := json.Marshal(newTaskUsage(stage, i, executor.TaskUsage{PeakRSS: peak, User: cpu, Sys: cpu / 2}))
		if err := work.PutBytes(ctx, staged.UsageName(stage, i), b); err != nil {
			t.Fatal(err)
		}
	}
	put("sign", 0, 100<<20, time.Second)
	put("sign", 1, 150<<20, 2*time.Second)
	put("join", 0, 300<<20, 4*time.Second)
	var u usageLog
	u.add("join", 0, executor.TaskUsage{PeakRSS: 310 << 20, User: 4 * time.Second})
	var lines bytes.Buffer
	if err := u.save(ctx, work, &staged.Plan{TaskMemory: 1e9}, &lines); err != nil {
		t.Fatal(err)
	}
	want := "stage sign: largest task 1, peak RSS 150 MB; CPU 4.5s in 2 tasks\nstage join: largest task 0, peak RSS 310 MB; CPU 4.0s in 1 task\n"
	if lines.String() != want {
		t.Errorf("stage lines:\n%s\nwant\n%s", lines.String(), want)
	}
	b, err := work.ReadAll(ctx, usageName)
	if err != nil {
		t.Fatal(err)
	}
	var f usageFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Tasks) != 3 || f.TaskMemory != 1e9 || !strings.Contains(string(b), `"peak_rss_bytes": 157286400`) {
		t.Errorf("usage.json:\n%s", b)
	}
}
