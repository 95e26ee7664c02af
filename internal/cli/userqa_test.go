package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/human"
)

// TestDedupOutputsDistinct: two output flags naming one file, or both
// standard output, are refused (exit 2) before anything is read, naming
// both flags; /dev/null takes any number.
func TestDedupOutputsDistinct(t *testing.T) {
	in := writeDocs(t, 20)
	dir := t.TempDir()
	same := filepath.Join(dir, "out.jsonl")
	for _, c := range []struct {
		args  []string
		flags []string
	}{
		{[]string{"-o", same, "--clusters", filepath.Join(dir, ".", "out.jsonl")}, []string{"-o", "--clusters", "the same file"}},
		{[]string{"-o", "-", "--pairs", "-"}, []string{"-o", "--pairs", "standard output"}},
		{[]string{"--stats", same, "--report", same}, []string{"--stats", "--report"}},
	} {
		code, _, errs := runCLI(append([]string{"dedup", "-q", in}, c.args...)...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", c.args, code, ExitUsage, errs)
		}
		for _, f := range c.flags {
			if !strings.Contains(errs, f) {
				t.Errorf("%v: message %q does not name %s", c.args, errs, f)
			}
		}
	}
	if _, err := os.Stat(same); err == nil {
		t.Errorf("a refused run wrote %s", same)
	}
	if code, _, errs := runCLI("dedup", "-q", in, "-o", os.DevNull, "--clusters", os.DevNull); code != 0 {
		t.Errorf("two outputs to /dev/null: exit %d (%s)", code, errs)
	}
}

