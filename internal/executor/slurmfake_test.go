package executor

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The fake Slurm: the test binary itself, run under the names sbatch,
// squeue, scancel and sacct (links in a folder put first on PATH) with
// fakeSlurmEnv naming the fake's state folder. It answers from files in
// that folder:
//
//	calls            a line per call: the command, then its arguments, tab-separated
//	jobs/ID.json     a submitted job (fakeJob)
//	states.json      map "STAGE/INDEX" -> the state squeue gives the task
//	                 (default COMPLETED); "GONE" leaves it out of squeue
//	                 and sacct fails, "GONE:STATE" leaves it out of squeue
//	                 and sacct says STATE
//	sbatch-fail      when present, sbatch fails with its content on stderr
//	squeue-fail      when present, squeue fails
//
// init, not TestMain, recognises the fake, so that the package's other
// tests are free to have a TestMain.
const fakeSlurmEnv = "NEARDUP_FAKE_SLURM"

type fakeJob struct {
	ID      string
	Name    string // the stage: --job-name without the "neardup-" prefix
	Args    []string
	Indexes []int
	Script  string
}

func init() {
	dir := os.Getenv(fakeSlurmEnv)
	if dir == "" {
		return
	}
	name := filepath.Base(os.Args[0])
	switch name {
	case "sbatch", "squeue", "scancel", "sacct":
	default:
		return
	}
	code, err := fakeSlurm(dir, name, os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	}
	os.Exit(code)
}

func fakeSlurm(dir, name string, args []string) (int, error) {
	f, err := os.OpenFile(filepath.Join(dir, "calls"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 1, err
	}
	fmt.Fprintln(f, strings.Join(append([]string{name}, args...), "\t"))
	f.Close()
	flag := func(prefix string) string {
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, prefix); ok {
				return v
			}
		}
		return ""
	}
	states := map[string]string{}
	if b, err := os.ReadFile(filepath.Join(dir, "states.json")); err == nil {
		if err := json.Unmarshal(b, &states); err != nil {
			return 1, err
		}
	}
	switch name {
	case "sbatch":
		if b, err := os.ReadFile(filepath.Join(dir, "sbatch-fail")); err == nil {
			os.Stderr.Write(b)
			return 1, nil
		}
		script, err := io.ReadAll(os.Stdin)
		if err != nil {
			return 1, err
		}
		jobs, _ := filepath.Glob(filepath.Join(dir, "jobs", "*.json"))
		j := fakeJob{ID: strconv.Itoa(100 + len(jobs)), Args: args, Script: string(script),
			Name: strings.TrimPrefix(flag("--job-name="), "neardup-")}
		if j.Indexes = slurmParseArray(flag("--array=")); j.Indexes == nil {
			return 1, fmt.Errorf("bad --array %q", flag("--array="))
		}
		b, _ := json.Marshal(j)
		os.MkdirAll(filepath.Join(dir, "jobs"), 0o755)
		if err := os.WriteFile(filepath.Join(dir, "jobs", j.ID+".json"), b, 0o644); err != nil {
			return 1, err
		}
		fmt.Println(j.ID)
	case "squeue":
		if _, err := os.Stat(filepath.Join(dir, "squeue-fail")); err == nil {
			fmt.Fprintln(os.Stderr, "slurm_load_jobs error: Unable to contact slurm controller")
			return 1, nil
		}
		for id := range strings.SplitSeq(flag("--jobs="), ",") {
			b, err := os.ReadFile(filepath.Join(dir, "jobs", id+".json"))
			if err != nil {
				return 1, err
			}
			var j fakeJob
			if err := json.Unmarshal(b, &j); err != nil {
				return 1, err
			}
			for _, i := range j.Indexes {
				st := states[j.Name+"/"+strconv.Itoa(i)]
				if st == "" {
					st = "COMPLETED"
				}
				if strings.HasPrefix(st, "GONE") {
					continue
				}
				fmt.Printf("%s|%d|%s\n", j.ID, i, st)
			}
		}
	case "sacct":
		id := flag("--jobs=")
		job, idx, _ := strings.Cut(id, "_")
		b, err := os.ReadFile(filepath.Join(dir, "jobs", job+".json"))
		if err != nil {
			return 1, err
		}
		var j fakeJob
		if err := json.Unmarshal(b, &j); err != nil {
			return 1, err
		}
		if _, st, ok := strings.Cut(states[j.Name+"/"+idx], ":"); ok {
			fmt.Printf("%s|%s\n", id, st)
			return 0, nil
		}
		fmt.Fprintln(os.Stderr, "sacct: error: Slurm accounting storage is disabled")
		return 1, nil
	}
	return 0, nil
}

// fakeSlurm is the state folder of a fake Slurm on PATH for one test.
type fakeSlurmDir string

// newFakeSlurm puts the fake Slurm first on PATH for the rest of the test
// and returns its state folder.
func newFakeSlurm(t *testing.T) fakeSlurmDir {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	for _, c := range []string{"sbatch", "squeue", "scancel", "sacct"} {
		if err := os.Symlink(exe, filepath.Join(bin, c)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(fakeSlurmEnv, dir)
	// A test binary built with -race sleeps 1 s before it exits unless
	// told not to: every fake call would.
	t.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return fakeSlurmDir(dir)
}

// setStates sets the tasks' states (key "STAGE/INDEX").
func (d fakeSlurmDir) setStates(t *testing.T, states map[string]string) {
	t.Helper()
	b, _ := json.Marshal(states)
	if err := os.WriteFile(filepath.Join(string(d), "states.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// calls returns the calls of command name, each its arguments.
func (d fakeSlurmDir) calls(t *testing.T, name string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(string(d), "calls"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var calls [][]string
	for line := range strings.Lines(string(b)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if f[0] == name {
			calls = append(calls, f[1:])
		}
	}
	return calls
}

// jobs returns the submitted jobs in order.
func (d fakeSlurmDir) jobs(t *testing.T) []fakeJob {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(string(d), "jobs", "*.json"))
	var jobs []fakeJob
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var j fakeJob
		if err := json.Unmarshal(b, &j); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	slices.SortFunc(jobs, func(a, b fakeJob) int { return strings.Compare(a.ID, b.ID) })
	return jobs
}
