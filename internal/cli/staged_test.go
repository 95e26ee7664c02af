package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/neardup/neardup/internal/redistest"
	"github.com/neardup/neardup/internal/sample"
	"github.com/neardup/neardup/internal/staged"
)

// taskChildEnv makes the test binary the neardup command (TestMain): the
// local executor starts it again for each task. taskCrashEnv makes the
// task named by its value ("STAGE:INDEX:FLAGFILE") kill itself with
// SIGKILL before its completion marker, once (while FLAGFILE is absent).
const (
	taskChildEnv = "NEARDUP_TEST_TASK_CHILD"
	taskCrashEnv = "NEARDUP_TEST_TASK_CRASH"
)

func taskChild() int {
	if v := os.Getenv(taskCrashEnv); v != "" {
		parts := strings.SplitN(v, ":", 3)
		staged.BeforeMarker = func(stage string, i int) {
			if len(parts) == 3 && stage == parts[0] && fmt.Sprint(i) == parts[1] {
				if _, err := os.Stat(parts[2]); err != nil {
					os.WriteFile(parts[2], nil, 0o644)
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
				}
			}
		}
	}
	return Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// genCorpus writes docs documents with clusters of near-duplicates (a few
// words changed), exact copies, empty texts and a repeated id.
func genCorpus(t *testing.T, seed uint64, docs int) []string {
	rng := rand.New(rand.NewPCG(seed, 7))
	words := strings.Fields("the of and to in is was for on that with as by at from his her it an were are which this be or has had not but first one their its new after who they have two been more other into all time during")
	base := func() []string {
		w := make([]string, 60+rng.IntN(80))
		for k := range w {
			w[k] = words[rng.IntN(len(words))] + fmt.Sprint(rng.IntN(50))
		}
		return w
	}
	var lines []string
	var bases [][]string
	for i := 0; i < docs; i++ {
		var text string
		switch r := rng.IntN(10); {
		case r < 4 || len(bases) == 0:
			b := base()
			bases = append(bases, b)
			text = strings.Join(b, " ")
		case r < 8: // a near copy of an earlier one
			b := append([]string(nil), bases[rng.IntN(len(bases))]...)
			for range 1 + rng.IntN(3) {
				b[rng.IntN(len(b))] = "changed" + fmt.Sprint(rng.IntN(1000))
			}
			text = strings.Join(b, " ")
		case r < 9: // an exact copy
			text = strings.Join(bases[rng.IntN(len(bases))], " ")
		default:
			if rng.IntN(3) == 0 {
				text = "   "
			} else {
				text = strings.Join(base()[:5], " ")
			}
		}
		id := fmt.Sprintf("d%d", i)
		if i%97 == 5 {
			id = "dup-id"
		}
		b, _ := json.Marshal(map[string]string{"id": id, "text": text})
		lines = append(lines, string(b))
	}
	return lines
}

func writeLines(t *testing.T, path string, lines []string) {
	data := []byte(strings.Join(lines, "\n") + "\n")
	if strings.HasSuffix(path, ".gz") {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(data)
		zw.Close()
		data = b.Bytes()
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writePieces writes lines to path compressed as its name says (.gz,
// .zst) in gzip members or zstd frames of every bytes of input each, cut
// anywhere (bgzip and pzstd files, neardup's own .zst outputs): a file
// the staged plan can start a range in past its start (RestartBytes).
func writePieces(t *testing.T, path string, lines []string, every int) {
	t.Helper()
	data := []byte(strings.Join(lines, "\n") + "\n")
	var out bytes.Buffer
	for len(data) > 0 {
		c := data[:min(every, len(data))]
		data = data[len(c):]
		var w io.WriteCloser
		switch {
		case strings.HasSuffix(path, ".gz"):
			w = gzip.NewWriter(&out)
		case strings.HasSuffix(path, ".zst"):
			w, _ = zstd.NewWriter(&out)
		default:
			t.Fatalf("%s: not .gz or .zst", path)
		}
		w.Write(c)
		w.Close()
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// restartEvery makes the staged plans of the test record restart points
// every bytes of input (staged.RestartBytes).
func restartEvery(t *testing.T, bytes int64) {
	was := staged.RestartBytes
	staged.RestartBytes = bytes
	t.Cleanup(func() { staged.RestartBytes = was })
}

// genFiles writes genCorpus(seed, docs) to two files in dir, the first
// split documents to a.jsonl and the rest to b.jsonl.gz, and returns
// their paths.
func genFiles(t *testing.T, dir string, seed uint64, docs, split int) []string {
	lines := genCorpus(t, seed, docs)
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl.gz")
	writeLines(t, a, lines[:split])
	writeLines(t, b, lines[split:])
	return []string{a, b}
}

// concatParts concatenates dir's part-* files in name order; it fails on
// any other file (a partial or temporary one).
func concatParts(t *testing.T, dir string, want int) []byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for k, e := range ents {
		if e.Name() != staged.PartName(k) {
			t.Fatalf("%s: unexpected file %s", dir, e.Name())
		}
		p, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, p...)
	}
	if len(ents) != want {
		t.Fatalf("%s: %d parts, want %d", dir, len(ents), want)
	}
	return b
}

// statsCounts is --stats without what differs from run to run.
func statsCounts(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"stages", "phases", "peak_rss_bytes", "memory", "serial_seconds", "serial_parts", "workers", "abandoned_temp_files", "abandoned_temp_bytes"} {
		delete(m, k)
	}
	out, _ := json.MarshalIndent(m, "", " ")
	return string(out)
}

func stagedEnv(t *testing.T) {
	t.Setenv(taskChildEnv, "1")
}

// TestStagedMatchesDedup: the staged job's outputs, concatenated, are
// dedup's, byte for byte, for 1, 3 and 8 tasks, on a generated corpus of
// near-duplicates (two files, one gzipped) and on the sample corpus.
func TestStagedMatchesDedup(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	lines := genCorpus(t, 1, 700)
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl.gz")
	writeLines(t, a, lines[:400])
	writeLines(t, b, lines[400:])
	// The same documents in five files, one of them empty: with fewer
	// tasks than files the plan cuts between files by size, uncounted.
	var many []string
	for k, cut := range [][2]int{{0, 90}, {90, 90}, {90, 300}, {300, 310}, {310, 700}} {
		f := filepath.Join(dir, fmt.Sprintf("m%d.jsonl", k))
		if cut[0] == cut[1] {
			os.WriteFile(f, nil, 0o644)
		} else {
			writeLines(t, f, lines[cut[0]:cut[1]])
		}
		many = append(many, f)
	}
	gen := []string{a, b}
	sampleFile := filepath.Join(dir, "sample.jsonl")
	if err := os.WriteFile(sampleFile, sample.JSONL, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		flags []string
		in    []string
	}{
		{"generated", nil, gen},
		{"generated-keep-longest", []string{"--keep", "longest", "--threshold", "0.7"}, gen},
		{"sample", nil, []string{sampleFile}},
		{"many-files", nil, many},
	} {
		checkStagedMatches(t, dir, c.name, c.flags, c.in, 1, 3, 8)
	}
}

// checkStagedMatches runs dedup and the staged job with flags on in, with
// each number of tasks, and fails unless the staged job's clusters, kept
// documents and pairs, concatenated, are dedup's, byte for byte, and its
// stats have dedup's counts.
func checkStagedMatches(t *testing.T, dir, name string, flags, in []string, tasks ...int) {
	t.Helper()
	checkStagedMatchesWith(t, dir, name, flags, nil, in, tasks...)
}

// checkStagedMatchesWith is checkStagedMatches with stagedFlags given to
// the staged job only; the job with n tasks runs in dir/NAME-n.
func checkStagedMatchesWith(t *testing.T, dir, name string, flags, stagedFlags, in []string, tasks ...int) {
	t.Helper()
	if raceEnabled && len(tasks) > 1 {
		// Every task is this test binary, under the race detector: one
		// number of tasks looks for races; the plain run (scripts/check)
		// checks that any number gives dedup's answer.
		tasks = []int{3}
	}
	ref := filepath.Join(dir, name+"-ref")
	os.Mkdir(ref, 0o755)
	args := append([]string{"dedup", "-q", "-j", "2", "--clusters", ref + "/cl.jsonl", "-o", ref + "/out.jsonl", "--pairs", ref + "/pairs.jsonl", "--stats", ref + "/st.json"}, flags...)
	if code, _, stderr := runCLI(append(args, in...)...); code != 0 {
		t.Fatalf("%s: dedup: exit %d: %s", name, code, stderr)
	}
	wantCl, _ := os.ReadFile(ref + "/cl.jsonl")
	wantOut, _ := os.ReadFile(ref + "/out.jsonl")
	wantPairs, _ := os.ReadFile(ref + "/pairs.jsonl")
	wantSt := statsCounts(t, ref+"/st.json")
	if bytes.Count(wantCl, []byte(`"kept":false`)) == 0 {
		t.Fatalf("%s: no duplicates in the test corpus", name)
	}
	for _, n := range tasks {
		run := filepath.Join(dir, fmt.Sprintf("%s-%d", name, n))
		args := append([]string{"dedup", "-q", "--executor", "local", "--tasks", fmt.Sprint(n), "-j", "2", "--work", run + "/work",
			"--clusters", run + "/cl", "-o", run + "/out", "--pairs", run + "/pairs", "--stats", run + "/st.json"}, append(stagedFlags, flags...)...)
		if code, _, stderr := runCLI(append(args, in...)...); code != 0 {
			t.Fatalf("%s, %d tasks: exit %d: %s", name, n, code, stderr)
		}
		if got := concatParts(t, run+"/cl", n); !bytes.Equal(got, wantCl) {
			t.Errorf("%s, %d tasks: the clusters differ from dedup's", name, n)
		}
		if got := concatParts(t, run+"/out", n); !bytes.Equal(got, wantOut) {
			t.Errorf("%s, %d tasks: the kept documents differ from dedup's", name, n)
		}
		if got := concatParts(t, run+"/pairs", n); !bytes.Equal(got, wantPairs) {
			t.Errorf("%s, %d tasks: the pairs differ from dedup's", name, n)
		}
		if got := statsCounts(t, run+"/st.json"); got != wantSt {
			t.Errorf("%s, %d tasks: stats differ:\n%s\nwant\n%s", name, n, got, wantSt)
		}
		checkStagedOwnStats(t, fmt.Sprintf("%s, %d tasks", name, n), run+"/st.json")
	}
}

// checkStagedOwnStats fails unless the fields of the staged --stats at
// path that statsCounts leaves out, one process's, are what
// docs/scale.md says: stages null, memory all zeros, peak RSS and serial
// seconds 0, workers 1 (a task's), no serial parts, phases or abandoned
// temporary files.
func checkStagedOwnStats(t *testing.T, what, path string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(mustRead(t, path), &m); err != nil {
		t.Fatal(err)
	}
	var mem map[string]any
	json.Unmarshal(m["memory"], &mem)
	for k, v := range mem {
		if v != 0.0 && v != false && v != "" && v != nil {
			t.Errorf("%s: --stats memory.%s is %v, want a zero", what, k, v)
		}
	}
	for k, want := range map[string]string{"stages": "null", "peak_rss_bytes": "0", "serial_seconds": "0", "workers": "1"} {
		if got := string(m[k]); got != want {
			t.Errorf("%s: --stats %s is %s, want %s", what, k, got, want)
		}
	}
	for _, k := range []string{"serial_parts", "phases", "abandoned_temp_files", "abandoned_temp_bytes"} {
		if v, ok := m[k]; ok {
			t.Errorf("%s: --stats has %s: %s", what, k, v)
		}
	}
}

// TestStagedResumesAfterKill: a task killed with SIGKILL before its
// marker fails the job; the same command again completes, with the same
// outputs and no partial or extra file.
func TestStagedResumesAfterKill(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeLines(t, in, genCorpus(t, 2, 400))
	if code, _, stderr := runCLI("dedup", "-q", "--clusters", dir+"/ref-cl.jsonl", "-o", dir+"/ref-out.jsonl", in); code != 0 {
		t.Fatal(stderr)
	}
	wantCl, _ := os.ReadFile(dir + "/ref-cl.jsonl")
	wantOut, _ := os.ReadFile(dir + "/ref-out.jsonl")
	for _, stage := range []string{"sign", "join", "write"} {
		run := filepath.Join(dir, stage)
		killThenResume(t, stage, 1, run+"-crashed", "dedup", "-q", "--executor", "local", "--tasks", "3", "-j", "2", "--work", run+"/work", "--clusters", run+"/cl", "-o", run+"/out", in)
		if got := concatParts(t, run+"/cl", 3); !bytes.Equal(got, wantCl) {
			t.Errorf("%s: clusters differ after the resume", stage)
		}
		if got := concatParts(t, run+"/out", 3); !bytes.Equal(got, wantOut) {
			t.Errorf("%s: kept documents differ after the resume", stage)
		}
	}
}

// TestStagedRerunAfterOutputsDeleted: the same command again after the
// job ended runs again the tasks whose outputs were deleted since (it ran
// nothing and said the outputs were there).
func TestStagedRerunAfterOutputsDeleted(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeLines(t, in, genCorpus(t, 2, 200))
	args := []string{"dedup", "-q", "--executor", "local", "--tasks", "3", "--work", dir + "/work", "--clusters", dir + "/cl", "-o", dir + "/out", "--pairs", dir + "/p", "--stats", dir + "/st.json", in}
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	want := map[string][]byte{}
	for _, d := range []string{"cl", "out", "p"} {
		want[d] = concatParts(t, dir+"/"+d, 3)
	}
	wantSt, _ := os.ReadFile(dir + "/st.json")
	if err := os.RemoveAll(dir + "/out"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"/cl/part-00001.jsonl", "/p/part-00002.jsonl", "/st.json"} {
		if err := os.Remove(dir + f); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	for d, w := range want {
		if got := concatParts(t, dir+"/"+d, 3); !bytes.Equal(got, w) {
			t.Errorf("%s after the rerun: %d bytes, want %d", d, len(got), len(w))
		}
	}
	if got, _ := os.ReadFile(dir + "/st.json"); !bytes.Equal(got, wantSt) {
		t.Errorf("--stats after the rerun: %q, want %q", got, wantSt)
	}
}

// killThenResume runs the staged job of args with task index of stage
// killed with SIGKILL before its marker (taskCrashEnv, flag the file that
// says it was), sees it fail naming the task, and runs it again to its
// end.
func killThenResume(t *testing.T, stage string, index int, flag string, args ...string) {
	t.Helper()
	t.Setenv(taskCrashEnv, fmt.Sprintf("%s:%d:%s", stage, index, flag))
	code, _, stderr := runCLI(args...)
	if code == 0 {
		t.Fatalf("%s %d: the job succeeded although a task was killed", stage, index)
	}
	if !strings.Contains(stderr, fmt.Sprintf("stage %s, task %d failed", stage, index)) || !strings.Contains(stderr, "signal: killed") {
		t.Errorf("%s %d: the error does not name the task: %s", stage, index, stderr)
	}
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatalf("%s %d: rerun: exit %d: %s", stage, index, code, stderr)
	}
}

// TestStagedBadInput: an input that disappears after planning fails its
// sign task with a message naming the task, the shard and the file; a
// bad record likewise; a method the stages do not run is refused with
// exit 2.
func TestStagedBadInput(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	lines := genCorpus(t, 3, 100)
	writeLines(t, a, lines[:50])
	writeLines(t, b, lines[50:])
	work := filepath.Join(dir, "work")
	args := []string{"dedup", "-q", "--tasks", "2", "--work", work, "--clusters", dir + "/cl", a, b}
	if code, stdout, stderr := runCLI(append([]string{"--executor", "print"}, args...)...); code != 0 || !strings.Contains(stdout, "task --work") {
		t.Fatalf("print: exit %d: %s %s", code, stdout, stderr)
	}
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	// The task, as a scheduler runs it.
	code, _, stderr := runCLI("task", "--work", work, "sign", "1")
	if code != ExitFailure || !strings.Contains(stderr, "task sign 1 (shard 1: "+b) || !strings.Contains(stderr, "no such file") {
		t.Errorf("missing input: exit %d: %s", code, stderr)
	}
	// The job again: its inputs are checked as dedup checks them.
	if code, _, stderr := runCLI(append([]string{"--executor", "local"}, args...)...); code != ExitUsage || !strings.Contains(stderr, b) {
		t.Errorf("missing input: exit %d: %s", code, stderr)
	}
	// A bad record: the task exits 3, the job 1, naming the file.
	writeLines(t, b, append(lines[50:60:60], `{"id": broken`))
	work2 := filepath.Join(dir, "work2")
	code, _, stderr = runCLI("dedup", "-q", "--executor", "local", "--tasks", "2", "--work", work2, "--clusters", dir+"/cl2", a, b)
	if code != ExitFailure || !strings.Contains(stderr, "exit status 3") || !strings.Contains(stderr, "task sign 1 (shard 1: ") || !strings.Contains(stderr, b+":11") {
		t.Errorf("bad record: exit %d: %s", code, stderr)
	}
	for _, c := range []struct{ flags, want string }{
		{"--method bloom", "depends on every key inserted before it"},
		{"--method jaccard", "not keyed"},
		{"--method simhash --weights tfidf", "--idf"},
		{"--pairs -", "folders"},
		{"--estimate-only --verify", "choose one"}, // an option's error, once "usage: usage:"
	} {
		staged := c.flags != "--estimate-only --verify" // a refusal of the staged job's own
		args := append([]string{"dedup", "-q", "--executor", "local", "--work", filepath.Join(dir, "w3")}, strings.Fields(c.flags)...)
		code, _, stderr = runCLI(append(args, a)...)
		if code != ExitUsage || staged && !strings.Contains(stderr, "--executor") || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "usage: usage:") {
			t.Errorf("%s: exit %d: %s", c.flags, code, stderr)
		}
	}
	// Slurm's commands missing: the flag is named, not the Go package
	// ("usage: executor: slurm: sbatch not found" before).
	t.Setenv("PATH", t.TempDir())
	code, _, stderr = runCLI("dedup", "-q", "--executor", "slurm", "--work", filepath.Join(dir, "w5"), a)
	if want := "neardup: usage: --executor slurm: sbatch not found on PATH"; code != ExitUsage || !strings.Contains(stderr, want) {
		t.Errorf("--executor slurm without sbatch: exit %d: %s; want exit 2 and %q", code, stderr, want)
	}
	// An output folder that names an existing file is said before any
	// stage runs (it failed the write stage, after every other stage,
	// with "mkdir FILE: not a directory", exit 1); --stats, a file, that
	// names a folder too.
	file := filepath.Join(dir, "existing.jsonl")
	writeLines(t, file, lines[:1])
	for _, flag := range []string{"-o", "--clusters", "--pairs", "--stats"} {
		path, want := file, flag+" "+file+": an existing file; with --executor "+flag+" is a folder of part-NNNNN.jsonl files"
		if flag == "--stats" {
			path, want = dir, "--stats "+dir+": a folder; --stats is a file"
		}
		w := filepath.Join(dir, "w4"+flag)
		code, _, stderr := runCLI("dedup", "-q", "--executor", "local", "--tasks", "1", "--work", w, flag, path, a)
		if code != ExitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%s %s: exit %d: %s; want exit 2 and %q", flag, path, code, stderr, want)
		}
		if _, err := os.Stat(w); err == nil {
			t.Errorf("%s %s: the work folder %s was made; want the refusal before the job starts", flag, path, w)
		}
		// A file among the folders above the output: said before the
		// job too (the write or finish stage failed with "mkdir FILE:
		// not a directory", exit 1).
		path = filepath.Join(file, "sub", "out")
		want = flag + " " + path + ": " + file + " is a file, not a folder: give the output another path"
		code, _, stderr = runCLI("dedup", "-q", "--executor", "local", "--tasks", "1", "--work", w, flag, path, a)
		if code != ExitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%s %s: exit %d: %s; want exit 2 and %q", flag, path, code, stderr, want)
		}
		if _, err := os.Stat(w); err == nil {
			t.Errorf("%s %s: the work folder %s was made; want the refusal before the job starts", flag, path, w)
		}
	}
}