// TestDedupKeyFieldMissing: a record without the --key-field is bad input
// (exit 3) named by file, line and id with the flag to fix it, and
// --skip-invalid skips it.
func TestDedupKeyFieldMissing(t *testing.T) {
	in := filepath.Join(t.TempDir(), "urls.jsonl")
	docs := `{"id":"a","url":"u1","text":"one two three four five six"}
{"id":"b","text":"seven eight nine ten eleven twelve"}
{"id":"c","url":"u1","text":"thirteen fourteen fifteen"}
`
	if err := os.WriteFile(in, []byte(docs), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI("dedup", "-q", "--method", "bloom", "--key-field", "url", in)
	if code != ExitInvalidData {
		t.Errorf("exit %d, want %d (%s)", code, ExitInvalidData, errs)
	}
	for _, want := range []string{in + ":2", `id "b"`, `missing field "url"`, `"id", "text"`, "--key-field", "--skip-invalid"} {
		if !strings.Contains(errs, want) {
			t.Errorf("message %q lacks %q", errs, want)
		}
	}
	stats := filepath.Join(t.TempDir(), "stats.json")
	code, _, errs = runCLI("dedup", "-q", "--method", "bloom", "--key-field", "url", "--skip-invalid", "--stats", stats, in)
	if code != 0 {
		t.Fatalf("--skip-invalid: exit %d (%s)", code, errs)
	}
	b, err := os.ReadFile(stats)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"skipped": 1`) || !strings.Contains(string(b), `"removed": 1`) {
		t.Errorf("--skip-invalid: stats %s, want 1 skipped and 1 removed", b)
	}
}

// TestStagedOtherInputs: a --work folder planned for one input, given
// another while the first still exists, is another job's, not a job
// whose input is gone; a deleted input is gone.
func TestStagedOtherInputs(t *testing.T) {
	a, b := writeDocs(t, 30), writeDocs(t, 40)
	work, out := filepath.Join(t.TempDir(), "work"), t.TempDir()
	run := func(in string) (int, string) {
		code, _, errs := runCLI("dedup", "-q", "--executor", "print", "--tasks", "2", "--work", work, in, "-o", filepath.Join(out, "kept"))
		return code, errs
	}
	if code, errs := run(a); code != 0 {
		t.Fatalf("plan: exit %d (%s)", code, errs)
	}
	if code, errs := run(b); code != ExitUsage || !strings.Contains(errs, "holds the plan of another job (other inputs: input 1 is "+a+" in the plan, "+b+" in this command)") {
		t.Errorf("another input: exit %d, %q; want %d and the plan of another job", code, errs, ExitUsage)
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if code, errs := run(b); code != ExitUsage || !strings.Contains(errs, a+": an input of the job planned in") {
		t.Errorf("deleted input: exit %d, %q; want %d and %s gone", code, errs, ExitUsage, a)
	}
}

// TestLabelFileMissing: a --truth or --clusters file that does not exist
// is a usage error (exit 2, as a missing INPUT is for dedup) named by its
// flag, in eval and tune, and so is compare's @FILE; one that exists but
// cannot be read is exit 1 (docs/eval.md).
func TestLabelFileMissing(t *testing.T) {
	in := writeDocs(t, 10)
	dir := t.TempDir()
	clusters := filepath.Join(dir, "clusters.jsonl")
	if code, _, errs := runCLI("dedup", "-q", in, "--clusters", clusters); code != 0 {
		t.Fatalf("dedup: exit %d (%s)", code, errs)
	}
	nope := filepath.Join(dir, "nope.jsonl")
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"--truth", []string{"eval", "--truth", nope, "--clusters", clusters}},
		{"--clusters", []string{"eval", "--truth", clusters, "--clusters", nope}},
		{"--truth", []string{"tune", "--truth", nope, in}},
		{"@" + nope, []string{"compare", "@" + nope, "some text"}},
	} {
		code, _, errs := runCLI(c.args...)
		if code != ExitUsage || !strings.Contains(errs, "usage: "+c.flag) || !strings.Contains(errs, nope+": no such file or directory") {
			t.Errorf("%v: exit %d, %q; want %d naming %s", c.args, code, errs, ExitUsage, c.flag)
		}
	}
	// A directory exists but cannot be read as a file: not a usage error.
	if code, _, errs := runCLI("eval", "--truth", dir, "--clusters", clusters); code != ExitFailure || !strings.Contains(errs, "--truth") {
		t.Errorf("--truth DIR: exit %d, %q; want %d naming --truth", code, errs, ExitFailure)
	}
}

// TestDedupLateOutputUnwritable: a --stats or --report that cannot be
// written fails the run before it replaces -o (README: an error leaves the
// previous files untouched), naming the flag.
func TestDedupLateOutputUnwritable(t *testing.T) {
	in := writeDocs(t, 20)
	dir := t.TempDir()
	kept := filepath.Join(dir, "kept.jsonl")
	for _, flag := range []string{"--stats", "--report"} {
		if err := os.WriteFile(kept, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errs := runCLI("dedup", "-q", in, "-o", kept, flag, filepath.Join(dir, "no-such-dir", "out"))
		if code != ExitFailure || !strings.Contains(errs, flag+" ") {
			t.Errorf("%s: exit %d, %q; want %d naming %s", flag, code, errs, ExitFailure, flag)
		}
		if b, _ := os.ReadFile(kept); string(b) != "old\n" {
			t.Errorf("%s: a failed run replaced -o (%d bytes)", flag, len(b))
		}
	}
}

// TestInterruptedMessage: an interrupted index add says that the index
// keeps its completed batches and how to add the rest; a staged job that
// the same command resumes; other commands that their outputs were not
// replaced.
func TestInterruptedMessage(t *testing.T) {
	for args, want := range map[string]string{
		"index add":      "rerun with --skip-invalid",
		"dedup in.jsonl": "no output file was replaced",
		"dedup --executor local --work W in.jsonl": "--work W: the same command again resumes there",
		// index copy wrote its completed batches to --to (it said "no
		// output file was replaced" only, QA pass 11).
		"index copy --from a --to redis://u:secret@h:6379/0?prefix=p": "--to redis://u:xxxxx@h:6379/0?prefix=p keeps the documents of every batch copied before it (no output file was replaced): the same command again copies the rest",
		"index upgrade --index ix":                                    "the index keeps the shingle sets of every batch written before it",
	} {
		root := newRootCmd(&env{})
		cmd, rest, err := root.Find(strings.Fields(args))
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Fatal(err)
		}
		if m := interruptedMessage(cmd); !strings.Contains(m, want) {
			t.Errorf("%s: %q, want %q", args, m, want)
		}
	}
}

// TestStagedSummaryFolders: the summary names the output folders' parts
// without a doubled slash when a folder is given with a trailing one.
func TestStagedSummaryFolders(t *testing.T) {
	var b strings.Builder
	printStagedSummary(&b, &dedup.Stats{}, "in", 3, &dedupOpts{output: "kept/", clusters: "s3://bucket/cl/"})
	for _, want := range []string{"kept documents in kept/part-*", "clusters in s3://bucket/cl/part-*"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary %q lacks %q", b.String(), want)
		}
	}
}

// TestExtraArguments: an argument where a command takes none, or too
// few or too many, is a usage error (exit 2) that says so.
func TestExtraArguments(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--index", "x", "extra"},
		{"lsh-params", "extra"},
		{"index", "stats", "--index", "x", "extra"},
		{"index", "create", "--index", "x", "extra"},
		{"task"},
	} {
		code, _, errs := runCLI(args...)
		if code != ExitUsage || strings.Contains(errs, "unknown command") {
			t.Errorf("%q: exit %d, %q; want %d, not an unknown command", args, code, errs, ExitUsage)
		}
	}
}

// TestMemoryTooSmall: --memory 16MB is under the 16 MiB floor, and the
// message says by how much and what to give instead.
func TestMemoryTooSmall(t *testing.T) {
	code, _, errs := runCLI("dedup", "-q", "--memory", "16MB", writeDocs(t, 5))
	if code != ExitUsage || !strings.Contains(errs, "--memory 16MB (15.3 MiB)") || !strings.Contains(errs, "16MiB") {
		t.Errorf("exit %d, %q; want %d and the size in MiB", code, errs, ExitUsage)
	}
}

// TestIndexAddAllSkipped: index add --skip-invalid that skipped every
// record fails with exit 3 naming the first, as dedup --skip-invalid
// does (root help); one good record makes it a success.
func TestIndexAddAllSkipped(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("not json\n{\"id\":\"x\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "idx")
	if code, _, errs := runCLI("index", "create", "--index", idx); code != 0 {
		t.Fatalf("index create: exit %d (%s)", code, errs)
	}
	for _, cmd := range []string{"add", "query"} {
		code, _, errs := runCLI("index", cmd, "--index", idx, "--skip-invalid", bad)
		if code != ExitInvalidData || !strings.Contains(errs, "every record (2)") || !strings.Contains(errs, bad+":1") {
			t.Errorf("index %s: exit %d, %q; want %d naming every record and %s:1", cmd, code, errs, ExitInvalidData, bad)
		}
	}
	if code, _, errs := runCLI("index", "add", "--index", idx, "--skip-invalid", bad, writeDocs(t, 5)); code != 0 {
		t.Errorf("with good records: exit %d (%s)", code, errs)
	}
}

// TestIndexQuiet: every index subcommand that prints a summary takes -q
// and then prints nothing (index add took it, index create refused it).
func TestIndexQuiet(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	in := writeDocs(t, 5)
	for _, args := range [][]string{
		{"index", "create", "-q", "--index", idx},
		{"index", "add", "-q", "--index", idx, in},
		{"index", "query", "-q", "--index", idx, in},
		{"index", "compact", "-q", "--index", idx},
		{"index", "copy", "-q", "--from", idx, "--to", filepath.Join(dir, "copy")},
		{"index", "remove", "-q", "--index", idx, "d0"},
	} {
		if code, out, errs := runCLI(args...); code != 0 || out != "" || errs != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0 and nothing printed", args, code, out, errs)
		}
	}
}

// TestStagedReportPipe: the staged job's --report to a pipe (a process
// substitution, >(cat)) is written once, whole, when the job ends: the
// check that the path can be written, made before the tasks run, does
// not open the pipe (its close would end the reader's input with nothing
// written).
func TestStagedReportPipe(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	in := writeDocs(t, 30)
	fifo := filepath.Join(dir, "report.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The reader reads until end of file, and once more if that first
	// read was cut short, so that the job's own write does not block on
	// a pipe without a reader.
	reads := make(chan string, 2)
	go func() {
		for range 2 {
			b, err := os.ReadFile(fifo)
			if err != nil {
				t.Error(err)
			}
			reads <- string(b)
			if strings.Contains(string(b), "</html>") {
				return
			}
		}
	}()
	code, _, errs := runCLI("dedup", "-q", "--executor", "local", "--tasks", "1", "--work", filepath.Join(dir, "work"), "--report", fifo, in)
	if code != 0 {
		t.Fatalf("exit %d (%s)", code, errs)
	}
	if first := <-reads; !strings.Contains(first, "</html>") {
		t.Errorf("the pipe's reader first read %d bytes, not the report: the path check opened and closed it", len(first))
	}
}

// TestMethodFlagsRefused: a flag that only other methods read, given
// explicitly, is a usage error (exit 2) naming the flag and the methods
// that read it, in dedup, sign and the Python binding's DedupConfig;
// given to a method that reads it, or left at its default, it is fine.
func TestMethodFlagsRefused(t *testing.T) {
	in := writeDocs(t, 20)
	for _, c := range []struct {
		args []string
		want string // "" for a run that succeeds
	}{
		{[]string{"dedup", "--method", "simhash", "--num-perm", "256"}, "--num-perm applies to --method minhash, not simhash"},
		{[]string{"dedup", "--method", "minhash", "--bits", "128"}, "--bits applies to --method simhash"},
		{[]string{"dedup", "--method", "exact", "--threshold", "0.9"}, "--threshold applies to --method minhash, jaccard, bloom-overlap, simhash (with --verify), not exact"},
		{[]string{"dedup", "--method", "simhash", "--threshold", "0.5"}, "--threshold: simhash reads it only with --verify"},
		{[]string{"dedup", "--method", "minhash", "--key-field", "url"}, "--key-field applies to --method bloom, not minhash"},
		{[]string{"dedup", "--method", "jaccard", "--spill"}, "--spill applies to --method minhash, simhash, exact, ksentence, not jaccard"},
		{[]string{"dedup", "--cluster", "leader", "--spill"}, "--spill: a --cluster leader run stays in memory"},
		{[]string{"dedup", "--method", "ksentence", "--ngram", "3"}, "--ngram applies to"},
		{[]string{"sign", "--method", "simhash", "--num-perm", "64"}, "--num-perm applies to --method minhash, not simhash"},
		{[]string{"dedup", "--method", "exact", "--verify"}, "--verify applies to --method minhash, simhash, not exact"},
		{[]string{"dedup", "--method", "jaccard", "--verify"}, "--verify applies to --method minhash, simhash, not jaccard"},
		{[]string{"dedup", "--method", "exact", "--seed", "7"}, "--seed applies to --method minhash, simhash, jaccard, bloom, bloom-overlap, not exact"},
		{[]string{"sign", "--method", "ksentence", "--seed", "7"}, "--seed applies to --method minhash, simhash, jaccard, bloom, bloom-overlap, not ksentence"},
		{[]string{"dedup", "--method", "bloom", "--seed", "7"}, ""},
		{[]string{"dedup", "--method", "jaccard", "--seed", "7"}, ""},
		{[]string{"sign", "--method", "simhash", "--seed", "7"}, ""},
		{[]string{"dedup", "--method", "simhash", "--threshold", "0.5", "--verify", "--bits", "128"}, ""},
		{[]string{"dedup", "--method", "exact", "--spill"}, ""},
		{[]string{"dedup", "--num-perm", "64", "--threshold", "0.7"}, ""},
		{[]string{"dedup", "--method", "bloom", "--bloom-n", "100"}, ""},
	} {
		code, _, errs := runCLI(append(append([]string{c.args[0], "-q"}, c.args[1:]...), in, "-o", os.DevNull)...)
		switch {
		case c.want == "" && code != 0:
			t.Errorf("%v: exit %d (%s)", c.args, code, errs)
		case c.want != "" && (code != ExitUsage || !strings.Contains(errs, c.want)):
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, errs, ExitUsage, c.want)
		}
	}
	if _, _, err := DedupConfig([]string{"--method=simhash", "--num-perm=64"}); err == nil || !strings.Contains(err.Error(), "--num-perm applies") {
		t.Errorf("DedupConfig: %v, want --num-perm refused", err)
	}
	// IndexAt (the Python binding's neardup.Index) creating an index
	// refuses them as index create does; an existing index checks the
	// flags given against its parameters instead.
	for i, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--method=simhash", "--num-perm=64"}, "--num-perm applies to --method minhash, not simhash"},
		{[]string{"--method=simhash", "--threshold=0.5"}, "--threshold: a simhash index matches by --distance"},
		{[]string{"--bits=128"}, "--bits applies to --method simhash, not minhash"},
		{[]string{"--blocks=4"}, "--blocks applies to --method simhash, not minhash"},
		{[]string{"--method=simhash", "--bits=128", "--blocks=4", "--seed=3"}, ""},
	} {
		loc := filepath.Join(t.TempDir(), strconv.Itoa(i))
		s, err := IndexAt(loc, c.args)
		if err == nil {
			s.Close()
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("IndexAt %v: %v", c.args, err)
		case c.want != "" && (err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("IndexAt %v: %v; want a usage error %q", c.args, err, c.want)
		}
		if _, serr := os.Stat(loc); c.want != "" && serr == nil {
			t.Errorf("IndexAt %v: refused, but made %s", c.args, loc)
		}
	}
	// index create: a simhash index reads no --threshold, a minhash one
	// no --bits or --blocks.
	dir := t.TempDir()
	for i, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--method", "simhash", "--num-perm", "64"}, "--num-perm applies to --method minhash, not simhash"},
		{[]string{"--method", "simhash", "--threshold", "0.5"}, "--threshold: a simhash index matches by --distance"},
		{[]string{"--bits", "128"}, "--bits applies to --method simhash, not minhash"},
		{[]string{"--blocks", "4"}, "--blocks applies to --method simhash, not minhash"},
		{[]string{"--method", "simhash", "--bits", "128", "--blocks", "4"}, ""},
		{[]string{"--threshold", "0.5", "--num-perm", "64"}, ""},
	} {
		args := append([]string{"index", "create", "-q", "--index", filepath.Join(dir, strconv.Itoa(i))}, c.args...)
		code, _, errs := runCLI(args...)
		switch {
		case c.want == "" && code != 0:
			t.Errorf("%v: exit %d (%s)", args, code, errs)
		case c.want != "" && (code != ExitUsage || !strings.Contains(errs, c.want)):
			t.Errorf("%v: exit %d, %q; want %d and %q", args, code, errs, ExitUsage, c.want)
		}
	}
}

// TestIDFieldMissingWarning: an --id-field given on the command line that
// some records lack (or have empty) is said once on standard error, even
// with -q, with the count and the first FILE:LINE, in dedup, sign and
// index add; the default id field is not warned about (a .txt file or a
// corpus without ids is normal), nor a field every record has.
func TestIDFieldMissingWarning(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "docs.jsonl")
	docs := `{"doc":"a","text":"one two three four five six"}
{"text":"seven eight nine ten eleven twelve"}
{"doc":"","text":"thirteen fourteen fifteen sixteen"}
`
	if err := os.WriteFile(in, []byte(docs), 0o644); err != nil {
		t.Fatal(err)
	}
	want := `2 of 3 documents had no --id-field "doc" (or an empty one), the first ` + in + ":2"
	idx := filepath.Join(dir, "idx")
	if code, _, errs := runCLI("index", "create", "-q", "--index", idx); code != 0 {
		t.Fatalf("index create: exit %d (%s)", code, errs)
	}
	for _, args := range [][]string{
		{"dedup", "-q", "--id-field", "doc", in},
		{"sign", "-q", "--id-field", "doc", "-o", os.DevNull, in},
		{"index", "add", "-q", "--index", idx, "--id-field", "doc", in},
	} {
		code, _, errs := runCLI(args...)
		if code != 0 || strings.Count(errs, "warning") != 1 || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d, stderr %q; want 0 and one warning %q", args, code, errs, want)
		}
	}
	for _, args := range [][]string{
		{"dedup", "-q", in},
		{"dedup", "-q", "--id-field", "text", in},
	} {
		if code, _, errs := runCLI(args...); code != 0 || errs != "" {
			t.Errorf("%v: exit %d, stderr %q; want 0 and nothing", args, code, errs)
		}
	}
	// A plain text file has no ids: --id-field names the id's key in
	// the records written (docs/formats.md), and no line lacks it.
	txt := filepath.Join(dir, "lines.txt")
	if err := os.WriteFile(txt, []byte("one two three four five six\nseven eight nine ten eleven twelve\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(dir, "kept.jsonl")
	for _, args := range [][]string{
		{"dedup", "-q", "--id-field", "doc", "-o", kept, txt},
		{"sign", "-q", "--id-field", "doc", "-o", os.DevNull, txt},
		{"index", "add", "-q", "--index", idx, "--id-field", "doc", txt},
		{"dedup", "-q", "--id-field", "doc", "--format", "txt", "-o", os.DevNull, "-"},
	} {
		var out, errb bytes.Buffer
		code := Main(args, strings.NewReader("one two three\n"), &out, &errb)
		if errs := errb.String(); code != 0 || errs != "" {
			t.Errorf("%v: exit %d, stderr %q; want 0 and nothing (no warning, no summary with -q)", args, code, errs)
		}
	}
	if b, err := os.ReadFile(kept); err != nil || !strings.HasPrefix(string(b), `{"doc":"`+txt+`:1"`) {
		t.Errorf("kept records %q (%v); want the id under \"doc\"", b, err)
	}
}

// TestTaskArguments: neardup task with a stage that does not exist, or
// an index beyond the stage's tasks, is a usage error (exit 2) naming
// the stages or the range, not a failed task (exit 1).
func TestTaskArguments(t *testing.T) {
	in := writeDocs(t, 20)
	work := filepath.Join(t.TempDir(), "work")
	if code, _, errs := runCLI("dedup", "-q", "--executor", "print", "--tasks", "2", "--work", work, in, "-o", filepath.Join(t.TempDir(), "kept")); code != 0 {
		t.Fatalf("plan: exit %d (%s)", code, errs)
	}
	for args, want := range map[string]string{
		"sgn 0":        `unknown stage "sgn" (want one of sign, bucket`,
		"sign 5":       "stage sign: task index 5 out of range: the job planned in " + work + " has 2 task(s) in it (0 to 1)",
		"components 1": "stage components: task index 1 out of range",
		// Without --report the job has no examples task.
		"examples 0": "stage examples: the job planned in " + work + " has no task in it (it chooses the examples of --report",
		"examples":   "stage examples: the job planned in " + work + " has no task in it",
	} {
		code, _, errs := runCLI(append([]string{"task", "--work", work}, strings.Fields(args)...)...)
		if code != ExitUsage || !strings.Contains(errs, want) {
			t.Errorf("task %s: exit %d, %q; want %d and %q", args, code, errs, ExitUsage, want)
		}
	}
	// A work folder without a plan: the command that makes it.
	empty := t.TempDir()
	for _, args := range []string{"sign 0", "finish"} {
		code, _, errs := runCLI(append([]string{"task", "--work", empty}, strings.Fields(args)...)...)
		if want := "no plan: run `neardup dedup --executor local|print|slurm --work " + empty; code != ExitUsage || !strings.Contains(errs, want) {
			t.Errorf("task %s on a folder without a plan: exit %d, %q; want %d and %q", args, code, errs, ExitUsage, want)
		}
	}
}

// TestStagedOtherPlan: the same --work given another job's flags names
// the first difference, by its flag where one flag sets it.
func TestStagedOtherPlan(t *testing.T) {
	in := writeDocs(t, 30)
	work, out := filepath.Join(t.TempDir(), "work"), t.TempDir()
	run := func(extra ...string) (int, string) {
		args := append([]string{"dedup", "-q", "--executor", "print", "--work", work, in, "-o", filepath.Join(out, "kept")}, extra...)
		code, _, errs := runCLI(args...)
		return code, errs
	}
	if code, errs := run("--tasks", "2"); code != 0 {
		t.Fatalf("plan: exit %d (%s)", code, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tasks", "3"}, "(--tasks is 2 in the plan, 3 in this command)"},
		{[]string{"--tasks", "2", "--ngram", "3"}, `(--ngram is 5 in the plan, 3 in this command)`},
		{[]string{"--tasks", "2", "--keep", "longest"}, `(--keep is first in the plan, longest in this command)`},
		{[]string{"--tasks", "2", "--html"}, `(--html is false in the plan, true in this command)`},
		{[]string{"--tasks", "2", "--method", "cascade"}, `(--method is minhash in the plan, cascade --then minhash in this command)`},
		{[]string{"--tasks", "2", "--method", "simhash"}, `(--method is minhash in the plan, simhash in this command)`},
		{[]string{"--tasks", "2", "--clusters", filepath.Join(out, "cl")}, "(--clusters is absent in the plan, "},
	} {
		if code, errs := run(c.args...); code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, %q; want %d and %q", c.args, code, errs, ExitUsage, c.want)
		}
	}
}

// TestStagedDuplicateIDs: a staged job warns of documents that share an
// id, even with -q, as dedup does (its --stats counted them, its
// standard error said nothing).
func TestStagedDuplicateIDs(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte("{\"id\":\"a\",\"text\":\"one two three\"}\n{\"id\":\"a\",\"text\":\"four five six\"}\n{\"id\":\"b\",\"text\":\"seven\"}\n"), 0o644)
	code, _, errs := runCLI("dedup", "-q", "--executor", "local", "--tasks", "2", "--work", filepath.Join(dir, "work"), in, "--clusters", filepath.Join(dir, "cl"))
	if code != 0 || !strings.Contains(errs, `neardup: warning: 1 id is used by more than one document ("a")`) {
		t.Errorf("exit %d, %q; want 0 and the warning of id \"a\"", code, errs)
	}
}

