package cli

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStagedSpills: with a spill threshold of a few kilobytes (the hidden
// --task-spill) every scatter task spills its groups' files to scratch
// and every join runs its group in several batches of whole components,
// and the outputs are still dedup's, byte for byte, for the orders of
// pairs that the methods have (by document, simhash's own, leader
// clustering's keep order, all pairs); the scratch files are gone after.
// So are they when components are larger than a join's memory.
func TestStagedSpills(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	gen := genFiles(t, dir, 11, 900, 500)
	type spillCase struct {
		name, flags, spill string
		in                 []string
	}
	cases := []spillCase{
		{"minhash", "", "24KB", gen},
		{"minhash-leader-longest", "--cluster leader --keep longest", "24KB", gen},
		{"minhash-all", "--pairs-mode all", "24KB", gen},
		{"simhash", "--method simhash", "4KB", gen},
	}
	if in := sharedHead(t, dir, "bbc-news", 1200); in != "" {
		cases = append(cases, spillCase{"bbc-news", "", "24KB", []string{in}})
	}
	for _, c := range cases {
		checkStagedMatchesWith(t, dir, c.name, strings.Fields(c.flags), []string{"--task-spill", c.spill}, c.in, 3)
		work := filepath.Join(dir, c.name+"-3", "work")
		logs, _ := filepath.Glob(filepath.Join(work, "logs", "scatter*"))
		spilled := 0
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			if strings.Contains(string(b), "spilled") {
				spilled++
			}
		}
		if spilled != 3 {
			t.Errorf("%s: %d of 3 scatter tasks spilled (logs %v)", c.name, spilled, logs)
		}
		for g := range 3 {
			var st struct{ Batches int }
			b, err := os.ReadFile(filepath.Join(work, "join", fmt.Sprintf("%05d", g), "stats.json"))
			if err == nil {
				err = json.Unmarshal(b, &st)
			}
			if err != nil || st.Batches < 2 {
				t.Errorf("%s: join %d ran %d batches (%v)", c.name, g, st.Batches, err)
			}
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Errorf("%s: scratch files left: %v", c.name, left)
		}
	}
	// Components larger than what a join holds (2 KB: a few documents)
	// are joined with their sketches streamed from scratch files, and the
	// outputs are still dedup's.
	for _, c := range []spillCase{
		{"giant", "", "2KB", gen},
		{"giant-leader-longest", "--cluster leader --keep longest", "2KB", gen},
		{"giant-simhash", "--method simhash --verify", "1KB", gen},
	} {
		checkStagedMatchesWith(t, dir, c.name, strings.Fields(c.flags), []string{"--task-spill", c.spill}, c.in, 3)
		work := filepath.Join(dir, c.name+"-3", "work")
		var streamed int64
		for g := range 3 {
			var st struct{ Streamed int64 }
			b, err := os.ReadFile(filepath.Join(work, "join", fmt.Sprintf("%05d", g), "stats.json"))
			if err == nil {
				err = json.Unmarshal(b, &st)
			}
			if err != nil {
				t.Errorf("%s: join %d: %v", c.name, g, err)
			}
			streamed += st.Streamed
		}
		if streamed == 0 {
			t.Errorf("%s: no join streamed a component", c.name)
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Errorf("%s: scratch files left: %v", c.name, left)
		}
	}
}

// sharedHead writes the first n documents of the evaluation set name
// (sharedData) to a file in dir and returns its path, or "" when the set
// is not there.
func sharedHead(t *testing.T, dir, name string, n int) string {
	t.Helper()
	path := sharedData(t, name)
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<26)
	var lines []string
	for len(lines) < n && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := filepath.Join(dir, name+".jsonl")
	writeLines(t, out, lines)
	return out
}
