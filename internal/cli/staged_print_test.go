package cli

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/neardup/neardup/internal/staged"
)

// k8sJob is the part of a batch/v1 Job that --executor print writes;
// decoding with KnownFields refuses any other field, so a misspelt one
// fails the test.
type k8sJob struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode       string `yaml:"completionMode"`
		Completions          int    `yaml:"completions"`
		Parallelism          int    `yaml:"parallelism"`
		BackoffLimitPerIndex int    `yaml:"backoffLimitPerIndex"`
		MaxFailedIndexes     int    `yaml:"maxFailedIndexes"`
		Template             struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				RestartPolicy string `yaml:"restartPolicy"`
				Containers    []struct {
					Name    string   `yaml:"name"`
					Image   string   `yaml:"image"`
					Command []string `yaml:"command"`
					EnvFrom []struct {
						SecretRef struct {
							Name     string `yaml:"name"`
							Optional bool   `yaml:"optional"`
						} `yaml:"secretRef"`
					} `yaml:"envFrom"`
					Resources struct {
						Requests map[string]string `yaml:"requests"`
						Limits   map[string]string `yaml:"limits"`
					} `yaml:"resources"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// dnsLabel is what Kubernetes takes as a Job's name (RFC 1123 label).
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// k8sJobNames returns the Job names of the manifests in the work folder
// work, in stage order; each must be a DNS-1123 label
// neardup-HASH-STAGE (HASH 8 hex digits, the same in every manifest of
// the job) with the labels of its job (app.kubernetes.io/instance
// neardup-HASH) on the Job and its pods.
func k8sJobNames(t *testing.T, work string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(work, "k8s", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no manifests (%v)", work, err)
	}
	var names []string
	var instance string
	for _, f := range files {
		var job k8sJob
		dec := yaml.NewDecoder(bytes.NewReader(mustRead(t, f)))
		dec.KnownFields(true)
		if err := dec.Decode(&job); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		stage := strings.SplitN(strings.TrimSuffix(filepath.Base(f), ".yaml"), "-", 2)[1]
		name, labels := job.Metadata.Name, job.Metadata.Labels
		if instance == "" {
			instance = labels["app.kubernetes.io/instance"]
		}
		if !dnsLabel.MatchString(name) || !regexp.MustCompile(`^neardup-[0-9a-f]{8}-`+stage+`$`).MatchString(name) || name != instance+"-"+stage {
			t.Fatalf("%s: Job name %q, want neardup-HASH-%s, HASH the same in every manifest (%s-)", f, name, stage, instance)
		}
		want := map[string]string{"app.kubernetes.io/name": "neardup", "app.kubernetes.io/instance": instance, "app.kubernetes.io/component": stage}
		if !maps.Equal(labels, want) || !maps.Equal(job.Spec.Template.Metadata.Labels, want) {
			t.Fatalf("%s: labels %v, pods' %v, want %v", f, labels, job.Spec.Template.Metadata.Labels, want)
		}
		names = append(names, name)
	}
	return names
}

// k8sCommand is a container's command as Kubernetes runs it in the pod
// of completion index i, whose environment has JOB_COMPLETION_INDEX (the
// only variable the manifests' pods have before their image's): each
// $(VAR) of a variable the container has is its value, $$ is $, any
// other $ stays (k8s.io/kubernetes third_party/forked/golang/expansion).
func k8sCommand(command []string, i int) []string {
	env := map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)}
	out := make([]string, len(command))
	for k, s := range command {
		var b strings.Builder
		for j := 0; j < len(s); j++ {
			if s[j] != '$' || j+1 == len(s) {
				b.WriteByte(s[j])
				continue
			}
			switch end := strings.IndexByte(s[j+1:], ')'); {
			case s[j+1] == '$':
				b.WriteByte('$')
				j++
			case s[j+1] == '(' && end > 0:
				name := s[j+2 : j+1+end]
				if v, ok := env[name]; ok {
					b.WriteString(v)
				} else {
					b.WriteString("$(" + name + ")")
				}
				j += 1 + end
			case s[j+1] == '(':
				b.WriteString("$(")
				j++
			default:
				b.WriteByte('$')
			}
		}
		out[k] = b.String()
	}
	return out
}

// neardupOnPath puts a program named neardup, the test binary acting as
// the command (TestMain), first on PATH, as a container image would.
func neardupOnPath(t *testing.T) {
	bin := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(bin, "neardup")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestStagedPrintRuns: the manifests of --executor print are Kubernetes
// Jobs (parsed as YAML: Indexed, completions and parallelism the stage's
// task count, memory request and limit the --task-memory, the task
// command) and the job is done by running each manifest's command once
// for every completion index, stage after stage, as Kubernetes would; the
// printed shell script does the same job, and stops at a failed task with
// its exit code and its error.
func TestStagedPrintRuns(t *testing.T) {
	stagedEnv(t)
	neardupOnPath(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl.gz")
	lines := genCorpus(t, 9, 500)
	writeLines(t, a, lines[:300])
	writeLines(t, b, lines[300:])
	wantCl, wantOut, _ := stagedReference(t, dir)
	// dedup's pairs, stats and report, for the job with --report.
	ref := filepath.Join(dir, "ref")
	if code, _, stderr := runCLI("dedup", "-q", "-j", "2", "--pairs", ref+"-pairs.jsonl", "--stats", ref+"-st.json", "--report", ref+".html", a, b); code != 0 {
		t.Fatalf("dedup: exit %d: %s", code, stderr)
	}
	print := func(run string, tasks int, in ...string) string {
		t.Helper()
		args := []string{"dedup", "-q", "--executor", "print", "--tasks", strconv.Itoa(tasks), "--task-memory", "300MiB", "--work", run + "/work",
			"--clusters", run + "/cl", "-o", run + "/out"}
		if strings.Contains(run, "k8s") {
			args = append(args, "--pairs", run+"/pairs", "--stats", run+"/st.json", "--report", run+".html")
		}
		args = append(args, in...)
		code, stdout, stderr := runCLI(args...)
		if code != 0 {
			t.Fatalf("print: exit %d: %s", code, stderr)
		}
		return stdout
	}

	// Kubernetes, simulated: the manifests' own commands, index by index,
	// as Kubernetes expands them: a work folder with $$ and $(VAR) in its
	// name is the same folder in every pod.
	run := filepath.Join(dir, "k8s$$x$(JOB_COMPLETION_INDEX)")
	print(run, 3, a, b)
	files, err := filepath.Glob(filepath.Join(run, "work", "k8s", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	stages := planStages(t, run+"/work")
	names := k8sJobNames(t, run+"/work")
	if len(files) != len(stages) {
		t.Fatalf("%d manifests, want one a stage: %q", len(files), files)
	}
	for k, f := range files {
		stage := stages[k]
		if want := fmt.Sprintf("%02d-%s.yaml", k+1, stage); filepath.Base(f) != want {
			t.Fatalf("manifest %d is %s, want %s", k, filepath.Base(f), want)
		}
		var job k8sJob
		dec := yaml.NewDecoder(bytes.NewReader(mustRead(t, f)))
		dec.KnownFields(true)
		if err := dec.Decode(&job); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		tasks := 3
		if stage == staged.StageComponents || stage == staged.StageExamples || stage == staged.StageFinish {
			tasks = 1
		}
		spec := job.Spec
		c := spec.Template.Spec.Containers
		var command []string // for the comparison below, with the index 0
		if len(c) == 1 {
			command = k8sCommand(c[0].Command, 0)
		}
		switch {
		case job.APIVersion != "batch/v1" || job.Kind != "Job":
			t.Errorf("%s: %s %s, want batch/v1 Job", f, job.APIVersion, job.Kind)
		case spec.CompletionMode != "Indexed" || spec.Completions != tasks || spec.Parallelism != tasks:
			t.Errorf("%s: completionMode %q, completions %d, parallelism %d; want Indexed, %d, %d", f, spec.CompletionMode, spec.Completions, spec.Parallelism, tasks, tasks)
		case spec.BackoffLimitPerIndex < 1 || spec.MaxFailedIndexes != 0:
			t.Errorf("%s: backoffLimitPerIndex %d, maxFailedIndexes %d", f, spec.BackoffLimitPerIndex, spec.MaxFailedIndexes)
		case spec.Template.Spec.RestartPolicy != "Never" || len(c) != 1:
			t.Errorf("%s: restartPolicy %q, %d containers", f, spec.Template.Spec.RestartPolicy, len(c))
		case c[0].Image != "neardup:latest":
			t.Errorf("%s: image %q, want neardup:latest (docs/scale.md replaces it)", f, c[0].Image)
		case c[0].Resources.Requests["memory"] != strconv.Itoa(300<<20) || c[0].Resources.Limits["memory"] != strconv.Itoa(300<<20) || c[0].Resources.Requests["cpu"] != "1":
			t.Errorf("%s: resources %+v, want a memory request and limit of %d bytes and a CPU", f, c[0].Resources, 300<<20)
		case len(c[0].EnvFrom) != 1 || c[0].EnvFrom[0].SecretRef.Name != "neardup-storage" || !c[0].EnvFrom[0].SecretRef.Optional:
			t.Errorf("%s: envFrom %+v, want the optional secret neardup-storage", f, c[0].EnvFrom)
		case strings.Join(command, " ") != "neardup task --work "+run+"/work "+stage:
			t.Errorf("%s: command %q, as Kubernetes runs it %q", f, c[0].Command, command)
		}
		if t.Failed() {
			t.FailNow()
		}
		for i := range spec.Completions {
			command := k8sCommand(c[0].Command, i)
			cmd := exec.Command(command[0], command[1:]...)
			cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX="+strconv.Itoa(i))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s, index %d: %v: %s", f, i, err, out)
			}
		}
	}
	if got := concatParts(t, run+"/cl", 3); !bytes.Equal(got, wantCl) {
		t.Errorf("Kubernetes, simulated: the clusters differ from dedup's")
	}
	if got := concatParts(t, run+"/out", 3); !bytes.Equal(got, wantOut) {
		t.Errorf("Kubernetes, simulated: the kept documents differ from dedup's")
	}
	if got, want := concatParts(t, run+"/pairs", 3), mustRead(t, ref+"-pairs.jsonl"); !bytes.Equal(got, want) {
		t.Errorf("Kubernetes, simulated: the pairs differ from dedup's")
	}
	if got, want := statsCounts(t, run+"/st.json"), statsCounts(t, ref+"-st.json"); got != want {
		t.Errorf("Kubernetes, simulated: --stats differs from dedup's:\n%s\nwant\n%s", got, want)
	}
	// The same command with --executor local runs nothing and writes the
	// report from what the tasks gathered.
	args := []string{"dedup", "-q", "--executor", "local", "--tasks", "3", "--task-memory", "300MiB", "--work", run + "/work",
		"--clusters", run + "/cl", "-o", run + "/out", "--pairs", run + "/pairs", "--stats", run + "/st.json", "--report", run + ".html", a, b}
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatalf("Kubernetes, simulated: the report: exit %d: %s", code, stderr)
	}
	page, want := readPage(t, run+".html"), readPage(t, ref+".html")
	for _, id := range []string{"summary", "clusters"} {
		if g, w := reportSection(page, id), reportSection(want, id); g != w {
			t.Errorf("Kubernetes, simulated: the report's section %q differs from dedup's:\n%s\nwant\n%s", id, g, w)
		}
	}
	// Printed again (the job resumed), the Jobs have the same names.
	print(run, 3, a, b)
	if again := k8sJobNames(t, run+"/work"); !slices.Equal(again, names) {
		t.Errorf("the same job printed again: Jobs %q, first %q", again, names)
	}

	// The printed script.
	run = filepath.Join(dir, "sh")
	script := filepath.Join(dir, "tasks.sh")
	os.WriteFile(script, []byte(print(run, 2, a, b)), 0o755)
	if out, err := exec.Command("sh", script).CombinedOutput(); err != nil {
		t.Fatalf("the printed script: %v: %s", err, out)
	}
	if got := concatParts(t, run+"/cl", 2); !bytes.Equal(got, wantCl) {
		t.Errorf("the printed script: the clusters differ from dedup's")
	}
	// Another work folder, another job: Jobs of other names, which can
	// share a namespace with the first job's.
	for _, n := range k8sJobNames(t, run+"/work") {
		if slices.Contains(names, n) {
			t.Errorf("the Job %s of the job in %s is also one of the job in %s: %q", n, run, filepath.Join(dir, "k8s$$x$(JOB_COMPLETION_INDEX)"), names)
		}
	}

	// The printed script with a bad record in task 1's shard.
	bad := filepath.Join(dir, "bad.jsonl")
	writeLines(t, bad, append(lines[:20:20], `{"id": broken`))
	run = filepath.Join(dir, "bad")
	os.WriteFile(script, []byte(print(run, 2, a, bad)), 0o755)
	out, err := exec.Command("sh", script).CombinedOutput()
	code := -1
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != ExitInvalidData || !strings.Contains(string(out), "task sign 1 (shard 1: "+bad+"): "+bad+":21") {
		t.Errorf("the printed script with a bad record: exit %d (want %d): %s", code, ExitInvalidData, out)
	}
	if _, err := os.Stat(filepath.Join(run, "work", staged.Marker("sign", 1))); err == nil {
		t.Errorf("a marker for the failed task")
	}
	if _, err := os.Stat(filepath.Join(run, "work", staged.Marker("bucket", 0))); err == nil {
		t.Errorf("the script went on after the failed stage")
	}
}
