package executor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSlurmArray(t *testing.T) {
	for _, c := range []struct {
		idx  []int
		want string
	}{
		{[]int{0}, "0"},
		{[]int{0, 1, 2, 3}, "0-3"},
		{[]int{0, 3}, "0,3"},
		{[]int{0, 1, 3, 5, 6, 7, 9}, "0-1,3,5-7,9"},
	} {
		if got := slurmArray(c.idx); got != c.want {
			t.Errorf("slurmArray(%v) = %q, want %q", c.idx, got, c.want)
		}
	}
}

func TestSlurmParseArray(t *testing.T) {
	for _, c := range []struct {
		spec string
		want []int
	}{
		{"7", []int{7}},
		{"0-3,7", []int{0, 1, 2, 3, 7}},
		{"[4-6%2]", []int{4, 5, 6}},
		{"0-9:4", []int{0, 4, 8}},
		{"N/A", nil},
		{"", nil},
		{"5-2", nil},
		{"-1", nil},
	} {
		if got := slurmParseArray(c.spec); !slices.Equal(got, c.want) {
			t.Errorf("slurmParseArray(%q) = %v, want %v", c.spec, got, c.want)
		}
	}
}

// newTestSlurm returns a Slurm executor polling every 10 ms, its logs in
// a temporary folder.
func newTestSlurm(t *testing.T, opts SlurmOptions) *Slurm {
	t.Helper()
	if opts.LogDir == "" {
		opts.LogDir = filepath.Join(t.TempDir(), "logs")
	}
	opts.Poll = 10 * time.Millisecond
	s, err := NewSlurm(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// doneSet returns a Stage.Done that reports the tasks listed as done.
func doneSet(done ...int) func(context.Context, int) (bool, error) {
	return func(_ context.Context, i int) (bool, error) { return slices.Contains(done, i), nil }
}

// TestSlurmCommandLines checks the sbatch command lines and batch scripts
// of a three-stage job: tasks already done left out of the array, a stage
// with all its tasks done not submitted, afterok on the last job submitted,
// memory, CPUs, partition and extra flags.
func TestSlurmCommandLines(t *testing.T) {
	fake := newFakeSlurm(t)
	logs := filepath.Join(t.TempDir(), "logs")
	var progress strings.Builder
	s := newTestSlurm(t, SlurmOptions{Partition: "batch", SbatchArgs: []string{"--time=1:00:00", "--account=p"},
		Binary: "/opt/neardup", LogDir: logs, MaxRunning: 8, Progress: &progress})
	stages := []Stage{
		{Name: "sign", Tasks: 4, Args: []string{"/home/u/neardup", "task", "--work", "/w x", "sign"}, Done: doneSet(1, 2)},
		{Name: "bucket", Tasks: 2, Args: []string{"nd", "task", "bucket"}, Done: doneSet(0, 1)},
		{Name: "filter", Tasks: 3, Args: []string{"nd", "task", "it's", "$HOME", "", "a\nb"}, Memory: 1536 << 20, CPUs: 2},
	}
	if err := s.Run(context.Background(), stages); err != nil {
		t.Fatal(err)
	}
	jobs := fake.jobs(t)
	if len(jobs) != 2 {
		t.Fatalf("%d jobs submitted, want 2 (bucket is done): %+v", len(jobs), jobs)
	}
	want := [][]string{
		{"--parsable", "--job-name=neardup-sign", "--array=0,3%8", "--output=" + logs + "/sign-%A_%a.log", "--open-mode=append",
			"--partition=batch", "--time=1:00:00", "--account=p"},
		{"--parsable", "--job-name=neardup-filter", "--array=0-2%8", "--output=" + logs + "/filter-%A_%a.log", "--open-mode=append",
			"--dependency=afterok:100", "--kill-on-invalid-dep=yes", "--mem=1536M", "--cpus-per-task=2",
			"--partition=batch", "--time=1:00:00", "--account=p"},
	}
	for i, j := range jobs {
		if !slices.Equal(j.Args, want[i]) {
			t.Errorf("sbatch %d:\n got %q\nwant %q", i, j.Args, want[i])
		}
	}
	if want := "exec /opt/neardup task --work '/w x' sign\n"; !strings.HasSuffix(jobs[0].Script, want) {
		t.Errorf("sign's script:\n%s\nwant it to end with %q", jobs[0].Script, want)
	}
	if !strings.HasPrefix(jobs[0].Script, "#!/bin/sh\n") {
		t.Errorf("script %q does not start with #!/bin/sh", jobs[0].Script)
	}
	if st, err := os.Stat(logs); err != nil || !st.IsDir() {
		t.Errorf("log folder %s not made: %v", logs, err)
	}
	if c := fake.calls(t, "scancel"); len(c) != 0 {
		t.Errorf("scancel called %q after a run that succeeded", c)
	}
	for _, want := range []string{
		"slurm: stage sign: job 100, 2 of 4 tasks (0,3), logs " + logs + "/sign-100_INDEX.log\n",
		"slurm: stage filter: job 101, 3 of 3 tasks (0-2), logs " + logs + "/filter-101_INDEX.log\n",
		"slurm: stage sign: 2 of 2 tasks completed\n",
		"slurm: stage filter: 3 of 3 tasks completed\n",
	} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress:\n%s\nwant a line %q", progress.String(), want)
		}
	}
}

