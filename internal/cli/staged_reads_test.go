package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/neardup/neardup/internal/staged"
)

// TestStagedReadsLinear: the small objects that many tasks read are read
// O(N) times a stage, not N x N: with N = 6 tasks, the bucket stage
// reads at most 2N sign metas (it read each task's N metas, N^2, before
// plan version 8) and with --report the job reads each join cluster list
// once, in the examples task: N reads (plan version 11; each write task
// read the N lists, N^2, and twice before plan version 8, 2N^2).
// The job is planned by --executor print and its tasks run here, stage
// after stage, counting the work folder's reads (objstore.Folder.OnRead);
// the sign tasks spill (--task-spill), so each writes several runs, and
// the outputs are dedup's, byte for byte.
func TestStagedReadsLinear(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	lines := genCorpus(t, 31, 600)
	writeLines(t, filepath.Join(dir, "a.jsonl"), lines[:350])
	writeLines(t, filepath.Join(dir, "b.jsonl"), lines[350:])
	wantCl, wantOut, _ := stagedReference(t, dir)
	const n = 6
	run := t.TempDir()
	args := []string{"dedup", "-q", "--executor", "print", "--tasks", strconv.Itoa(n), "--task-spill", "16KB", "--work", run + "/work",
		"--clusters", run + "/cl", "-o", run + "/out", "--report", run + "/report.html", dir}
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatalf("print: exit %d: %s", code, stderr)
	}
	ctx := context.Background()
	job, err := staged.Load(ctx, run+"/work")
	if err != nil {
		t.Fatal(err)
	}
	defer job.Work.Close()
	metaRE := regexp.MustCompile(`^sign/\d+/meta\.json$`)
	listRE := regexp.MustCompile(`^join/\d+/clusters$`)
	runRE := regexp.MustCompile(`^sign/\d+/buckets\.\d+$`)
	var mu sync.Mutex
	var stage string
	metas, lists, spilled := map[string]int{}, map[string]int{}, 0
	job.Work.OnRead = func(name string) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case metaRE.MatchString(name):
			metas[stage]++
		case listRE.MatchString(name):
			lists[stage]++
		case runRE.MatchString(name):
			spilled++
		}
	}
	for _, st := range staged.StageNames {
		mu.Lock()
		stage = st
		mu.Unlock()
		for i := range job.Plan.TaskCount(st) {
			if err := job.RunTask(ctx, st, i); err != nil {
				t.Fatal(err)
			}
		}
	}
	if spilled == 0 {
		t.Errorf("the bucket tasks read no spilled run: the test's --task-spill no longer makes the sign tasks spill")
	}
	for _, st := range staged.StageNames {
		if metas[st] > 2*n {
			t.Errorf("stage %s: %d reads of sign metas, want at most %d (2N)", st, metas[st], 2*n)
		}
	}
	all := 0
	for _, c := range lists {
		all += c
	}
	if all != n || lists[staged.StageExamples] != n {
		t.Errorf("%d reads of join cluster lists (by stage %v), want %d: each list once, by the examples task", all, lists, n)
	}
	t.Logf("reads of sign metas by stage %v, of join cluster lists %v, of spilled runs %d", metas, lists, spilled)
	if got := concatParts(t, run+"/cl", n); !bytes.Equal(got, wantCl) {
		t.Errorf("the clusters differ from dedup's")
	}
	if got := concatParts(t, run+"/out", n); !bytes.Equal(got, wantOut) {
		t.Errorf("the kept documents differ from dedup's")
	}
}
