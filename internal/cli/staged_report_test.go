package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// reportSection is the HTML of the report's section id, "" if none.
func reportSection(page, id string) string {
	m := regexp.MustCompile(`(?s)<section id="` + id + `"[^>]*>.*?</section>`).FindString(page)
	return m
}

// TestStagedReport: the staged job's --report shows what dedup's does on
// the same input: the same summary (counts, the removed ids to download)
// and the same example clusters, the largest and the random ones, with
// their members' texts and diffs, for any number of tasks, with and
// without the outputs that read the input again (-o) or list the ids
// (--clusters); in place of one process's stage times, its tasks' usage.
// Its --stats has dedup's counts and dedup's examples (the report's).
func TestStagedReport(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	in := genFiles(t, dir, 3, 700, 400)
	for _, c := range []struct {
		name         string
		flags        []string
		stagedOutput []string
		tasks        []int
	}{
		{"first", nil, nil, []int{1, 3}},
		{"outputs", nil, []string{"-o", "OUT/out", "--clusters", "OUT/cl"}, []int{4}},
		{"longest", []string{"--keep", "longest", "--threshold", "0.7"}, []string{"-o", "OUT/out"}, []int{3}},
		{"cascade", []string{"--method", "cascade", "--keep", "longest"}, []string{"-o", "OUT/out"}, []int{1, 3, 8}},
	} {
		ref := filepath.Join(dir, c.name+"-ref.html")
		args := append([]string{"dedup", "-q", "-j", "2", "--report", ref, "--stats", ref + ".json"}, c.flags...)
		if code, _, stderr := runCLI(append(args, in...)...); code != 0 {
			t.Fatalf("%s: dedup: exit %d: %s", c.name, code, stderr)
		}
		want := readPage(t, ref)
		if !strings.Contains(reportSection(want, "clusters"), `class="cluster random"`) || !strings.Contains(want, `id="removed-ids"`) {
			t.Fatalf("%s: dedup's report has no random example or no removed ids: the test shows nothing", c.name)
		}
		wantSt := statsCounts(t, ref+".json")
		if !strings.Contains(wantSt, `"examples"`) {
			t.Fatalf("%s: dedup's --stats has no examples: the test shows nothing", c.name)
		}
		for _, n := range c.tasks {
			run := filepath.Join(dir, fmt.Sprintf("%s-%d", c.name, n))
			got := run + "-report.html"
			args := []string{"dedup", "-q", "--executor", "local", "--tasks", fmt.Sprint(n), "-j", "2", "--work", run + "/work", "--report", got, "--stats", run + ".json"}
			for _, f := range c.stagedOutput {
				args = append(args, strings.ReplaceAll(f, "OUT", run))
			}
			args = append(args, c.flags...)
			if code, _, stderr := runCLI(append(args, in...)...); code != 0 {
				t.Fatalf("%s, %d tasks: exit %d: %s", c.name, n, code, stderr)
			}
			if st := statsCounts(t, run+".json"); st != wantSt {
				t.Errorf("%s, %d tasks: --stats differs from dedup's:\n%s\nwant\n%s", c.name, n, st, wantSt)
			}
			page := readPage(t, got)
			for _, id := range []string{"summary", "clusters"} {
				if g, w := reportSection(page, id), reportSection(want, id); g != w {
					t.Errorf("%s, %d tasks: the report's section %q differs from dedup's:\n%s\nwant\n%s", c.name, n, id, g, w)
				}
			}
			if !strings.Contains(page, `id="task-stages"`) || !strings.Contains(page, "<td>write</td>") {
				t.Errorf("%s, %d tasks: the report shows no usage of the tasks", c.name, n)
			}
		}
	}
}

func readPage(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStagedReportUnwritable: a --report that cannot be written fails the
// staged job at once, before any task runs, with dedup's exit code and
// the flag and path in the message, as dedup's.
func TestStagedReportUnwritable(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	in := genFiles(t, dir, 3, 60, 30)
	bad := filepath.Join(dir, "no-such-dir", "r.html")
	dcode, _, dstderr := runCLI(append([]string{"dedup", "-q", "--report", bad}, in...)...)
	if !strings.Contains(dstderr, "--report "+bad) {
		t.Errorf("dedup's stderr %q does not name --report %s", dstderr, bad)
	}
	work := filepath.Join(dir, "work")
	code, _, stderr := runCLI(append([]string{"dedup", "-q", "--executor", "local", "--tasks", "2", "--work", work, "--report", bad}, in...)...)
	if code != dcode || code == 0 {
		t.Errorf("exit %d, dedup's %d", code, dcode)
	}
	if !strings.Contains(stderr, "--report "+bad) {
		t.Errorf("stderr %q does not name --report %s", stderr, bad)
	}
	if _, err := os.Stat(filepath.Join(work, "done")); err == nil {
		t.Errorf("tasks ran before the --report path was checked")
	}
}

// TestStagedReportResumes: with --report, the examples task (one, between
// join and write: it chooses the examples from the join tasks' lists)
// or a write task killed with SIGKILL before its marker fails the job;
// the same command again completes it, and the report's summary and
// example clusters are dedup's.
func TestStagedReportResumes(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	in := genFiles(t, dir, 2, 500, 300)
	ref := filepath.Join(dir, "ref.html")
	if code, _, stderr := runCLI(append([]string{"dedup", "-q", "-j", "2", "--report", ref}, in...)...); code != 0 {
		t.Fatalf("dedup: exit %d: %s", code, stderr)
	}
	want := readPage(t, ref)
	if !strings.Contains(reportSection(want, "clusters"), `class="cluster random"`) {
		t.Fatalf("dedup's report has no random example: the test shows nothing")
	}
	for _, crash := range []struct {
		stage string
		index int
	}{{"examples", 0}, {"write", 1}} {
		run := filepath.Join(dir, crash.stage)
		args := append([]string{"dedup", "-q", "--executor", "local", "--tasks", "3", "-j", "2", "--work", run + "/work", "-o", run + "/out", "--report", run + ".html"}, in...)
		killThenResume(t, crash.stage, crash.index, run+"-crashed", args...)
		page := readPage(t, run+".html")
		for _, id := range []string{"summary", "clusters"} {
			if g, w := reportSection(page, id), reportSection(want, id); g != w {
				t.Errorf("%s %d: after the resume the report's section %q differs from dedup's:\n%s\nwant\n%s", crash.stage, crash.index, id, g, w)
			}
		}
	}
}
