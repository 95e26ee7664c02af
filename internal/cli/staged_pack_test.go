package cli

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/neardup/neardup/internal/staged"
)

// workObjects lists the files of a local work folder by stage (the first
// part of their names).
func workObjects(t *testing.T, work string) (all []string, by map[string]int) {
	t.Helper()
	by = map[string]int{}
	err := filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(work, p)
		rel = filepath.ToSlash(rel)
		all = append(all, rel)
		by[strings.SplitN(rel, "/", 2)[0]]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return all, by
}

// TestStagedWorkObjects: the work folder of a job of N tasks holds O(N)
// objects: per stage a fixed number a task (a sign task one more a run it
// spilled), none of the N x N files of plan version 5 (one file a
// producing and a consuming task).
func TestStagedWorkObjects(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeLines(t, in, genCorpus(t, 5, 600))
	for _, n := range []int{4, 12} {
		run := filepath.Join(dir, fmt.Sprint(n))
		work := run + "/work"
		args := []string{"dedup", "-q", "--executor", "local", "--tasks", fmt.Sprint(n), "-j", "2", "--work", work, "--task-spill", "4KB",
			"--clusters", run + "/cl", "-o", run + "/out", "--pairs", run + "/pairs", "--stats", run + "/st.json", in}
		if code, _, stderr := runCLI(args...); code != 0 {
			t.Fatalf("%d tasks: exit %d: %s", n, code, stderr)
		}
		all, by := workObjects(t, work)
		runs := 0
		for _, name := range all {
			if regexp.MustCompile(`^sign/\d{5}/buckets(\.\d+)?$`).MatchString(name) {
				runs++
			}
		}
		if runs <= n {
			t.Errorf("%d tasks: %d sign runs: no sign task spilled (the test wants runs)", n, runs)
		}
		want := map[string]int{
			"sign":       2*n + runs, // ids, meta.json, a pack a run (no sketches: see below)
			"bucket":     2 * n,      // edges, duplicate ids
			"components": n + 2,      // a file a shard, meta.json, shards.json
			"scatter":    n,          // a pack a task
			"join":       2 * n,      // a pack, stats.json
			"write":      n,          // meta
			"finish":     2,          // stats.json, ids_from_position.json
			"done":       5*n + 2,    // markers
			"usage":      5*n + 2,    // what each task used
			"plan.json":  1,
			"usage.json": 1,
		}
		for stage, c := range by {
			if c != want[stage] && !(stage == "logs" && c == 5*n+2) {
				t.Errorf("%d tasks: %d files under %s/, want %d", n, c, stage, want[stage])
			}
		}
		if len(all) > 30*n+runs+8 {
			t.Errorf("%d tasks: %d files in the work folder, more than O(N)", n, len(all))
		}
		t.Logf("%d tasks: %d files (%d sign runs): %v", n, len(all), runs, by)
		// Sign keeps no shingle sets (the scatter sketches the documents
		// of components again): about 200 bytes a document (13 band keys
		// of 12 bytes, the id twice), where the sets alone were 8 bytes a
		// shingle, some 800 bytes a document of this corpus, and the
		// sketches' band keys and slots 360 more.
		var signBytes int64
		for _, name := range all {
			if strings.HasPrefix(name, "sign/") {
				fi, err := os.Stat(filepath.Join(work, name))
				if err != nil {
					t.Fatal(err)
				}
				signBytes += fi.Size()
			}
		}
		if per := signBytes / 600; per > 300 {
			t.Errorf("%d tasks: sign wrote %d bytes, %d a document: more than its keys and ids (shingle sets again?)", n, signBytes, per)
		} else {
			t.Logf("%d tasks: sign wrote %d bytes, %d a document", n, signBytes, per)
		}
	}
}

