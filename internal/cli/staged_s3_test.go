package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/internal/human"
	"github.com/neardup/neardup/internal/objstore"
	"github.com/neardup/neardup/internal/objstoretest"
	"github.com/neardup/neardup/internal/smallfs"
	"github.com/neardup/neardup/internal/staged"
)

// taskKillReadEnv makes the task named by its value
// ("STAGE:INDEX:N:FLAGFILE") kill itself with SIGKILL when it has read N
// input documents, once (while FLAGFILE is absent): in the middle of its
// reads and of the uploads they feed.
const taskKillReadEnv = "NEARDUP_TEST_TASK_KILL_READ"

func init() {
	v := os.Getenv(taskKillReadEnv)
	if v == "" || os.Getenv(taskChildEnv) == "" || len(os.Args) < 3 {
		return
	}
	parts := strings.SplitN(v, ":", 4)
	n, err := strconv.ParseInt(parts[2], 10, 64)
	stage, index := os.Args[len(os.Args)-2], os.Args[len(os.Args)-1]
	if len(parts) != 4 || err != nil || stage != parts[0] || index != parts[1] {
		return
	}
	var read int64
	staged.AfterRead = func(string, int64) {
		if read++; read != n {
			return
		}
		if _, err := os.Stat(parts[3]); err != nil {
			os.WriteFile(parts[3], nil, 0o644)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
}

// stagedCorpus writes 700 generated documents into dir as a.jsonl (300),
// b.jsonl.gz (200) and c.parquet (200), and returns their contents by
// name.
func stagedCorpus(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	lines := genCorpus(t, 26, 700)
	writeLines(t, filepath.Join(dir, "a.jsonl"), lines[:300])
	writeLines(t, filepath.Join(dir, "b.jsonl.gz"), lines[300:500])
	src := filepath.Join(t.TempDir(), "c.jsonl")
	writeLines(t, src, lines[500:])
	rd, err := corpus.Open(src, corpus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := corpus.Create(filepath.Join(dir, "c.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for rd.Next() {
		if err := w.Write(rd.Doc()); err != nil {
			t.Fatal(err)
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	rd.Close()
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, n := range []string{"a.jsonl", "b.jsonl.gz", "c.parquet"} {
		files[n] = mustRead(t, filepath.Join(dir, n))
	}
	return files
}

// openFolder opens the folder url until the test ends.
func openFolder(t *testing.T, url string) *objstore.Folder {
	t.Helper()
	f, err := objstore.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// putObjects uploads files under the folder url.
func putObjects(t *testing.T, url string, files map[string][]byte) {
	t.Helper()
	f := openFolder(t, url)
	for n, b := range files {
		if err := f.PutBytes(context.Background(), n, b); err != nil {
			t.Fatal(err)
		}
	}
}

// objectNames lists the names under the folder url.
func objectNames(t *testing.T, url string) []string {
	t.Helper()
	names, err := openFolder(t, url).List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// concatObjects concatenates the part-* objects of the folder url in name
// order; it fails on any other object (a partial or temporary one).
func concatObjects(t *testing.T, url string, want int) []byte {
	t.Helper()
	ctx := context.Background()
	f := openFolder(t, url)
	names := objectNames(t, url)
	var b []byte
	for k, n := range names {
		if n != staged.PartName(k) {
			t.Fatalf("%s: unexpected object %s among %q", url, n, names)
		}
		p, err := f.ReadAll(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, p...)
	}
	if len(names) != want {
		t.Fatalf("%s: %d parts, want %d", url, len(names), want)
	}
	return b
}

// readObject reads the object url.
func readObject(t *testing.T, url string) []byte {
	t.Helper()
	r, err := objstore.OpenURL(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// objectStores starts the S3 server and the GCS emulator, each in its
// subtest, and returns a fresh bucket's URL.
var objectStores = map[string]func(t *testing.T) string{
	"s3": func(t *testing.T) string {
		s := objstoretest.S3(t)
		s.Env(t)
		return "s3://" + s.Bucket(t)
	},
	"gcs": func(t *testing.T) string {
		s := objstoretest.GCS(t)
		s.Env(t)
		return "gs://" + s.Bucket(t)
	},
}

// stagedReference runs plain neardup dedup on the local dir and returns
// its clusters, kept records and stats counts.
func stagedReference(t *testing.T, dir string, flags ...string) (cl, out []byte, stats string) {
	t.Helper()
	ref := t.TempDir()
	args := append([]string{"dedup", "-q", "-j", "2", "--clusters", ref + "/cl.jsonl", "-o", ref + "/out.jsonl", "--stats", ref + "/st.json"}, flags...)
	if code, _, stderr := runCLI(append(args, dir)...); code != 0 {
		t.Fatalf("dedup: exit %d: %s", code, stderr)
	}
	cl, out = mustRead(t, ref+"/cl.jsonl"), mustRead(t, ref+"/out.jsonl")
	if bytes.Count(cl, []byte(`"kept":false`)) == 0 {
		t.Fatal("no duplicates in the test corpus")
	}
	return cl, out, statsCounts(t, ref+"/st.json")
}

// TestStagedObjectStorage: inputs (JSONL, gzipped JSONL, Parquet), the
// work folder and the outputs on the S3 server and on the GCS emulator;
// the concatenated outputs are plain dedup's on the same files, byte for
// byte, and so are plain dedup's own outputs read from the bucket; the
// staged job's --report shows dedup's example clusters.
func TestStagedObjectStorage(t *testing.T) {
	stagedEnv(t)
	for name, start := range objectStores {
		t.Run(name, func(t *testing.T) {
			bucket := start(t)
			dir := t.TempDir()
			putObjects(t, bucket+"/in", stagedCorpus(t, dir))
			reports := t.TempDir()
			wantCl, wantOut, _ := stagedReference(t, dir)
			// The stats of dedup with --report: with it both runs write
			// the report's example clusters into --stats.
			if code, _, stderr := runCLI("dedup", "-q", "-j", "2", "--report", reports+"/want.html", "--stats", reports+"/want-st.json", dir); code != 0 {
				t.Fatalf("dedup --report: exit %d: %s", code, stderr)
			}
			began := time.Now()
			args := []string{"dedup", "-q", "--executor", "local", "--tasks", "3", "-j", "2", "--work", bucket + "/work",
				"--clusters", bucket + "/cl", "-o", bucket + "/out", "--stats", bucket + "/st.json", "--report", reports + "/got.html", bucket + "/in"}
			if code, _, stderr := runCLI(args...); code != 0 {
				t.Fatalf("staged: exit %d: %s", code, stderr)
			}
			t.Logf("staged dedup, 700 documents, 3 tasks, all on %s: %v", name, time.Since(began).Round(time.Millisecond))
			if got := concatObjects(t, bucket+"/cl", 3); !bytes.Equal(got, wantCl) {
				t.Errorf("the clusters differ from dedup's")
			}
			if got := concatObjects(t, bucket+"/out", 3); !bytes.Equal(got, wantOut) {
				t.Errorf("the kept documents differ from dedup's")
			}
			st := filepath.Join(t.TempDir(), "st.json")
			os.WriteFile(st, readObject(t, bucket+"/st.json"), 0o644)
			if got, wantSt := statsCounts(t, st), statsCounts(t, reports+"/want-st.json"); got != wantSt {
				t.Errorf("stats differ:\n%s\nwant\n%s", got, wantSt)
			}
			got, want := reportSection(readPage(t, reports+"/got.html"), "clusters"), reportSection(readPage(t, reports+"/want.html"), "clusters")
			if got != want || !strings.Contains(want, "kept</span>") {
				t.Errorf("the report's example clusters differ from dedup's:\n%s\nwant\n%s", got, want)
			}
			// Plain dedup reading the bucket (Parquet through a local copy).
			if code, _, stderr := runCLI("dedup", "-q", "-j", "2", "--clusters", bucket+"/plain/cl.jsonl", "-o", bucket+"/plain/out.jsonl", bucket+"/in"); code != 0 {
				t.Fatalf("dedup of the bucket: exit %d: %s", code, stderr)
			}
			if got := readObject(t, bucket+"/plain/cl.jsonl"); !bytes.Equal(got, wantCl) {
				t.Errorf("plain dedup of the bucket: the clusters differ from those of the local files")
			}
			if got := readObject(t, bucket+"/plain/out.jsonl"); !bytes.Equal(got, wantOut) {
				t.Errorf("plain dedup of the bucket: the kept documents differ from those of the local files")
			}
			// One file of many gzip members cut into 3 shards: the ranges
			// inside it start at restart points, with ranged reads.
			restartEvery(t, 3000)
			one := filepath.Join(t.TempDir(), "one.jsonl.gz")
			writePieces(t, one, genCorpus(t, 27, 400), 5000)
			gz, _ := os.ReadFile(one)
			putObjects(t, bucket+"/one", map[string][]byte{"one.jsonl.gz": gz})
			ref := t.TempDir()
			if code, _, stderr := runCLI("dedup", "-q", "-j", "2", "--clusters", ref+"/cl.jsonl", one); code != 0 {
				t.Fatalf("dedup: exit %d: %s", code, stderr)
			}
			if code, _, stderr := runCLI("dedup", "-q", "--executor", "local", "--tasks", "3", "-j", "2", "--work", bucket+"/work-one",
				"--clusters", bucket+"/cl-one", bucket+"/one/one.jsonl.gz"); code != 0 {
				t.Fatalf("staged, one file: exit %d: %s", code, stderr)
			}
			wantOne, _ := os.ReadFile(ref + "/cl.jsonl")
			if got := concatObjects(t, bucket+"/cl-one", 3); !bytes.Equal(got, bytes.ReplaceAll(wantOne, []byte(one), []byte(bucket+"/one/one.jsonl.gz"))) {
				t.Errorf("one file: the clusters differ from dedup's")
			}
			if plan := readObject(t, bucket+"/work-one/"+staged.PlanName); bytes.Count(plan, []byte(`"compression": "gzip"`)) != 2 {
				t.Errorf("one file: want 2 ranges at restart points in the plan:\n%s", plan)
			}
		})
	}
}

// TestStagedObjectStorageKill: on the S3 server, a task killed with
// SIGKILL in the middle of its reads and uploads (sign, write) or before
// its marker (join) fails the job with an error naming the stage, the
// task, its shard and the URLs, and leaves neither its marker nor its
// unfinished objects; the same command again completes with plain
// dedup's outputs, and the bucket holds exactly the objects of a run that
// was never killed.
func TestStagedObjectStorageKill(t *testing.T) {
	stagedEnv(t)
	bucket := objectStores["s3"](t)
	dir := t.TempDir()
	putObjects(t, bucket+"/in", stagedCorpus(t, dir))
	wantCl, wantOut, _ := stagedReference(t, dir)
	run := func(name string) (int, string) {
		// Four tasks for three files: the plan counts the documents and
		// cuts within files, so shard 1 streams across two of them.
		args := []string{"dedup", "-q", "--executor", "local", "--tasks", "4", "-j", "2", "--work", bucket + "/" + name + "/work",
			"--clusters", bucket + "/" + name + "/cl", "-o", bucket + "/" + name + "/out", bucket + "/in"}
		code, _, stderr := runCLI(args...)
		return code, stderr
	}
	began := time.Now()
	if code, stderr := run("clean"); code != 0 {
		t.Fatalf("clean run: exit %d: %s", code, stderr)
	}
	t.Logf("clean run: %v", time.Since(began).Round(time.Millisecond))
	clean := objectNames(t, bucket+"/clean")
	for _, c := range []struct {
		stage string
		env   string
		value string
		gone  []string // objects the killed task had not finished
		what  string   // what the error says the task worked on
	}{
		// Sign task 1 reads a.jsonl from document 175: killed at its
		// 250th read, while its ids and sketches stream to S3.
		{"sign", taskKillReadEnv, "sign:1:250:", []string{"work/sign/00001/ids", "work/sign/00001/sketches", "work/sign/00001/meta.json"},
			"; shard 1: " + bucket + "/in/a.jsonl documents 175-300, " + bucket + "/in/b.jsonl.gz documents 0-50, work folder " + bucket + "/sign/work; log: "},
		// Write task 1 has put its clusters part, and is killed while
		// it reads its shard again for the kept records.
		{"write", taskKillReadEnv, "write:1:250:", []string{"out/part-00001.jsonl", "work/write/00001.json"},
			"; shard 1: " + bucket + "/in/a.jsonl documents 175-300"},
		{"join", taskCrashEnv, "join:1:", nil, "; work folder " + bucket + "/join/work; log: "},
	} {
		t.Run(c.stage, func(t *testing.T) {
			t.Setenv(c.env, c.value+filepath.Join(t.TempDir(), "killed"))
			began := time.Now()
			code, stderr := run(c.stage)
			if code != ExitFailure {
				t.Fatalf("the job with a killed task: exit %d, want %d: %s", code, ExitFailure, stderr)
			}
			t.Logf("killed: exit %d: %s", code, stderr)
			if want := "stage " + c.stage + ", task 1 failed (signal: killed)" + c.what; !strings.Contains(stderr, want) {
				t.Errorf("the error does not say %q:\n%s", want, stderr)
			}
			names := objectNames(t, bucket+"/"+c.stage)
			for _, n := range append([]string{"work/" + staged.Marker(c.stage, 1)}, c.gone...) {
				if slices.Contains(names, n) {
					t.Errorf("%s is there after the task was killed", n)
				}
			}
			killed := time.Since(began)
			began = time.Now()
			if code, stderr := run(c.stage); code != 0 {
				t.Fatalf("rerun: exit %d: %s", code, stderr)
			}
			t.Logf("killed run %v, rerun %v", killed.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
			if got := concatObjects(t, bucket+"/"+c.stage+"/cl", 4); !bytes.Equal(got, wantCl) {
				t.Errorf("clusters differ after the resume")
			}
			if got := concatObjects(t, bucket+"/"+c.stage+"/out", 4); !bytes.Equal(got, wantOut) {
				t.Errorf("kept documents differ after the resume")
			}
			if got := objectNames(t, bucket+"/"+c.stage); !slices.Equal(got, clean) {
				t.Errorf("objects after the kill and the rerun differ from a clean run's:\n%q\nwant\n%q", got, clean)
			}
		})
	}
}

// TestStagedObjectStorageErrors: a missing input object, a bad record, a
// missing output bucket and an unreachable endpoint, each an error naming
// the task (when there is one), its shard and the URL, with the
// documented exit code, and no marker for a task that failed.
func TestStagedObjectStorageErrors(t *testing.T) {
	stagedEnv(t)
	bucket := objectStores["s3"](t)
	lines := genCorpus(t, 3, 100)
	dir := t.TempDir()
	writeLines(t, dir+"/a.jsonl", lines[:50])
	writeLines(t, dir+"/b.jsonl", lines[50:])
	putObjects(t, bucket+"/in", map[string][]byte{"a.jsonl": mustRead(t, dir+"/a.jsonl"), "b.jsonl": mustRead(t, dir+"/b.jsonl")})
	marker := func(work, stage string, i int) bool {
		t.Helper()
		return slices.Contains(objectNames(t, work), staged.Marker(stage, i))
	}

	t.Run("missing input", func(t *testing.T) {
		work := bucket + "/w1"
		args := []string{"dedup", "-q", "--tasks", "2", "--work", work, "--clusters", bucket + "/cl1", bucket + "/in"}
		if code, _, stderr := runCLI(append([]string{"--executor", "print"}, args...)...); code != 0 {
			t.Fatalf("print: exit %d: %s", code, stderr)
		}
		f := openFolder(t, bucket+"/in")
		if err := f.Delete(context.Background(), "b.jsonl"); err != nil {
			t.Fatal(err)
		}
		defer f.PutBytes(context.Background(), "b.jsonl", mustRead(t, dir+"/b.jsonl"))
		code, _, stderr := runCLI("task", "--work", work, "sign", "1")
		t.Logf("task, input gone: exit %d: %s", code, stderr)
		if code != ExitFailure || !strings.Contains(stderr, "task sign 1 (shard 1: "+bucket+"/in/b.jsonl): open "+bucket+"/in/b.jsonl: file does not exist") {
			t.Errorf("task with its input gone: exit %d: %s", code, stderr)
		}
		if marker(work, "sign", 1) {
			t.Errorf("a marker for the failed task")
		}
		code, _, stderr = runCLI(append([]string{"--executor", "local"}, args...)...)
		t.Logf("job again, input gone: exit %d: %s", code, stderr)
		if code != ExitUsage || !strings.Contains(stderr, bucket+"/in/b.jsonl: an input of the job planned in "+work+"/plan.json is gone") {
			t.Errorf("the job again with an input gone: exit %d: %s", code, stderr)
		}
	})

	t.Run("bad record", func(t *testing.T) {
		putObjects(t, bucket+"/bad", map[string][]byte{"a.jsonl": mustRead(t, dir+"/a.jsonl"),
			"b.jsonl": []byte(strings.Join(lines[50:60], "\n") + "\n{\"id\": broken\n")})
		work := bucket + "/w2"
		code, _, stderr := runCLI("dedup", "-q", "--executor", "local", "--tasks", "2", "--work", work, "--clusters", bucket+"/cl2", bucket+"/bad")
		t.Logf("bad record: exit %d: %s", code, stderr)
		shard := "shard 1: " + bucket + "/bad/b.jsonl" // two files, two tasks: a file each
		want := []string{"stage sign, task 1 failed (exit status 3); " + shard + ", work folder " + work + "; log: ",
			"task sign 1 (" + shard + "): " + bucket + "/bad/b.jsonl:11 (offset 6"}
		for _, w := range want {
			if code != ExitFailure || !strings.Contains(stderr, w) {
				t.Errorf("bad record: exit %d, want %d and %q: %s", code, ExitFailure, w, stderr)
			}
		}
		if marker(work, "sign", 1) || !marker(work, "sign", 0) {
			t.Errorf("markers: want sign 0's, not sign 1's: %q", objectNames(t, work))
		}
	})

	t.Run("missing bucket", func(t *testing.T) {
		work := bucket + "/w3"
		code, _, stderr := runCLI("dedup", "-q", "--executor", "local", "--tasks", "2", "--work", work, "--clusters", "s3://no-such-bucket-26/cl", bucket+"/in")
		t.Logf("missing output bucket: exit %d: %s", code, stderr)
		if code != ExitFailure || !strings.Contains(stderr, `--clusters: s3://no-such-bucket-26/cl: bucket "no-such-bucket-26" does not exist`) {
			t.Errorf("missing output bucket: exit %d: %s", code, stderr)
		}
		if names := objectNames(t, work); len(names) > 0 {
			t.Errorf("the job was planned nonetheless: %q", names)
		}
		// --pairs too (it failed its write tasks, after every other
		// stage).
		code, _, stderr = runCLI("dedup", "-q", "--executor", "local", "--tasks", "2", "--work", work, "--pairs", "s3://no-such-bucket-26/p", bucket+"/in")
		if code != ExitFailure || !strings.Contains(stderr, `--pairs: s3://no-such-bucket-26/p: bucket "no-such-bucket-26" does not exist`) {
			t.Errorf("missing --pairs bucket: exit %d: %s", code, stderr)
		}
		if names := objectNames(t, work); len(names) > 0 {
			t.Errorf("the job was planned nonetheless: %q", names)
		}
		code, _, stderr = runCLI("dedup", "-q", "--executor", "local", "--tasks", "2", "--work", "s3://no-such-bucket-26/w", "--clusters", bucket+"/cl3", bucket+"/in")
		if code != ExitFailure || !strings.Contains(stderr, `s3://no-such-bucket-26/w: bucket "no-such-bucket-26" does not exist`) {
			t.Errorf("missing work bucket: exit %d: %s", code, stderr)
		}
	})

	t.Run("unreachable endpoint", func(t *testing.T) {
		work := bucket + "/w4"
		if code, _, stderr := runCLI("dedup", "-q", "--executor", "print", "--tasks", "2", "--work", work, "--clusters", bucket+"/cl4", bucket+"/in"); code != 0 {
			t.Fatalf("print: exit %d: %s", code, stderr)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://" + l.Addr().String()
		l.Close()
		t.Setenv("AWS_ENDPOINT_URL_S3", dead)
		want := "cannot reach the S3 endpoint " + dead + " (AWS_ENDPOINT_URL_S3)"
		began := time.Now()
		code, _, stderr := runCLI("task", "--work", work, "sign", "1")
		t.Logf("task, endpoint unreachable: exit %d: %s", code, stderr)
		if code != ExitFailure || !strings.Contains(stderr, "task sign 1: "+work+": "+want) {
			t.Errorf("a task with its endpoint unreachable: exit %d: %s", code, stderr)
		}
		if d := time.Since(began); d > 30*time.Second {
			t.Errorf("the task took %v to give up", d)
		}
		code, _, stderr = runCLI("dedup", "-q", "--executor", "local", "--tasks", "2", "--work", work, "--clusters", bucket+"/cl4", bucket+"/in")
		t.Logf("job, endpoint unreachable: exit %d: %s", code, stderr)
		if code != ExitFailure || !strings.Contains(stderr, want) || !strings.Contains(stderr, bucket) {
			t.Errorf("the job with its endpoint unreachable: exit %d: %s", code, stderr)
		}
	})
}

// TestStagedWorkDiskFull: the work folder on a 512 KiB tmpfs fills up
// in the sign stage (about 200 bytes a document: its band keys and ids): the
// job fails with exit 1 and an error naming the task, its shard and the
// file it could not write, the task that failed leaves no marker and no
// temporary file, and nothing says the job is done.
func TestStagedWorkDiskFull(t *testing.T) {
	stagedEnv(t)
	mnt := smallfs.Mount(t, 512<<10)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeLines(t, in, genCorpus(t, 5, 3000))
	work := filepath.Join(mnt, "work")
	code, _, stderr := runCLI("dedup", "--executor", "local", "--tasks", "3", "-j", "2", "--work", work, "--clusters", dir+"/cl", in)
	if code != ExitFailure {
		t.Fatalf("exit %d, want %d: %s", code, ExitFailure, stderr)
	}
	t.Logf("full work disk: exit %d: %s", code, stderr)
	m := regexp.MustCompile(`stage sign, task (\d) failed \(exit status 1\); shard \d: ` + in + ` documents \d+-\d+, work folder ` + work + `; log: \S+( \(incomplete: [^)]*\))?\n  neardup: task sign \d \(shard \d: ` + in + ` documents \d+-\d+\): write ` + work + `/sign/0000\d/\S+: .*no space left on device`)
	got := m.FindStringSubmatch(stderr)
	if got == nil {
		t.Fatalf("the error does not name the task, its shard, the file and the cause:\n%s", stderr)
	}
	if strings.Contains(stderr, "done") {
		t.Errorf("a full disk reported as done:\n%s", stderr)
	}
	task, _ := strconv.Atoi(got[1])
	if _, err := os.Stat(filepath.Join(work, staged.Marker("sign", task))); err == nil {
		t.Errorf("the failed task left its marker")
	}
	filepath.WalkDir(work, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("a temporary file is left: %s", p)
		}
		return nil
	})
	// A task's marker is its commit: a task whose marker could not be
	// written (the disk full by then) may have written its meta.json,
	// which a run again replaces; a file without its marker is not read.
	// So only the markers say which tasks are done, and none may be for
	// the failed task (above).
}

// TestStagedObjectChanged: an input object on S3 or GCS cut into shards
// that start at restart points, rewritten (a line put before the others)
// between the plan and the tasks: the resumed job's sign task refuses it,
// naming the object and both sizes, as a local file's is refused, with no
// marker for the task. Before, only local files were checked: the task
// read the new object from the old byte offsets (the middle of a line)
// and failed on a bad record that the input does not have.
func TestStagedObjectChanged(t *testing.T) {
	stagedEnv(t)
	restartEvery(t, 1000)
	for name, start := range objectStores {
		t.Run(name, func(t *testing.T) {
			bucket := start(t)
			lines := genCorpus(t, 28, 300)
			data := []byte(strings.Join(lines, "\n") + "\n")
			in := bucket + "/in/a.jsonl"
			putObjects(t, bucket+"/in", map[string][]byte{"a.jsonl": data})
			args := []string{"dedup", "-q", "--executor", "print", "--tasks", "3", "--work", bucket + "/work", "--clusters", bucket + "/cl", in}
			if code, _, stderr := runCLI(args...); code != 0 {
				t.Fatalf("print: exit %d: %s", code, stderr)
			}
			if plan := readObject(t, bucket+"/work/"+staged.PlanName); !bytes.Contains(plan, []byte(`"size": `+strconv.Itoa(len(data)))) {
				t.Fatalf("no restart point with the object's size (%d) in the plan:\n%s", len(data), plan)
			}
			changed := append([]byte(`{"id":"new","text":"a line before the others"}`+"\n"), data...)
			putObjects(t, bucket+"/in", map[string][]byte{"a.jsonl": changed})
			args[3] = "local"
			code, _, stderr := runCLI(append(args, "-j", "1")...)
			want := regexp.MustCompile(regexp.QuoteMeta(in+": "+human.Number(len(changed))+" bytes, where it had "+human.Number(len(data))) + ".*the file changed since then")
			if code != ExitFailure || !want.MatchString(stderr) {
				t.Fatalf("the job resumed on a changed input: exit %d (want %d), want %q in: %s", code, ExitFailure, want, stderr)
			}
			if ok, err := openFolder(t, bucket+"/work").Exists(context.Background(), staged.Marker("sign", 1)); err != nil || ok {
				t.Errorf("a marker for sign 1 on a changed input (%v)", err)
			}
		})
	}
}

// TestStagedObjectSizes: an input of at least --tasks objects on S3 or
// GCS is cut between objects by their sizes, as local files are: one
// object of 300 documents then three of 20, in 2 tasks, gives the large
// object a shard of its own. Before, objects counted as equal: 2 of them
// a shard, the large one with a small one.
func TestStagedObjectSizes(t *testing.T) {
	stagedEnv(t)
	for name, start := range objectStores {
		t.Run(name, func(t *testing.T) {
			bucket := start(t)
			lines := genCorpus(t, 29, 360)
			objects := map[string][]byte{"a.jsonl": []byte(strings.Join(lines[:300], "\n") + "\n")}
			for k, n := range []string{"b.jsonl", "c.jsonl", "d.jsonl"} {
				objects[n] = []byte(strings.Join(lines[300+20*k:320+20*k], "\n") + "\n")
			}
			putObjects(t, bucket+"/in", objects)
			if code, _, stderr := runCLI("dedup", "-q", "--executor", "print", "--tasks", "2", "--work", bucket+"/work", "--clusters", bucket+"/cl", bucket+"/in"); code != 0 {
				t.Fatalf("print: exit %d: %s", code, stderr)
			}
			var plan staged.Plan
			if err := json.Unmarshal(readObject(t, bucket+"/work/"+staged.PlanName), &plan); err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for _, rs := range plan.Shards {
				var files []string
				for _, rg := range rs {
					files = append(files, strings.TrimPrefix(rg.File, bucket+"/in/"))
				}
				got = append(got, files)
			}
			if want := [][]string{{"a.jsonl"}, {"b.jsonl", "c.jsonl", "d.jsonl"}}; !reflect.DeepEqual(got, want) {
				t.Errorf("shards %q, want %q (cut by the objects' sizes)", got, want)
			}
		})
	}
}

// TestStagedInputRewritten: an input written again with the same size
// (one letter changed) between the sign tasks and the later stages that
// read the input again (scatter, write) is refused by the first of them
// that opens it, on a local disk (its modification time), S3 (its ETag)
// and GCS (its generation), whether the plan counted its documents (one
// file, a range of it read from a restart point) or cut the input
// between files by their sizes (files read whole): the error names the
// file and what changed, exit 1, as for a changed size (the files cut by
// sizes are named by their folder: on S3 and GCS the plan takes their
// versions from its listing). Before, a file
// read whole recorded nothing, and a range checked only the size: the
// job went on with documents the sign stage had not seen.
func TestStagedInputRewritten(t *testing.T) {
	stagedEnv(t)
	restartEvery(t, 1000)
	stores := map[string]func(t *testing.T) string{"local": func(t *testing.T) string { return t.TempDir() }}
	for name, start := range objectStores {
		stores[name] = start
	}
	what := map[string]string{"local": "modification time", "s3": "ETag", "gcs": "generation"}
	for name, start := range stores {
		for _, files := range []int{1, 2} { // counted, cut by sizes
			t.Run(fmt.Sprintf("%s/%d", name, files), func(t *testing.T) {
				loc := start(t)
				lines := genCorpus(t, 30, 200)
				inputs := map[string][]byte{}
				var args []string
				for k := range files {
					n := fmt.Sprintf("%c.jsonl", 'a'+k)
					per := len(lines) / files
					inputs[n] = []byte(strings.Join(lines[per*k:per*(k+1)], "\n") + "\n")
					args = append(args, loc+"/in/"+n)
				}
				put := func(files map[string][]byte) {
					if name != "local" {
						putObjects(t, loc+"/in", files)
						return
					}
					os.MkdirAll(loc+"/in", 0o755)
					for n, b := range files {
						if err := os.WriteFile(loc+"/in/"+n, b, 0o644); err != nil {
							t.Fatal(err)
						}
						// An hour ago: the rewrite below, within the same
						// clock tick, would otherwise keep the time.
						old := time.Now().Add(-time.Hour)
						os.Chtimes(loc+"/in/"+n, old, old)
					}
				}
				if files == 2 {
					// The prefix: an object store's listing gives the
					// objects' versions (corpus.Expansion.Versions).
					args = []string{loc + "/in"}
				}
				put(inputs)
				work := loc + "/work"
				args = append([]string{"dedup", "-q", "--executor", "print", "--tasks", "2", "--work", work, "-o", loc + "/kept"}, args...)
				if code, _, stderr := runCLI(args...); code != 0 {
					t.Fatalf("print: exit %d: %s", code, stderr)
				}
				var plan staged.Plan
				b, err := openFolder(t, work).ReadAll(context.Background(), staged.PlanName)
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(b, &plan); err != nil {
					t.Fatal(err)
				}
				for _, rs := range plan.Shards {
					for _, rg := range rs {
						if rg.Version == nil || rg.Version.Tag == "" {
							t.Fatalf("range %+v has no version", rg)
						}
					}
				}
				for i := range 2 {
					if code, _, stderr := runCLI("task", "--work", work, "sign", fmt.Sprint(i)); code != 0 {
						t.Fatalf("sign %d: exit %d: %s", i, code, stderr)
					}
				}
				changed := bytes.Replace(inputs["a.jsonl"], []byte("the"), []byte("thx"), 1)
				if bytes.Equal(changed, inputs["a.jsonl"]) {
					t.Fatal("no same-size change")
				}
				if name == "local" {
					// Written again now, not an hour ago.
					if err := os.WriteFile(loc+"/in/a.jsonl", changed, 0o644); err != nil {
						t.Fatal(err)
					}
				} else {
					put(map[string][]byte{"a.jsonl": changed})
				}
				args[3] = "local"
				code, _, stderr := runCLI(append(args, "-j", "1")...)
				in := loc + "/in/a.jsonl"
				if code != ExitFailure || !strings.Contains(stderr, in+": its "+what[name]+" is ") || !strings.Contains(stderr, "the file was written again since then, with the same size (a staged job's input must not change until the job is done)") {
					t.Fatalf("the job went on with a rewritten input: exit %d (want %d), want %s's %s named in: %s", code, ExitFailure, in, what[name], stderr)
				}
				for i := range 2 {
					if ok, err := openFolder(t, work).Exists(context.Background(), staged.Marker("write", i)); err != nil || ok {
						t.Errorf("a marker for write %d on a rewritten input (%v)", i, err)
					}
				}
			})
		}
	}
}
