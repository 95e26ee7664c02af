package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/neardup/neardup/internal/slurmtest"
	"github.com/neardup/neardup/internal/staged"
)

// The staged pipeline under Slurm, end to end: `neardup dedup --executor
// slurm` on a real cluster of two nodes (internal/slurmtest) gives the
// clusters and kept records of the plain `neardup dedup`, byte for byte,
// and a kill -9 of a task in the middle of a stage, followed by the same
// command, completes with the same outputs and no stray shard.

// slurmCorpus writes a corpus of n documents, a third of them near copies
// (three words changed) of an earlier one, and returns its path.
func slurmCorpus(t *testing.T, dir string, n int) string {
	t.Helper()
	r := rand.New(rand.NewPCG(26, 1))
	vocab := make([]string, 4000)
	for i := range vocab {
		w := make([]byte, 3+r.IntN(7))
		for j := range w {
			w[j] = byte('a' + r.IntN(26))
		}
		vocab[i] = string(w)
	}
	var docs [][]string
	var b bytes.Buffer
	for i := range n {
		var words []string
		if i > 0 && r.IntN(3) == 0 {
			words = slices.Clone(docs[r.IntN(len(docs))])
			for range 3 {
				words[r.IntN(len(words))] = vocab[r.IntN(len(vocab))]
			}
		} else {
			words = make([]string, 80+r.IntN(120))
			for j := range words {
				words[j] = vocab[r.IntN(len(vocab))]
			}
		}
		docs = append(docs, words)
		line, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("d%05d", i), "text": strings.Join(words, " ")})
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, "corpus.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// needStaged skips the test when neardup dedup has no staged pipeline.
func needStaged(t *testing.T) {
	t.Helper()
	var out bytes.Buffer
	Main([]string{"dedup", "--help"}, strings.NewReader(""), &out, &out)
	if !bytes.Contains(out.Bytes(), []byte("--executor")) {
		t.Skip("neardup dedup has no --executor yet: the staged pipeline (issue 26) is not in this build")
	}
}

