package slurmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCluster starts a cluster, runs a 4-task array job on it and checks
// that every task ran, on the nodes of the cluster, and that Down and Up
// bring it back.
func TestCluster(t *testing.T) {
	c := Start(t)
	out := t.TempDir()
	sbatch := func() string {
		cmd := exec.Command("sbatch", "--parsable", "--array=0-3", "--output="+filepath.Join(out, "%A_%a.log"),
			"--wrap", `echo "$SLURMD_NODENAME" > `+out+`/task-$SLURM_ARRAY_TASK_ID`)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sbatch: %v\n%s\n%s", err, b, c.Logs())
		}
		return strings.TrimSpace(string(b))
	}
	wait := func(id string) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			b, err := exec.Command("squeue", "-h", "-r", "-t", "all", "-j", id, "-o", "%T").CombinedOutput()
			if err != nil {
				t.Fatalf("squeue: %v\n%s", err, b)
			}
			states := strings.Fields(string(b))
			done := len(states) == 4
			for _, s := range states {
				if s != "COMPLETED" {
					done = false
				}
			}
			if done {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s: states %v after 30s\n%s", id, states, c.Logs())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	wait(sbatch())
	for i := range 4 {
		b, err := os.ReadFile(filepath.Join(out, "task-"+string(rune('0'+i))))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.TrimSpace(string(b)); n != "n1" && n != "n2" {
			t.Errorf("task %d ran on %q, want n1 or n2", i, n)
		}
	}
	if err := c.Down(); err != nil {
		t.Fatal(err)
	}
	if err := c.Up(); err != nil {
		t.Fatal(err)
	}
	wait(sbatch())
}