// TestStagedTaskErrorWithHint: a task's error that the CLI follows with a
// hint (a record without its text field) fails the job with the error,
// naming the file and line, and the hint once (the job said the hint
// alone, without the error it was about).
func TestStagedTaskErrorWithHint(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	lines := genCorpus(t, 3, 20)
	lines[15] = `{"id": "x15", "body": "no text field here"}`
	writeLines(t, in, lines)
	code, _, stderr := runCLI("dedup", "-q", "--executor", "local", "--tasks", "2", "--work", filepath.Join(dir, "work"), "--clusters", dir+"/cl", in)
	hint := "hint: --text-field NAME"
	if code != ExitFailure || !strings.Contains(stderr, in+":16") || !strings.Contains(stderr, `id "x15": missing text field`) || strings.Count(stderr, hint) != 1 {
		t.Errorf("exit %d: %s; want exit 1, the file and line %s:16, the id and %q once", code, stderr, in, hint)
	}
}

// TestStagedOutputUnwritable: a local output that cannot be written is
// said before the job is planned, naming the flag, with dedup's exit code
// (the write or finish stage failed, after every other, with "mkdir
// /proc/...", no flag named).
func TestStagedOutputUnwritable(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeLines(t, in, genCorpus(t, 3, 20))
	bad := "/proc/neardup-nope/out" // no folder can be made there, even by root
	for _, flag := range []string{"-o", "--clusters", "--pairs", "--stats"} {
		work := filepath.Join(dir, "work"+flag)
		code, _, stderr := runCLI("dedup", "-q", "--executor", "local", "--tasks", "2", "--work", work, flag, bad, in)
		if want := flag + " " + bad + ": cannot write in /proc"; code != ExitFailure || !strings.Contains(stderr, want) {
			t.Errorf("%s %s: exit %d: %s; want exit 1 and %q", flag, bad, code, stderr, want)
		}
		if _, err := os.Stat(work); err == nil {
			t.Errorf("%s %s: the work folder was made; want the refusal before the job starts", flag, bad)
		}
	}
	// A work folder that cannot be made names --work (it said "mkdir
	// /proc/...: no such file or directory", no flag).
	code, _, stderr := runCLI("dedup", "-q", "--executor", "local", "--tasks", "2", "--work", bad, "-o", dir+"/o", in)
	if want := "neardup: --work " + bad + ": mkdir /proc/neardup-nope"; code != ExitFailure || !strings.Contains(stderr, want) {
		t.Errorf("--work %s: exit %d: %s; want exit 1 and %q", bad, code, stderr, want)
	}
	// A writable new folder is still made by the job, and the check
	// leaves nothing in the folder above it.
	if code, _, stderr := runCLI("dedup", "-q", "--executor", "local", "--tasks", "2", "--work", dir+"/w", "-o", dir+"/new/out", in); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if ents, _ := os.ReadDir(dir + "/new"); len(ents) != 1 {
		t.Errorf("%s/new holds %d entries, want the output folder only", dir, len(ents))
	}
}

