package dedup

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestKeptCopyNullDevice checks that the kept documents' copy keeps no
// records when they go to the null device, only their count (the write
// stage reports the same documents and bytes, and neither reads the
// input again nor writes records), and that a regular file still gets
// them from the copy.
func TestKeptCopyNullDevice(t *testing.T) {
	if st, err := os.Stat(os.DevNull); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Skipf("%s is not a character device here", os.DevNull)
	}
	if !isNullDevice(os.DevNull) {
		t.Fatalf("%s not taken for the null device", os.DevNull)
	}
	dir := t.TempDir()
	path := writeTexts(t, dir, scaleCorpus(1), "d%d")
	if isNullDevice(path) || isNullDevice("") || isNullDevice("-") {
		t.Fatal("a regular file, or no output, taken for the null device")
	}
	run := func(kept string) (*Stats, []byte) {
		t.Helper()
		out := t.TempDir()
		o := Outputs{Clusters: filepath.Join(out, "c"), Kept: kept, TmpDir: out}
		st, err := Run(context.Background(), Options{Method: "minhash", Workers: 2}, Input{Files: []string{path}}, o)
		if err != nil {
			t.Fatal(err)
		}
		c, err := os.ReadFile(o.Clusters)
		if err != nil {
			t.Fatal(err)
		}
		return st, c
	}
	parts := func(st *Stats) []string {
		var names []string
		for _, p := range st.SerialParts {
			names = append(names, p.Name)
		}
		return names
	}
	write := func(st *Stats) Stage {
		for _, s := range st.Stages {
			if s.Name == "write" {
				return s
			}
		}
		t.Fatal("no write stage")
		return Stage{}
	}
	file := filepath.Join(t.TempDir(), "k.jsonl")
	fst, fc := run(file)
	if !slices.Contains(parts(fst), "write records") || slices.Contains(parts(fst), "write: read again") {
		t.Fatalf("a regular file's kept documents not written from the copy: serial parts %v", parts(fst))
	}
	if b, err := os.ReadFile(file); err != nil || len(b) == 0 {
		t.Fatalf("kept documents: %d bytes, %v", len(b), err)
	}
	nst, nc := run(os.DevNull)
	if p := parts(nst); slices.Contains(p, "write records") || slices.Contains(p, "write: read again") {
		t.Fatalf("the null device's kept documents were copied or read again: serial parts %v", p)
	}
	if !bytes.Equal(fc, nc) {
		t.Error("clusters differ between a kept file and the null device")
	}
	fw, nw := write(fst), write(nst)
	if fw.Documents != nw.Documents || fw.Bytes != nw.Bytes || nw.Documents == 0 {
		t.Errorf("write stage: %d documents, %d bytes to the null device; %d, %d to a file", nw.Documents, nw.Bytes, fw.Documents, fw.Bytes)
	}
}
