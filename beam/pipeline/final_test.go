package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/tempfile"
	"github.com/neardup/neardup/internal/testchild"
)

// TestJoinCollectStreams: a join's documents come in any order; past
// joinFn.Memory their sketches go to a scratch file, which gives them
// back in the documents' (rank) order, each once, and is removed after.
// Under the limit they stay in memory.
func TestJoinCollectStreams(t *testing.T) {
	const n = 500
	recs := make([]joinRec, n)
	for i := range recs {
		recs[i] = joinRec{Rank: int64(3 * i), Len: int64(i), ID: fmt.Sprintf("d%d", i), Sketch: bytes.Repeat([]byte{byte(i)}, 200+i%37)}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	iter := func() func(*joinRec) bool {
		next := 0
		return func(r *joinRec) bool {
			if next == len(recs) {
				return false
			}
			*r = recs[next]
			r.Sketch = bytes.Clone(recs[next].Sketch)
			next++
			return true
		}
	}
	// Held: about 500 x (64 + 4 + 218) bytes; streamed: 500 x (64 + 4).
	for _, mem := range []int64{-1, 1 << 20, 100_000, 40_000} {
		docs, sp, err := (&joinFn{Memory: mem}).collect(iter())
		if err != nil {
			t.Fatal(err)
		}
		if streamed := sp != nil; streamed != (mem == 100_000 || mem == 40_000) {
			t.Fatalf("memory %d: streamed %v", mem, streamed)
		}
		if len(docs) != n {
			t.Fatalf("memory %d: %d documents, want %d", mem, len(docs), n)
		}
		for i, d := range docs {
			want := bytes.Repeat([]byte{byte(i)}, 200+i%37)
			got := d.Sketch
			if sp != nil {
				if got != nil {
					t.Fatalf("memory %d: document %d holds its sketch", mem, i)
				}
				if got, err = sp.next(); err != nil {
					t.Fatal(err)
				}
			}
			if d.Doc != int64(3*i) || d.ID != fmt.Sprintf("d%d", i) || d.Len != i || !bytes.Equal(got, want) {
				t.Fatalf("memory %d: document %d is %+v, sketch %v", mem, i, d, got)
			}
		}
		if sp == nil {
			continue
		}
		if _, err := sp.next(); err == nil {
			t.Errorf("memory %d: a sketch past the last", mem)
		}
		name := sp.f.Name()
		sp.remove()
		if _, err := os.Stat(name); !os.IsNotExist(err) {
			t.Errorf("memory %d: scratch file %s left: %v", mem, name, err)
		}
	}
}

// TestJoinTooLarge: a join that needs more than joinFn.Memory even with
// its sketches streamed fails with ErrJoinTooLarge, naming its largest
// component, the whole join's need and --join-memory, whether it finds
// that out before its scratch file (the Finder's memory alone is too
// much) or while writing it; and leaves no scratch file.
func TestJoinTooLarge(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	const n = 500
	recs := make([]joinRec, n)
	for i := range recs {
		comp := int64(0) // 300 documents, then 100 and 100
		if i >= 400 {
			comp = 1200
		} else if i >= 300 {
			comp = 900
		}
		recs[i] = joinRec{Rank: int64(3 * i), Comp: comp, Len: int64(i), ID: fmt.Sprintf("d%03d", i), Sketch: bytes.Repeat([]byte{byte(i)}, 200)}
	}
	rand.New(rand.NewPCG(3, 4)).Shuffle(n, func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	for _, c := range []struct {
		name    string
		f       joinFn
		need    int64
		scratch bool // the error comes after the scratch file was made
	}{
		// 500 x (64 + 4) = 34,000 bytes streamed, 500 x 268 held.
		{"while streaming", joinFn{Memory: 20_000}, 34_000, true},
		{"the Finder alone", joinFn{Memory: 20_000, streamPer: 1000}, 534_000, false},
		{"sketches held to the end", joinFn{Memory: 100_000, streamSketches: true}, 134_000, false},
	} {
		next := 0
		docs, sp, err := c.f.collect(func(r *joinRec) bool {
			if next == n {
				return false
			}
			*r = recs[next]
			next++
			return true
		})
		if !errors.Is(err, ErrJoinTooLarge) {
			t.Fatalf("%s: docs %d, error %v, want ErrJoinTooLarge", c.name, len(docs), err)
		}
		if next != n {
			t.Errorf("%s: %d of %d documents read", c.name, next, n)
		}
		if (sp != nil) != c.scratch {
			t.Errorf("%s: scratch file %v", c.name, sp != nil)
		}
		sp.remove()
		e := err.(*tooLargeError)
		if e.Docs != n || e.Need != c.need || e.Comp != 0 || e.CompDocs != 300 || e.Memory != c.f.Memory {
			t.Errorf("%s: %+v, want %d documents, need %d, component 0 of 300", c.name, e, n, c.need)
		}
		msg := err.Error()
		for _, want := range []string{"join of 500 documents", "component", "has 300 documents", fmt.Sprintf("about %d bytes", c.need), fmt.Sprintf("--join-memory %d bytes", c.f.Memory), fmt.Sprintf("--join-memory at least %d", c.need), "--join-memory 0"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %q does not say %q", c.name, msg, want)
			}
		}
		left, _ := os.ReadDir(os.TempDir())
		if len(left) != 0 {
			t.Errorf("%s: %d scratch files left", c.name, len(left))
		}
	}
}

// TestSweepScratch: a join's scratch file is named after its process, and
// a worker's sweep removes those of a process that is gone, not its own
// nor other programs' files.
func TestSweepScratch(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	sp, err := newSketchSpool()
	if err != nil {
		t.Fatal(err)
	}
	defer sp.remove()
	mine := filepath.Base(sp.f.Name())
	if want := joinPrefix + tempfile.Tag() + "-"; !strings.HasPrefix(mine, want) || !strings.HasSuffix(mine, joinSuffix) {
		t.Fatalf("scratch file %s, want %s...%s", mine, want, joinSuffix)
	}
	// A process that is gone: a child that has exited.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal("no child process:", err)
	}
	dead := fmt.Sprintf("%d-1", cmd.Process.Pid)
	gone := []string{joinPrefix + dead + "-123" + joinSuffix, parquetPrefix + dead + "-456" + parquetSuffix}
	kept := []string{mine, "neardup-beam-join-other", "unrelated.sketches"}
	for _, name := range append(gone, kept[1:]...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	swept, err := sweepScratch("")
	if err != nil {
		t.Fatal(err)
	}
	if swept.Files != len(gone) {
		t.Errorf("swept %d files (%v), want %d", swept.Files, swept.Names, len(gone))
	}
	checkSwept(t, dir, gone, kept)
}

// checkSwept checks that the files gone are no longer in dir and the files
// kept are.
func checkSwept(t *testing.T, dir string, gone, kept []string) {
	t.Helper()
	for _, name := range gone {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s not swept: %v", name, err)
		}
	}
	for _, name := range kept {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s swept: %v", name, err)
		}
	}
}