// TestAgainstMissing: an --against file that does not exist is a usage
// error (exit 2) that names the flag, for dedup and the staged job.
func TestAgainstMissing(t *testing.T) {
	in := writeDocs(t, 5)
	missing := filepath.Join(t.TempDir(), "old.jsonl")
	for _, args := range [][]string{
		{"dedup", "-q", in, "--against", missing},
		{"dedup", "-q", "--executor", "print", "--tasks", "2", "--work", filepath.Join(t.TempDir(), "w"), "-o", filepath.Join(t.TempDir(), "o"), in, "--against", missing},
	} {
		code, _, errs := runCLI(args...)
		if code != ExitUsage || !strings.Contains(errs, "--against: "+missing+": no such file or directory") {
			t.Errorf("%q: exit %d, %q; want %d naming --against and %s", args, code, errs, ExitUsage, missing)
		}
	}
}

// TestIndexRemoveMissingSaysWhere: an id not in the index stops index
// remove with exit 3; the message names the id's argument or --ids-file
// line, says how many ids were removed before it (they stay removed) and
// names --ignore-missing (it said only `id not in the index: "x"`).
func TestIndexRemoveMissingSaysWhere(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	if code, _, errs := runCLI("index", "create", "-q", "--index", idx); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := runCLI("index", "add", "-q", "--index", idx, writeDocs(t, 5)); code != 0 {
		t.Fatal(errs)
	}
	// Whole words, not the package prefix of the store's error (another
	// change may reword that).
	has := func(errs string, parts ...string) bool {
		for _, p := range parts {
			if !strings.Contains(errs, p) {
				return false
			}
		}
		return true
	}
	code, _, errs := runCLI("index", "remove", "--index", idx, "d0", "nope", "d1")
	want := []string{"argument 2: ", `id not in the index: "nope" (1 removed before it, 1 not tried; --ignore-missing skips ids not in the index)`}
	if code != 3 || !has(errs, want...) {
		t.Errorf("exit %d, stderr %q; want 3 and %q", code, errs, want)
	}
	ids := filepath.Join(dir, "ids.txt")
	if err := os.WriteFile(ids, []byte("d1\n\nnope2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCLI("index", "remove", "--index", idx, "--ids-file", ids)
	want = []string{"--ids-file " + ids + " line 3: ", `id not in the index: "nope2" (1 removed before it, 0 not tried`}
	if code != 3 || !has(errs, want...) {
		t.Errorf("exit %d, stderr %q; want 3 and %q", code, errs, want)
	}
}

// TestTuneTruthMismatch: tune scored a truth of other documents, and a
// pairs truth none of whose labels is --positive (clough's cut, light,
// heavy, non), as zeros for every configuration and exited 0; it had no
// --positive. Now: exit 3 naming both, --positive as eval's, and exit 2
// for --positive with a JSONL truth, and for --method bloom-overlap.
func TestTuneTruthMismatch(t *testing.T) {
	in := writeDocs(t, 6)
	dir := writeFiles(t, map[string]string{
		"other.jsonl": `{"id":"p","cluster":"p"}` + "\n" + `{"id":"q","cluster":"p"}` + "\n",
		"truth.jsonl": `{"id":"d0","cluster":"a"}` + "\n" + `{"id":"d1","cluster":"a"}` + "\n",
		"pairs.tsv":   "id1\tid2\tlabel\nd0\td1\tcut\nd2\td3\tnon\n",
	})
	p := func(name string) string { return filepath.Join(dir, name) }
	grid := []string{"--thresholds", "0.5", "--ngrams", "5", "--units", "word", "--num-perms", "64", "-q"}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--truth", p("other.jsonl")}, ExitInvalidData, `no document of the input is in the truth: the input and the truth are not about the same documents (the input's first ids: "d0", "d1", "d2"; the truth's: "p", "q")`},
		{[]string{"--truth", p("pairs.tsv")}, ExitInvalidData, "no pair has a label of --positive 1"},
		{[]string{"--truth", p("pairs.tsv"), "--positive", "cut"}, ExitOK, ""},
		{[]string{"--truth", p("truth.jsonl"), "--positive", "cut"}, ExitUsage, "--positive reads the labels of a pairs truth"},
		// bloom-overlap forms no clusters: tune swept its 49 thresholds
		// and shingles, every one scoring 0, and exited 0.
		{[]string{"--truth", p("truth.jsonl"), "--method", "bloom-overlap", "--ngrams", "2"}, ExitUsage, "--method bloom-overlap: tune scores the clusters"},
	} {
		args := append(append([]string{"tune"}, c.args...), grid...)
		code, _, errs := runCLI(append(args, in)...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errs, c.code, c.msg)
		}
	}
}