// TestStagedDamagedInput: a damaged input file (a gzip file cut short, a
// zstd file with a corrupt frame) stops the planning of a job that
// counts its documents, with dedup's words for it and dedup's exit code,
// before any task runs; the sign task failed later, exit 1, before.
func TestStagedDamagedInput(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	lines := genCorpus(t, 11, 300)
	gz, zst := filepath.Join(dir, "cut.jsonl.gz"), filepath.Join(dir, "bad.jsonl.zst")
	writePieces(t, gz, lines, 4000)
	writePieces(t, zst, lines, 4000)
	b, err := os.ReadFile(gz)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gz, b[:len(b)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(zst); err != nil {
		t.Fatal(err)
	}
	for k := len(b) / 2; k < len(b)/2+8; k++ {
		b[k] ^= 0xa5
	}
	if err := os.WriteFile(zst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{gz, zst} {
		code, _, stderr := runCLI("dedup", "-q", "-o", filepath.Join(dir, "out.jsonl"), f)
		said := strings.TrimSuffix(strings.TrimPrefix(stderr, "neardup: "), "\n")
		if code != ExitInvalidData || !strings.HasPrefix(said, f+":") || strings.Contains(said, "\n") {
			t.Fatalf("dedup %s: exit %d: %s; the test meant a damaged file", f, code, stderr)
		}
		work := filepath.Join(dir, "work-"+filepath.Base(f))
		code, _, stderr = runCLI("dedup", "--executor", "local", "--tasks", "2", "--work", work, "-o", filepath.Join(dir, "out-"+filepath.Base(f)), f)
		if code != ExitInvalidData || !strings.Contains(stderr, said+" (while counting the documents to plan the job)") || strings.Contains(stderr, "stage sign") {
			t.Errorf("staged job on %s: exit %d: %s; want exit %d, %q while planning and no task run", f, code, stderr, ExitInvalidData, said)
		}
		if _, err := os.Stat(filepath.Join(work, staged.PlanName)); err == nil {
			t.Errorf("staged job on %s: a plan was written", f)
		}
		// As many files as tasks: the plan cuts between files by their
		// sizes, reading none, and the sign task meets the damage, in
		// dedup's words too (exit 1: a task failed; its own exit 3).
		ok := filepath.Join(dir, "ok.jsonl")
		writeLines(t, ok, lines[:10])
		work = filepath.Join(dir, "work-sign-"+filepath.Base(f))
		code, _, stderr = runCLI("dedup", "--executor", "local", "--tasks", "2", "--work", work, "-o", filepath.Join(dir, "out-sign-"+filepath.Base(f)), f, ok)
		if code != ExitFailure || !strings.Contains(stderr, "stage sign, task 0 failed (exit status 3)") || !strings.Contains(stderr, ": "+said+"\n") {
			t.Errorf("staged job on %s and another file: exit %d: %s; want exit %d, the sign task failing with %q", f, code, stderr, ExitFailure, said)
		}
	}
}

// planStages are the stages of the job planned in work (staged.Plan.Stages).
func planStages(t *testing.T, work string) []string {
	t.Helper()
	job, err := staged.Load(context.Background(), work)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Work.Close()
	return job.Plan.Stages()
}

// TestStagedPrint: the printed commands and manifests.
func TestStagedPrint(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	writeLines(t, a, genCorpus(t, 4, 30))
	work := filepath.Join(dir, "work")
	code, stdout, stderr := runCLI("dedup", "-q", "--executor", "print", "--tasks", "4", "--work", work, "--clusters", dir+"/cl", a)
	if code != 0 {
		t.Fatal(stderr)
	}
	for _, s := range staged.StageNames {
		// Without --report the job has no examples task.
		if want := s != staged.StageExamples; strings.Contains(stdout, "task --work "+work+" "+s+" ") != want {
			t.Errorf("a %s command in the job's: %v, want %v, in\n%s", s, !want, want, stdout)
		}
	}
	m, err := os.ReadFile(filepath.Join(work, "k8s", "01-sign.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"completionMode: Indexed", "completions: 4", "JOB_COMPLETION_INDEX", `"task", "--work"`} {
		if !bytes.Contains(m, []byte(want)) {
			t.Errorf("manifest lacks %q:\n%s", want, m)
		}
	}
	// A task takes its index from JOB_COMPLETION_INDEX.
	t.Setenv("JOB_COMPLETION_INDEX", "2")
	if code, _, stderr := runCLI("task", "--work", work, "sign"); code != 0 {
		t.Fatalf("task: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(work, staged.Marker("sign", 2))); err != nil {
		t.Errorf("no marker: %v", err)
	}
	// An index beyond the stage's tasks is a bad argument (exit 2).
	if code, _, _ := runCLI("task", "--work", work, "sign", "9"); code != ExitUsage {
		t.Errorf("task index out of range: exit %d, want %d", code, ExitUsage)
	}
}

func TestSplit(t *testing.T) {
	got := staged.Split([]string{"a", "b", "c"}, []int64{5, 0, 6}, 4)
	// b, of no documents, has an empty range at its place (its sign task
	// reports its bad records, if any).
	want := `[[{"file":"a","lo":0,"hi":2}],[{"file":"a","lo":2,"hi":5},{"file":"b","lo":0,"hi":0}],[{"file":"c","lo":0,"hi":3}],[{"file":"c","lo":3,"hi":6}]]`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Errorf("Split = %s, want %s", b, want)
	}
	got = staged.Split([]string{"a", "b", "c"}, []int64{0, 2, 0}, 3)
	want = `[null,[{"file":"a","lo":0,"hi":0},{"file":"b","lo":0,"hi":1}],[{"file":"b","lo":1,"hi":2},{"file":"c","lo":0,"hi":0}]]`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Errorf("Split with empty files = %s, want %s", b, want)
	}
	got = staged.Split([]string{"a", "b"}, []int64{0, 0}, 2)
	want = `[null,[{"file":"a","lo":0,"hi":0},{"file":"b","lo":0,"hi":0}]]`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Errorf("Split of no documents = %s, want %s", b, want)
	}
	got = staged.Split([]string{"a"}, []int64{2}, 3)
	if b, _ := json.Marshal(got); string(b) != `[null,[{"file":"a","lo":0,"hi":1}],[{"file":"a","lo":1,"hi":2}]]` {
		t.Errorf("Split of 2 in 3 = %s", b)
	}
}

func TestSplitFiles(t *testing.T) {
	files := []string{"a", "b", "c", "d", "e", "f"}
	for _, c := range []struct {
		sizes []int64
		tasks int
		want  string // the files of each shard
	}{
		{[]int64{10, 1, 1, 10, 1, 1}, 3, "a|bc|def"},
		{[]int64{1, 1, 1, 1, 1, 1}, 3, "ab|cd|ef"},
		{[]int64{1, 1, 1, 1, 1, 100}, 2, "abcde|f"},
		{[]int64{100, 1, 1, 1, 1, 1}, 4, "a|b|c|def"},
		{[]int64{0, 0, 0, 0, 0, 0}, 6, "a|b|c|d|e|f"},
		{[]int64{5, 5, 5, 5, 5, 5}, 1, "abcdef"},
	} {
		var got []string
		for _, sh := range staged.SplitFiles(files, c.sizes, c.tasks) {
			var names string
			for _, r := range sh {
				if r.Lo != 0 || r.Hi != -1 {
					t.Errorf("%v in %d: range %+v, want a whole file", c.sizes, c.tasks, r)
				}
				names += r.File
			}
			got = append(got, names)
		}
		if g := strings.Join(got, "|"); g != c.want {
			t.Errorf("SplitFiles(%v, %d) = %s, want %s", c.sizes, c.tasks, g, c.want)
		}
	}
}

// TestStagedComponentsBudget: a components task whose union-find would
// pass --task-memory stops with a message naming the task and the budget.
func TestStagedComponentsBudget(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeLines(t, in, genCorpus(t, 5, 200))
	code, _, stderr := runCLI("dedup", "-q", "--executor", "local", "--tasks", "2", "--task-memory", "32MB", "--work", dir+"/work", "--clusters", dir+"/cl", in)
	if code != ExitFailure || !strings.Contains(stderr, "stage components, task 0 failed") || !strings.Contains(stderr, "in a candidate edge") || !strings.Contains(stderr, "--task-memory 32000000") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// TestStagedBucketDamage: a sign task's keys out of order or cut (in a
// pack whose index and checksums say they are what was written) are a
// damaged work file, named, for the bucket task that merges them.
func TestStagedBucketDamage(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeLines(t, in, genCorpus(t, 6, 120))
	work := filepath.Join(dir, "work")
	if code, _, stderr := runCLI("dedup", "-q", "--executor", "print", "--tasks", "2", "--work", work, "--clusters", dir+"/cl", in); code != 0 {
		t.Fatal(stderr)
	}
	for i := range 2 {
		if code, _, stderr := runCLI("task", "--work", work, "sign", fmt.Sprint(i)); code != 0 {
			t.Fatal(stderr)
		}
	}
	// Partition 0's keys: section 0 of sign task 1's pack (of 2N+1
	// sections: each partition's keys and ids, then the shard's counts).
	keys := filepath.Join(work, "sign", "00001", "buckets")
	pack, err := os.ReadFile(keys)
	if err != nil {
		t.Fatal(err)
	}
	b := packSection(t, pack, 5, 0)
	if len(b) < 24 {
		t.Fatalf("%d bytes of keys", len(b))
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"out of order", append(append(slices.Clone(b[len(b)-12:]), b[12:len(b)-12]...), b[:12]...), "keys out of order"},
		{"cut", b[:len(b)-5], "not a whole number of 12-byte keys"},
	} {
		if err := os.WriteFile(keys, repack(t, pack, 5, 0, c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI("task", "--work", work, "bucket", "0")
		if code != ExitFailure || !strings.Contains(stderr, "task bucket 0") || !strings.Contains(stderr, keys) || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d: %s", c.name, code, stderr)
		}
	}
}

// TestStagedSkipInvalid: under --skip-invalid the staged job skips,
// counts and names the bad records as dedup does, wherever the plan cuts
// the input: a bad record first and last in a file and on each side of
// every cut of 3 and 8 tasks (invalid JSON, no text field, a text that is
// not a string), lines over --max-doc-bytes (not counted as records by
// the plan: one before the first record of each range, one after a
// file's last record), a file of nothing but such lines, and a gzip file
// cut short (the documents before the damage are used). Its outputs and
// --stats are dedup's; without --skip-invalid the job fails on the first
// bad record, and on the damaged file, as dedup does. The ranges inside
// files start at restart points (staged.RestartBytes): right at each
// range's first record (so the bad records before it are read from the
// point), then a few records before it, in a plain file, gzip files of
// many members (one damaged) and a zstd file of many frames.
func TestStagedSkipInvalid(t *testing.T) {
	stagedEnv(t)
	restartEvery(t, 1)
	dir := t.TempDir()
	good := genCorpus(t, 5, 600)
	const n = 560 // records, bad ones included
	bad := map[int]bool{0: true, 299: true, 300: true, n - 1: true}
	cuts := map[int]bool{300: true} // where a range begins
	for _, tasks := range []int{3, 8} {
		for s := 1; s < tasks; s++ {
			c := n * s / tasks
			bad[c-1], bad[c], cuts[c] = true, true, true
		}
	}
	long := `{"id":"long","text":"` + strings.Repeat("x", 3000) + `"}`
	kinds := []string{`{"id": broken`, `{"id":"no-text","body":"x"}`, `{"id":"number","text":5}`}
	var recs []string
	split := 0 // record 300's line: b.jsonl.gz begins there
	for k := 0; k < n; k++ {
		if k == 300 {
			split = len(recs)
		}
		if cuts[k] {
			recs = append(recs, long)
		}
		if bad[k] {
			recs = append(recs, kinds[k%len(kinds)])
			continue
		}
		recs = append(recs, good[0])
		good = good[1:]
	}
	// a.jsonl: records 0-299 and a long line after them; b.jsonl.gz the
	// rest; c.jsonl nothing but a long line; d.jsonl.gz cut short.
	a, b, c, d := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl.gz"), filepath.Join(dir, "c.jsonl"), filepath.Join(dir, "d.jsonl.gz")
	e := filepath.Join(dir, "e.jsonl.zst")
	writeLines(t, a, append(recs[:split:split], long))
	writePieces(t, b, recs[split:], 1500)
	writeLines(t, c, []string{long})
	writePieces(t, d, append(good[:40], genCorpus(t, 8, 200)...), 1500)
	writePieces(t, e, genCorpus(t, 7, 300), 900)
	gz, err := os.ReadFile(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d, gz[:len(gz)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--skip-invalid", "--allow-truncated", "--max-doc-bytes", "2000"}
	// Two files: the plans of 3 and 8 tasks count the records and cut
	// where the test put bad ones; four: 1 and 3 tasks cut between files
	// (uncounted), 8 within them.
	checkStagedMatches(t, dir, "skip-invalid", flags, []string{a, b}, 3, 8)
	for _, tasks := range []int{3, 8} {
		if raceEnabled && tasks != 3 {
			continue // checkStagedMatches ran 3 tasks only
		}
		var plan staged.Plan
		p, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("skip-invalid-%d", tasks), "work", staged.PlanName))
		if err := json.Unmarshal(p, &plan); err != nil {
			t.Fatal(err)
		}
		for _, sh := range plan.Shards[1:] {
			if at := sh[0].Lo + map[bool]int64{true: 300}[sh[0].File == b]; !cuts[int(at)] {
				t.Errorf("%d tasks: a range begins at record %d, not at a cut the test made", tasks, at)
			}
			if f := sh[0].From; sh[0].Lo > 0 && (f == nil || f.Doc != sh[0].Lo || sh[0].File == b && f.At == 0) {
				t.Errorf("%d tasks: range %+v does not start at the restart point of its first record", tasks, sh[0])
			}
		}
	}
	// Restart points a few records apart: a range starts at the last
	// one before it and skips the records between.
	restartEvery(t, 2000)
	checkStagedMatches(t, dir, "skip-invalid-4", flags, []string{a, c, b, e, d}, 1, 3, 8)
	if !raceEnabled {
		var plan staged.Plan
		p, _ := os.ReadFile(filepath.Join(dir, "skip-invalid-4-8", "work", staged.PlanName))
		if err := json.Unmarshal(p, &plan); err != nil {
			t.Fatal(err)
		}
		inside, before := map[string]bool{}, 0
		for _, sh := range plan.Shards {
			for _, rg := range sh {
				if f := rg.From; f != nil && f.At > 0 && (f.Skip > 0 || rg.File == a) {
					inside[filepath.Base(rg.File)] = true
					if f.Doc < rg.Lo {
						before++
					}
				}
			}
		}
		if len(inside) < 4 || before < 3 {
			t.Errorf("8 tasks: ranges start at restart points (inside a member or frame) in %v only, %d of them before their first document; want a, b, d and e, 3", inside, before)
		}
	}
	// The counts that make the comparison mean something.
	st, err := os.ReadFile(filepath.Join(dir, "skip-invalid-4-ref", "st.json"))
	if err != nil {
		t.Fatal(err)
	}
	var stats struct {
		Skipped int
		Damaged []any `json:"damaged_files"`
	}
	json.Unmarshal(st, &stats)
	if wantSkipped := len(bad) + len(cuts) + 2; stats.Skipped != wantSkipped || len(stats.Damaged) != 1 {
		t.Errorf("dedup skipped %d records and %d damaged files, the test meant %d and 1", stats.Skipped, len(stats.Damaged), wantSkipped)
	}
	// The summary names the first skipped records; the exit code says
	// the damage without --allow-truncated.
	run := filepath.Join(dir, "summary")
	code, _, stderr := runCLI("dedup", "--executor", "local", "--tasks", "3", "-j", "2", "--work", run, "--skip-invalid", "--max-doc-bytes", "2000", a, c, b, d)
	if code != ExitInputLost || !strings.Contains(stderr, fmt.Sprintf("skipped %d invalid records", stats.Skipped)) ||
		!strings.Contains(stderr, "  skipped: "+a+":1 ") || !strings.Contains(stderr, "damaged input "+d) {
		t.Errorf("summary: exit %d: %s", code, stderr)
	}
	// Without --skip-invalid: the first bad record stops the job; a
	// damaged file stops its planning, which counts its documents (exit
	// 3, as dedup; see TestStagedDamagedInput).
	for _, in := range [][]string{{a}, {c}, {d}} {
		run := filepath.Join(dir, "strict-"+filepath.Base(in[0]))
		code, _, stderr := runCLI("dedup", "-q", "--executor", "local", "--tasks", "3", "--work", run, "--clusters", run+"-cl", "--max-doc-bytes", "2000", in[0])
		if in[0] == d {
			if code != ExitInvalidData || !strings.Contains(stderr, d+":") || !strings.Contains(stderr, "while counting the documents to plan the job") {
				t.Errorf("%s without --skip-invalid: exit %d: %s", d, code, stderr)
			}
			continue
		}
		wantErr := map[string]string{a: a + ":1 (offset 0)", c: c + " documents 0-0"}[in[0]]
		if code != ExitFailure || !strings.Contains(stderr, "exit status 3") || !strings.Contains(stderr, wantErr) ||
			in[0] == c && !strings.Contains(stderr, "--max-doc-bytes raises the limit") {
			t.Errorf("%s without --skip-invalid: exit %d: %s", in[0], code, stderr)
		}
	}
}

// TestStagedAgainst: --against FILES under --executor: the old corpus's
// documents are compared against, never removed, written or listed, as
// dedup does, for each join and cluster mode (the plan cuts old and new
// files alike: an old file's last range and a new file's first can share
// a shard); a saved index and a file both old and new are refused.
func TestStagedAgainst(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	lines := genCorpus(t, 6, 600)
	old1, old2, a, b := filepath.Join(dir, "old1.jsonl"), filepath.Join(dir, "old2.jsonl.gz"), filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl.gz")
	writeLines(t, old1, lines[:150])
	writeLines(t, old2, lines[150:250])
	writeLines(t, a, lines[250:400])
	writeLines(t, b, lines[400:])
	in := []string{a, b}
	against := []string{"--against", old1, "--against", old2}
	checkStagedMatches(t, dir, "against", against, in, 1, 3, 8)
	for _, c := range []struct {
		name  string
		flags []string
	}{
		{"keep-longest", []string{"--keep", "longest", "--threshold", "0.7"}},
		{"leader-longest", []string{"--cluster", "leader", "--keep", "longest"}},
		{"all-pairs", []string{"--pairs-mode", "all"}},
		{"simhash", []string{"--method", "simhash"}},
		{"exact", []string{"--method", "exact"}},
		{"cascade", []string{"--method", "cascade", "--keep", "longest"}},
	} {
		checkStagedMatches(t, dir, "against-"+c.name, append(c.flags, against...), in, 3)
	}
	st, err := os.ReadFile(filepath.Join(dir, "against-ref", "st.json"))
	if err != nil {
		t.Fatal(err)
	}
	var stats struct {
		Against int `json:"against_documents"`
	}
	json.Unmarshal(st, &stats)
	if stats.Against != 250 {
		t.Errorf("dedup compared against %d old documents, the test meant 250", stats.Against)
	}
	code, _, stderr := runCLI("dedup", "-q", "--executor", "local", "--work", filepath.Join(dir, "both"), "--against", a, a, b)
	if code != ExitUsage || !strings.Contains(stderr, a+": both an input and --against") {
		t.Errorf("a file both old and new: exit %d: %s", code, stderr)
	}
}

// TestStagedAgainstIndex: with a saved index (--against DIR, and a Redis
// URL where redis-server is installed) the staged job's -o, --clusters,
// --pairs and --stats are dedup's at 1, 3 and 8 tasks (and at 3 for
// exact, simhash, ksentence, --cluster leader, --pairs-mode all, and an
// index with --against FILES; the cascade before minhash and simhash at
// 1 and 3, with --keep longest and --pairs-mode all at 3): the documents
// found in it go with their clusters, named after their indexed
// duplicates, their pairs lines at dedup's place, counted as dedup counts
// them; its --report shows dedup's summary and example clusters at 1 and
// 3 tasks. The same command after the index changed is refused, also
// after a remove and an add that leave a Redis index's count as it was.
func TestStagedAgainstIndex(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	lines := genCorpus(t, 6, 600)
	old, a, b := filepath.Join(dir, "old.jsonl"), filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl.gz")
	writeLines(t, old, lines[:250])
	writeLines(t, a, lines[250:400])
	writeLines(t, b, lines[400:])
	ix := filepath.Join(dir, "ix")
	if code, _, stderr := runCLI("index", "create", "--index", ix); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := runCLI("index", "add", "-q", "--skip-invalid", "--index", ix, old); code != 0 {
		t.Fatal(stderr)
	}
	in := []string{a, b}
	check := func(name string, flags []string, tasks ...int) {
		t.Helper()
		checkStagedMatches(t, dir, name, flags, in, tasks...)
		if !strings.Contains(statsCounts(t, filepath.Join(dir, name+"-ref", "st.json")), `"index_matches"`) {
			t.Errorf("%s: dedup found no document in the index: the comparison shows nothing", name)
		}
	}
	check("index", []string{"--against", ix}, 1, 3, 8)
	check("index-exact", []string{"--method", "exact", "--against", ix}, 3)
	check("index-files", []string{"--keep", "longest", "--against", ix, "--against", old}, 3)
	check("index-simhash", []string{"--method", "simhash", "--against", ix}, 3)
	check("index-leader", []string{"--cluster", "leader", "--against", ix}, 3)
	check("index-all", []string{"--pairs-mode", "all", "--against", ix}, 3)
	check("index-ksentence", []string{"--method", "ksentence", "--against", ix}, 3)
	// The cascade: dedup writes the copy pairs and the found documents'
	// lines as it reads, by document, among minhash's pairs, before
	// simhash's and --keep longest's.
	check("index-cascade", []string{"--method", "cascade", "--against", ix}, 1, 3)
	check("index-cascade-simhash", []string{"--method", "cascade", "--then", "simhash", "--against", ix}, 1, 3, 8)
	check("index-cascade-longest", []string{"--method", "cascade", "--keep", "longest", "--against", ix}, 3)
	check("index-cascade-all", []string{"--method", "cascade", "--pairs-mode", "all", "--against", ix}, 3)
	// The summary names the index and the parameters it matches by (its
	// own: minhash at 0.8 for a simhash run), as dedup's does.
	sum := filepath.Join(dir, "summary")
	scode, _, sstderr := runCLI(append([]string{"dedup", "--executor", "local", "--tasks", "2", "-j", "2", "--work", sum + "/work",
		"-o", sum + "/out", "--method", "simhash", "--against", ix}, in...)...)
	if want := "\n  the saved index " + ix + " matches by its own parameters: minhash, word 5-shingles, 128 oph slots, 13x7 bands, threshold 0.8;"; scode != 0 || !strings.Contains(sstderr, want) {
		t.Errorf("staged summary: exit %d, want %q in:\n%s", scode, want, sstderr)
	}
	if redistest.Available() {
		url := redistest.Server(t).URL("staged")
		if code, _, stderr := runCLI("index", "copy", "-q", "--from", ix, "--to", url); code != 0 {
			t.Fatal(stderr)
		}
		check("redis", []string{"--against", url}, 1, 3, 8)
		// A remove, then an add: as many documents as before, but not
		// the index the job was planned with (its seq moved on).
		if code, _, stderr := runCLI("index", "remove", "-q", "--index", url, "d60"); code != 0 {
			t.Fatal(stderr)
		}
		extra := filepath.Join(dir, "extra.jsonl")
		writeLines(t, extra, []string{`{"id":"extra","text":"a document added after the job was planned"}`})
		if code, _, stderr := runCLI("index", "add", "-q", "--index", url, extra); code != 0 {
			t.Fatal(stderr)
		}
		run := filepath.Join(dir, "redis-3")
		code, _, stderr := runCLI(append([]string{"dedup", "-q", "--executor", "local", "--tasks", "3", "-j", "2", "--work", run + "/work",
			"--clusters", run + "/cl", "-o", run + "/out", "--pairs", run + "/pairs", "--stats", run + "/st.json", "--against", url}, in...)...)
		if code != ExitUsage || !strings.Contains(stderr, "holds the plan of another job") || !strings.Contains(stderr, "indexes") {
			t.Errorf("the Redis index's documents replaced: exit %d: %s", code, stderr)
		}
	}
	// --report: the example clusters named after an indexed document
	// show their kept document in input order, none as kept (with --keep
	// longest, where it is not always the first).
	ref := filepath.Join(dir, "report-ref.html")
	if code, _, stderr := runCLI(append([]string{"dedup", "-q", "-j", "2", "--report", ref, "--keep", "longest", "--against", ix}, in...)...); code != 0 {
		t.Fatalf("report: dedup: exit %d: %s", code, stderr)
	}
	want := readPage(t, ref)
	if !strings.Contains(reportSection(want, "clusters"), `class="cluster random"`) {
		t.Fatal("report: dedup's report has no random example: the test shows nothing")
	}
	for _, n := range []int{1, 3} {
		got := filepath.Join(dir, fmt.Sprintf("report-%d.html", n))
		args := []string{"dedup", "-q", "--executor", "local", "--tasks", fmt.Sprint(n), "-j", "2", "--work", filepath.Join(dir, fmt.Sprintf("report-%d", n)), "--report", got, "--keep", "longest", "--against", ix}
		if code, _, stderr := runCLI(append(args, in...)...); code != 0 {
			t.Fatalf("report, %d tasks: exit %d: %s", n, code, stderr)
		}
		page := readPage(t, got)
		for _, id := range []string{"summary", "clusters"} {
			if g, w := reportSection(page, id), reportSection(want, id); g != w {
				t.Errorf("report, %d tasks: the report's section %q differs from dedup's:\n%s\nwant\n%s", n, id, g, w)
			}
		}
	}
	// The index changes: the job planned with it is not resumed.
	run := filepath.Join(dir, "index-3")
	if code, _, stderr := runCLI("index", "add", "-q", "--skip-invalid", "--index", ix, a); code != 0 {
		t.Fatal(stderr)
	}
	code, _, stderr := runCLI(append([]string{"dedup", "-q", "--executor", "local", "--tasks", "3", "-j", "2", "--work", run + "/work",
		"--clusters", run + "/cl", "-o", run + "/out", "--stats", run + "/st.json", "--against", ix}, in...)...)
	if code != ExitUsage || !strings.Contains(stderr, "holds the plan of another job") || !strings.Contains(stderr, "indexes") {
		t.Errorf("the index changed: exit %d: %s", code, stderr)
	}
}

// TestStagedWarnReadFromStart: a file that the plan cuts inside, whose
// ranges' tasks must decompress it from its start (one gzip member), is
// warned about, naming it; a plain file, whose ranges start at their
// restart points, and -q are not. The threshold is lowered to a byte.
func TestStagedWarnReadFromStart(t *testing.T) {
	stagedEnv(t)
	was := readFromStartWarnBytes
	readFromStartWarnBytes = 1
	t.Cleanup(func() { readFromStartWarnBytes = was })
	dir := t.TempDir()
	lines := genCorpus(t, 4, 300)
	gz, plain := filepath.Join(dir, "one.jsonl.gz"), filepath.Join(dir, "p.jsonl")
	writeLines(t, gz, lines)
	writeLines(t, plain, lines)
	n := 0
	run := func(file string, flags ...string) string {
		t.Helper()
		n++
		args := append([]string{"dedup", "--executor", "print", "--tasks", "3", "--work", filepath.Join(dir, fmt.Sprint("w", n)), "--clusters", filepath.Join(dir, fmt.Sprint("cl", n))}, flags...)
		code, _, stderr := runCLI(append(args, file)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", file, code, stderr)
		}
		return stderr
	}
	want := "warning: " + gz + " is cut into 3 shards, and the tasks of 2 of them read "
	// No restart point in the file (the default spacing is larger than
	// it), then points inside its one member, far from its start.
	for _, every := range []int64{staged.RestartBytes, 512} {
		restartEvery(t, every)
		if s := run(gz); !strings.Contains(s, want) {
			t.Errorf("restart points every %d bytes: no warning for one gzip member: %s", every, s)
		}
		if s := run(gz, "-q"); strings.Contains(s, "warning") {
			t.Errorf("-q: %s", s)
		}
	}
	restartEvery(t, 512)
	if s := run(plain); strings.Contains(s, "warning") {
		t.Errorf("a plain file, read from its restart points: %s", s)
	}
}

// TestStagedUnknownFormat: an input no reader exists for is refused
// before any task runs (exit 2, naming it), as dedup refuses it, also
// when the plan would not count it (as many files as tasks): its sign
// task failed, exit 1. No work folder is made for it.
func TestStagedUnknownFormat(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	lines := genCorpus(t, 5, 40)
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.zst")
	writeLines(t, a, lines[:20])
	writeLines(t, b, lines[20:])
	for _, tasks := range []string{"1", "2"} {
		work := filepath.Join(dir, "w"+tasks)
		code, _, stderr := runCLI("dedup", "-q", "--executor", "local", "--tasks", tasks, "--work", work, "--clusters", filepath.Join(dir, "cl"+tasks), a, b)
		if code != ExitUsage || !strings.Contains(stderr, b+": unknown input format") || strings.Contains(stderr, "task") {
			t.Errorf("--tasks %s: exit %d: %s", tasks, code, stderr)
		}
		if _, err := os.Stat(work); err == nil {
			t.Errorf("--tasks %s: the work folder was made for a refused input", tasks)
		}
	}
	// With --format jsonl it is read as JSON Lines, by the driver that
	// counts it and by the tasks, which take the format from the plan:
	// the outputs are dedup's, cut between files (1, 2 tasks) and inside
	// them (3).
	c := filepath.Join(dir, "c.zst") // zstd frames: a range may start inside
	writePieces(t, c, lines[20:], 500)
	checkStagedMatches(t, dir, "format", []string{"--format", "jsonl"}, []string{a, c}, 1, 2, 3)
}