// TestSlurmScriptQuoting runs a batch script with sh and checks that the
// command receives its arguments unchanged.
func TestSlurmScriptQuoting(t *testing.T) {
	args := []string{"printf", `[%s]\n`, "it's", "$HOME", "", "a\nb", `"q"`, "a b", `back\slash`, "*", "~", "x;y", "-n"}
	s := &Slurm{}
	out, err := exec.Command("sh", "-c", s.batchScript(Stage{Name: "q", Tasks: 1, Args: args})).Output()
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, a := range args[2:] {
		want.WriteString("[" + a + "]\n")
	}
	if string(out) != want.String() {
		t.Errorf("script printed\n%s\nwant\n%s", out, want.String())
	}
}

func TestSlurmAllDone(t *testing.T) {
	fake := newFakeSlurm(t)
	s := newTestSlurm(t, SlurmOptions{})
	err := s.Run(context.Background(), []Stage{
		{Name: "a", Tasks: 2, Args: []string{"x"}, Done: doneSet(0, 1)},
		{Name: "b", Tasks: 0, Args: []string{"x"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := fake.calls(t, "sbatch"); len(c) != 0 {
		t.Errorf("sbatch called %q, want no call", c)
	}
}

// TestSlurmTaskFails checks the error of a failed task: the first stage
// that failed (not the stage after it, which Slurm cancels), its lowest
// index, the job id, the log and its last lines; and that the jobs are
// cancelled.
func TestSlurmTaskFails(t *testing.T) {
	fake := newFakeSlurm(t)
	logs := t.TempDir()
	s := newTestSlurm(t, SlurmOptions{LogDir: logs})
	fake.setStates(t, map[string]string{"b/2": "OUT_OF_MEMORY", "b/1": "FAILED", "c/0": "CANCELLED", "c/1": "CANCELLED"})
	if err := os.WriteFile(filepath.Join(logs, "b-101_1.log"), []byte("line 1\nerror: input shard 7: unexpected EOF\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := s.Run(context.Background(), []Stage{
		{Name: "a", Tasks: 2, Args: []string{"x"}},
		{Name: "b", Tasks: 3, Args: []string{"x"}},
		{Name: "c", Tasks: 2, Args: []string{"x"}},
	})
	var te *SlurmTaskError
	if !errors.As(err, &te) {
		t.Fatalf("Run = %v, want a *SlurmTaskError", err)
	}
	want := SlurmTaskError{Stage: "b", Index: 1, JobID: "101", State: "FAILED", Log: filepath.Join(logs, "b-101_1.log"),
		Tail: "line 1\nerror: input shard 7: unexpected EOF"}
	if *te != want {
		t.Errorf("error = %+v, want %+v", *te, want)
	}
	for _, s := range []string{"stage b", "task 1", "101_1", "FAILED", want.Log, "unexpected EOF"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if c := fake.calls(t, "scancel"); len(c) != 1 || !slices.Equal(c[0], []string{"100", "101", "102"}) {
		t.Errorf("scancel calls %q, want one of jobs 100 101 102", c)
	}
}

// TestSlurmCancel cancels the context while the tasks run: Run returns
// context.Canceled and scancels the jobs.
func TestSlurmCancel(t *testing.T) {
	fake := newFakeSlurm(t)
	s := newTestSlurm(t, SlurmOptions{})
	fake.setStates(t, map[string]string{"a/0": "RUNNING", "b/0": "PENDING"})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(fake.calls(t, "squeue")) < 2 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	err := s.Run(ctx, []Stage{{Name: "a", Tasks: 1, Args: []string{"x"}}, {Name: "b", Tasks: 1, Args: []string{"x"}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if c := fake.calls(t, "scancel"); len(c) != 1 || !slices.Equal(c[0], []string{"100", "101"}) {
		t.Errorf("scancel calls %q, want one of jobs 100 101", c)
	}
}

// TestSlurmSbatchFails: the second stage's sbatch fails; the error names
// the stage and says what sbatch said, and the first job is cancelled.
func TestSlurmSbatchFails(t *testing.T) {
	fake := newFakeSlurm(t)
	s := newTestSlurm(t, SlurmOptions{})
	stages := []Stage{
		{Name: "a", Tasks: 1, Args: []string{"x"}},
		{Name: "b", Tasks: 1, Args: []string{"x"}, Done: func(context.Context, int) (bool, error) {
			os.WriteFile(filepath.Join(string(fake), "sbatch-fail"), []byte("sbatch: error: invalid partition specified: gpu\n"), 0o644)
			return false, nil
		}},
	}
	err := s.Run(context.Background(), stages)
	if err == nil || !strings.Contains(err.Error(), "stage b") || !strings.Contains(err.Error(), "invalid partition specified: gpu") {
		t.Fatalf("Run = %v, want an error naming stage b and sbatch's message", err)
	}
	if c := fake.calls(t, "scancel"); len(c) != 1 || !slices.Equal(c[0], []string{"100"}) {
		t.Errorf("scancel calls %q, want one of job 100", c)
	}
}

func TestSlurmDoneFails(t *testing.T) {
	newFakeSlurm(t)
	s := newTestSlurm(t, SlurmOptions{})
	errMarker := errors.New("marker unreadable")
	err := s.Run(context.Background(), []Stage{{Name: "a", Tasks: 3, Args: []string{"x"},
		Done: func(_ context.Context, i int) (bool, error) {
			if i == 2 {
				return false, errMarker
			}
			return false, nil
		}}})
	if !errors.Is(err, errMarker) || !strings.Contains(err.Error(), "stage a: task 2") {
		t.Fatalf("Run = %v, want the Done error of stage a task 2", err)
	}
}

// TestSlurmGone: a task that leaves squeue before its end was seen is
// looked up with sacct; without accounting, the error says what to do.
func TestSlurmGone(t *testing.T) {
	fake := newFakeSlurm(t)
	s := newTestSlurm(t, SlurmOptions{})
	stages := []Stage{{Name: "a", Tasks: 2, Args: []string{"x"}}}
	fake.setStates(t, map[string]string{"a/1": "GONE:COMPLETED"})
	if err := s.Run(context.Background(), stages); err != nil {
		t.Fatalf("Run with sacct answering COMPLETED = %v", err)
	}
	fake.setStates(t, map[string]string{"a/1": "GONE:CANCELLED by 0"})
	var te *SlurmTaskError
	if err := s.Run(context.Background(), stages); !errors.As(err, &te) || te.State != "CANCELLED" || te.Index != 1 {
		t.Fatalf("Run with sacct answering CANCELLED = %v, want a SlurmTaskError of task 1, CANCELLED", err)
	}
	fake.setStates(t, map[string]string{"a/1": "GONE"})
	if err := s.Run(context.Background(), stages); err == nil || !strings.Contains(err.Error(), "MinJobAge") {
		t.Fatalf("Run without sacct = %v, want an error about MinJobAge", err)
	}
}

// TestSlurmSqueueFails: squeue failing every time ends the run with its
// message after a few tries, and the jobs are cancelled.
func TestSlurmSqueueFails(t *testing.T) {
	fake := newFakeSlurm(t)
	s := newTestSlurm(t, SlurmOptions{})
	os.WriteFile(filepath.Join(string(fake), "squeue-fail"), nil, 0o644)
	err := s.Run(context.Background(), []Stage{{Name: "a", Tasks: 1, Args: []string{"x"}}})
	if err == nil || !strings.Contains(err.Error(), "Unable to contact slurm controller") {
		t.Fatalf("Run = %v, want squeue's error", err)
	}
	if n := len(fake.calls(t, "squeue")); n != maxQueryErrors {
		t.Errorf("squeue called %d times, want %d", n, maxQueryErrors)
	}
	if c := fake.calls(t, "scancel"); len(c) != 1 {
		t.Errorf("scancel calls %q, want one", c)
	}
}

func TestSlurmBadStages(t *testing.T) {
	newFakeSlurm(t)
	s := newTestSlurm(t, SlurmOptions{})
	for _, st := range []Stage{
		{Name: "", Tasks: 1, Args: []string{"x"}},
		{Name: "a/b", Tasks: 1, Args: []string{"x"}},
		{Name: "a", Tasks: -1, Args: []string{"x"}},
		{Name: "a", Tasks: 1},
	} {
		if err := s.Run(context.Background(), []Stage{st}); err == nil {
			t.Errorf("Run(%+v) = nil, want an error", st)
		}
	}
	if _, err := NewSlurm(SlurmOptions{MaxRunning: -1}); err == nil {
		t.Error("NewSlurm with MaxRunning -1: no error")
	}
}

func TestNewSlurmNoSbatch(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := NewSlurm(SlurmOptions{})
	if err == nil || !strings.Contains(err.Error(), "sbatch not found") {
		t.Fatalf("NewSlurm without sbatch = %v, want an error saying so", err)
	}
}