// TestPlanDifferenceNamesTheFlagChanged: a staged job run again over its
// work folder with --threshold changed said "--bands is 13 in the plan,
// 17 in this command" (the banding follows from the threshold, and its
// key sorts first), and without --report, `"examples" is 10 in the plan,
// absent in this command`, a field no flag names.
func TestPlanDifferenceNamesTheFlagChanged(t *testing.T) {
	plan := func(threshold float64, bands, distance, blocks int, report bool) []byte {
		ex := ""
		if report {
			ex = `,"examples":10,"random_examples":10`
		}
		return fmt.Appendf(nil, `{"options":{"Spec":{"minhash":{"bands":%d,"num_perm":128},"simhash":{"bits":64,"blocks":%d,"distance":%d},"threshold":%g}},"tasks":3%s}`,
			bands, blocks, distance, threshold, ex)
	}
	for _, c := range []struct {
		was, now []byte
		want     string
	}{
		{plan(0.8, 13, 3, 4, false), plan(0.7, 17, 3, 4, false), "--threshold is 0.8 in the plan, 0.7 in this command"},
		{plan(0.8, 13, 3, 4, false), plan(0.8, 13, 5, 6, false), "--distance is 3 in the plan, 5 in this command"},
		{plan(0.8, 13, 3, 4, true), plan(0.8, 13, 3, 4, false), "--report was given to the job planned there, not to this command"},
		{plan(0.8, 13, 3, 4, false), plan(0.8, 13, 3, 4, true), "--report is given to this command, not to the job planned there"},
	} {
		if got := planDifference(c.was, c.now); got != c.want {
			t.Errorf("planDifference(%s, %s) = %q, want %q", c.was, c.now, got, c.want)
		}
	}
}