// TestStagedPackDamaged: a pack cut short, with a byte changed, or with
// its index changed fails the task that reads it with an error naming the
// task, the object and the section, never a panic or a silent loss.
func TestStagedPackDamaged(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeLines(t, in, genCorpus(t, 6, 400))
	work := dir + "/work"
	args := []string{"dedup", "-q", "--executor", "local", "--tasks", "3", "-j", "2", "--work", work,
		"--clusters", dir + "/cl", "--pairs", dir + "/pairs", in}
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, c := range []struct {
		name   string
		pack   string
		damage func([]byte) []byte
		task   []string // the task that reads it
		want   string
	}{
		{"cut short", "scatter/00001", func(b []byte) []byte { return b[:len(b)-5] }, []string{"join", "0"}, "damaged work file: no pack trailer"},
		{"a byte added", "scatter/00001", func(b []byte) []byte { return append([]byte{0}, b...) }, []string{"join", "0"}, "damaged work file: its sections end at byte"},
		{"a byte changed", "sign/00000/buckets", func(b []byte) []byte { b[3] ^= 1; return b }, []string{"bucket", "0"}, "(section 0 of 7): damaged work file: the section's CRC32C is"},
		// The shard's counts, run 0's last section (7 sections: an index
		// of 7*12+16 bytes after it), read with the index.
		{"counts changed", "sign/00001/buckets", func(b []byte) []byte { b[len(b)-101] ^= 1; return b }, []string{"bucket", "2"}, "damaged work file: its counts' CRC32C does not match"},
		{"index changed", "join/00000/shards", func(b []byte) []byte { b[len(b)-20] ^= 1; return b }, []string{"write", "0"}, "damaged work file: the index's CRC32C does not match"},
		{"empty", "join/00000/shards", func(b []byte) []byte { return nil }, []string{"write", "0"}, "damaged work file: 0 bytes, shorter than a pack's trailer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(work, c.pack)
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(path, good, 0o644)
			if err := os.WriteFile(path, c.damage(bytes.Clone(good)), 0o644); err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(work, "done", c.task[0]+"-0000"+c.task[1])
			if err := os.Remove(marker); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runCLI(append([]string{"task", "--work", work}, c.task...)...)
			if code != ExitFailure || !strings.Contains(stderr, "task "+c.task[0]+" "+c.task[1]) || !strings.Contains(stderr, path) || !strings.Contains(stderr, c.want) {
				t.Errorf("task %s on a damaged %s: exit %d: %s\nwant exit %d naming the task, %s and %q", c.task, c.pack, code, stderr, ExitFailure, path, c.want)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the failed task left its marker")
			}
			os.WriteFile(path, good, 0o644)
			if code, _, stderr := runCLI(append([]string{"task", "--work", work}, c.task...)...); code != 0 {
				t.Errorf("task %s on the repaired pack: exit %d: %s", c.task, code, stderr)
			}
		})
	}
}

// packEntries reads the index of a pack of n sections (the layout of
// internal/staged/pack.go): each section's offset and length.
func packEntries(t *testing.T, pack []byte, n int) (off, size []int) {
	t.Helper()
	idx := len(pack) - 12*n - 16
	if idx < 0 || string(pack[len(pack)-4:]) != "NDPK" {
		t.Fatalf("not a pack of %d sections", n)
	}
	at := 0
	for x := range n {
		l := int(binary.LittleEndian.Uint64(pack[idx+12*x:]))
		off, size = append(off, at), append(size, l)
		at += l
	}
	return off, size
}

// packSection is section x of a pack of n sections.
func packSection(t *testing.T, pack []byte, n, x int) []byte {
	off, size := packEntries(t, pack, n)
	return pack[off[x] : off[x]+size[x]]
}

// repack is the pack with section x replaced by data, its index and
// checksums made anew: a pack as a producer that wrote data would write it.
func repack(t *testing.T, pack []byte, n, x int, data []byte) []byte {
	off, size := packEntries(t, pack, n)
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	var body, idx []byte
	for k := range n {
		sec := pack[off[k] : off[k]+size[k]]
		if k == x {
			sec = data
		}
		body = append(body, sec...)
		idx = binary.LittleEndian.AppendUint64(idx, uint64(len(sec)))
		idx = binary.LittleEndian.AppendUint32(idx, crc32.Checksum(sec, castagnoli))
	}
	idx = binary.LittleEndian.AppendUint32(idx, uint32(n))
	idx = binary.LittleEndian.AppendUint32(idx, crc32.Checksum(idx, castagnoli))
	idx = binary.LittleEndian.AppendUint32(idx, 1)
	return append(append(body, idx...), "NDPK"...)
}

// TestStagedOlderPlan: a work folder planned by a build whose work files
// differ (an older plan version) is refused with a message that says so
// and asks for an empty --work, before any task runs.
func TestStagedOlderPlan(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeLines(t, in, genCorpus(t, 6, 50))
	work := filepath.Join(dir, "work")
	args := []string{"dedup", "-q", "--executor", "print", "--tasks", "2", "--work", work, "--clusters", dir + "/cl", in}
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	plan := filepath.Join(work, "plan.json")
	b, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	old := bytes.Replace(b, []byte(fmt.Sprintf(`"version": %d,`, staged.PlanVersion)), []byte(`"version": 5,`), 1)
	if bytes.Equal(old, b) {
		t.Fatal("no version in the plan")
	}
	if err := os.WriteFile(plan, old, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(args...)
	if code != ExitUsage || !strings.Contains(stderr, "holds a job planned by another version of neardup (plan version 5") || !strings.Contains(stderr, "give an empty --work") {
		t.Errorf("a plan of version 5: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI("task", "--work", work, "sign", "0"); code == 0 || !strings.Contains(stderr, "plan version 5, this neardup reads") {
		t.Errorf("a task on a plan of version 5: exit %d: %s", code, stderr)
	}
}