// concatShards returns the shards of an output folder concatenated in
// name order, and their names.
func concatShards(t *testing.T, dir string) ([]byte, []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	var names []string
	for _, e := range entries { // ReadDir sorts by name
		names = append(names, e.Name())
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all, names
}

// runNeardup runs the binary with args and returns its combined output;
// it fails the test when the run fails and wantErr is false, or succeeds
// and wantErr is true.
func runNeardup(t *testing.T, c *slurmtest.Cluster, bin string, wantErr bool, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if (err != nil) != wantErr {
		t.Fatalf("neardup %s: err %v, want error %v\n%s\n%s", strings.Join(args, " "), err, wantErr, out, c.Logs())
	}
	return string(out)
}

func TestSlurmDedup(t *testing.T) {
	needStaged(t)
	dir := t.TempDir()
	bin := buildNeardup(t, dir)
	c := slurmtest.Start(t)
	corpus := slurmCorpus(t, dir, 3000)
	start := time.Now()

	runNeardup(t, c, bin, false, "dedup", "-q", "-o", filepath.Join(dir, "kept.jsonl"), "--clusters", filepath.Join(dir, "clusters.jsonl"), corpus)
	wantKept, _ := os.ReadFile(filepath.Join(dir, "kept.jsonl"))
	wantClusters, _ := os.ReadFile(filepath.Join(dir, "clusters.jsonl"))
	if len(wantClusters) == 0 {
		t.Fatal("the plain dedup found no clusters: the corpus tests nothing")
	}
	t.Logf("plain dedup: %v", time.Since(start).Round(time.Millisecond))

	staged := func(name string, wantErr bool) (string, string, string) {
		run := filepath.Join(dir, name)
		out := runNeardup(t, c, bin, wantErr, "dedup", "-q", "--executor", "slurm", "--tasks", "3",
			"--work", filepath.Join(run, "work"), "-o", filepath.Join(run, "kept"), "--clusters", filepath.Join(run, "clusters"), corpus)
		return filepath.Join(run, "kept"), filepath.Join(run, "clusters"), out
	}
	check := func(kept, clusters string) []string {
		t.Helper()
		gotClusters, cnames := concatShards(t, clusters)
		if !bytes.Equal(gotClusters, wantClusters) {
			t.Errorf("%s: the concatenated clusters shards (%d bytes) differ from neardup dedup --clusters (%d bytes)", clusters, len(gotClusters), len(wantClusters))
		}
		gotKept, knames := concatShards(t, kept)
		if !bytes.Equal(gotKept, wantKept) {
			t.Errorf("%s: the concatenated kept shards (%d bytes) differ from neardup dedup -o (%d bytes)", kept, len(gotKept), len(wantKept))
		}
		return append(cnames, knames...)
	}

	s := time.Now()
	kept, clusters, _ := staged("clean", false)
	cleanNames := check(kept, clusters)
	t.Logf("staged dedup on Slurm: %v", time.Since(s).Round(time.Millisecond))
	checkUsage(t, filepath.Join(dir, "clean", "work"), 3)

	// kill -9 of a task in the middle of a stage: the first task process
	// seen whose command names the work folder of this run.
	s = time.Now()
	work := filepath.Join(dir, "killed", "work")
	killed := make(chan string, 1)
	stop := make(chan struct{})
	go func() {
		defer close(killed)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if pid, cmdline := findTask(work); pid > 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed <- cmdline
				return
			}
		}
	}()
	kept, clusters, out := staged("killed", true)
	close(stop)
	victim := <-killed
	if victim == "" {
		t.Fatalf("no task process was seen to kill, yet the run failed:\n%s", out)
	}
	t.Logf("killed %q; the run failed with:\n%s", victim, out)
	if m := regexp.MustCompile(`slurm: stage \S+: task \d+ \(Slurm job \d+_\d+\) ended [A-Z_]+(?:; [^;]*)?; its log: (\S+)`).FindStringSubmatch(out); m == nil {
		t.Errorf("the failed run's message does not name the killed task and its log:\n%s", out)
	} else if _, err := os.Stat(m[1]); err != nil {
		t.Errorf("the killed task's log: %v", err)
	}
	_, _, _ = staged("killed", false)
	names := check(kept, clusters)
	if !slices.Equal(names, cleanNames) {
		t.Errorf("after the kill and the rerun, output files %q, want those of a clean run %q", names, cleanNames)
	}
	t.Logf("killed run and rerun: %v", time.Since(s).Round(time.Millisecond))
}

// findTask returns the pid and command line of a running `neardup task`
// process whose command line names work, or 0.
func findTask(work string) (int, string) {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) > 1 && filepath.Base(args[0]) == "neardup" && slices.Contains(args, "task") && strings.Contains(string(b), work) {
			return pid, strings.Join(args, " ")
		}
	}
	return 0, ""
}

// checkUsage: work's usage.json, from what the tasks recorded themselves
// whatever ran them, has every stage with each of its tasks (tasks of
// them, one for components and finish), a peak RSS and CPU.
func checkUsage(t *testing.T, work string, tasks int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(work, "usage.json"))
	if err != nil {
		t.Fatal(err)
	}
	var u usageFile
	if err := json.Unmarshal(b, &u); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range u.Stages {
		want := tasks
		if s.Stage == staged.StageComponents || s.Stage == staged.StageFinish {
			want = 1
		}
		if s.Tasks != want || s.LargestRSS < 1<<20 || s.CPUSeconds <= 0 {
			t.Errorf("usage.json: stage %s: %d tasks, largest peak RSS %d bytes, CPU %.3fs; want %d tasks, a peak and CPU", s.Stage, s.Tasks, s.LargestRSS, s.CPUSeconds, want)
		}
		got = append(got, s.Stage)
	}
	if want := planStages(t, work); !slices.Equal(got, want) {
		t.Errorf("usage.json: stages %v, want %v", got, want)
	}
}