// TestJoinSetupSweepsDedupScratch: the dedup package's scratch files that
// a join makes (minhash's shingle sets, component records, sorted runs)
// are removed by a worker's Setup when their process is gone, as the
// worker's own are; those of a process that runs are left alone.
func TestJoinSetupSweepsDedupScratch(t *testing.T) {
	testchild.NeedProc(t)
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal("no child process:", err)
	}
	dead := fmt.Sprintf("%d-1", cmd.Process.Pid)
	// A process that runs: this test's parent, with its start time.
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", os.Getppid()))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	live := fmt.Sprintf("%d-%s", os.Getppid(), fields[19])
	gone := []string{"neardup-sets-" + dead + "-11.bin", "neardup-sigs-" + dead + "-12.bin", "neardup-run-" + dead + "-13.bin"}
	kept := []string{"neardup-sets-" + live + "-21.bin", "neardup-run-" + live + "-22.bin"}
	for _, name := range append(slices.Clone(gone), kept...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sweepScratchOnce = sync.OnceFunc(func() { sweepScratch("") }) // this process's first Setup
	if err := (&joinFn{Cfg: dedup.Options{}}).Setup(); err != nil {
		t.Fatal(err)
	}
	checkSwept(t, dir, gone, kept) // gone: a dead process's; kept: a live one's
}