// TestIndexCreateOnAFile: index create --index FILE failed with exit 1
// and "mkdir FILE: not a directory"; the other index commands say "a
// file" with exit 2, as create now does.
func TestIndexCreateOnAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{f, filepath.Join(f, "idx")} {
		code, _, errs := runCLI("index", "create", "--index", loc)
		if want := "--index " + loc + ": a file, not a folder, is in the way"; code != ExitUsage || !strings.Contains(errs, want) {
			t.Errorf("--index %s: exit %d, stderr %q; want %d and %q", loc, code, errs, ExitUsage, want)
		}
	}
}

// TestPlanDifferenceLongValueOnARune: a value of the plan longer than 80
// bytes was cut at its 77th byte, which split a Chinese character of an
// input's name in two (invalid UTF-8 on the terminal); it is cut at 80
// columns on a rune, with an ellipsis.
func TestPlanDifferenceLongValueOnARune(t *testing.T) {
	plan := func(name string) []byte {
		return fmt.Appendf(nil, `{"inputs":[{"path":%q}],"tasks":3}`, name)
	}
	long := strings.Repeat("近似重复文档", 10) + ".jsonl"
	got := planDifference(plan(long), plan("b.jsonl"))
	if !utf8.ValidString(got) || !strings.Contains(got, "…") {
		t.Errorf("planDifference = %q: want valid UTF-8, the long name cut with an ellipsis", got)
	}
	if _, v, ok := strings.Cut(got, " is "); !ok || human.Width(strings.Split(v, " in the plan")[0]) > 80 {
		t.Errorf("planDifference = %q: want the plan's value within 80 columns", got)
	}
}
