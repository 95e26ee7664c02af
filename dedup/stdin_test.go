package dedup

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

func gzipped(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func zstded(t *testing.T, b []byte) []byte {
	w, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	return w.EncodeAll(b, nil)
}

// onlyReader hides every method but Read, as a pipe would.
type onlyReader struct{ r *bytes.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// TestStdinCompressedStreams: standard input, plain, gzip or zstd, gives
// byte for byte the outputs of the same data read from a file, for dedup
// with one pass (minhash, --clusters only, no copy kept), with a second
// pass (kept documents and examples) and with a pre-pass (simhash tfidf),
// and for sign; a second pass reads a copy that is smaller than the plain
// input.
func TestStdinCompressedStreams(t *testing.T) {
	path, _ := writeCorpus(t, 600)
	plain, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	streams := map[string][]byte{"plain": plain, "gzip": gzipped(t, plain), "zstd": zstded(t, plain)}
	type runCase struct {
		name     string
		method   string
		weights  string
		kept     bool
		examples int
		sign     bool
		spooled  bool
	}
	for _, rc := range []runCase{
		{name: "one-pass", method: "minhash"},
		{name: "two-pass", method: "minhash", kept: true, examples: 3, spooled: true},
		{name: "pre-pass", method: "simhash", weights: "tfidf", kept: true, spooled: true},
		{name: "sign", method: "minhash", sign: true},
		{name: "sign-pre-pass", method: "simhash", weights: "tfidf", sign: true, spooled: true},
	} {
		cfg := Options{}
		cfg.Method = rc.method
		if rc.weights != "" {
			cfg.Spec.SimHash.Weights = weighting(rc.weights)
		}
		run := func(t *testing.T, in Input) (map[string][]byte, *Stats) {
			t.Helper()
			dir := t.TempDir()
			tmp := filepath.Join(dir, "tmp")
			os.Mkdir(tmp, 0o755)
			in.Examples = rc.examples
			out := Outputs{Clusters: filepath.Join(dir, "clusters.jsonl"), TmpDir: tmp}
			if rc.kept {
				out.Kept = filepath.Join(dir, "kept.jsonl")
			}
			var st *Stats
			var err error
			if rc.sign {
				st, err = Sign(context.Background(), cfg, in, filepath.Join(dir, "sig.jsonl"))
			} else {
				st, err = Run(context.Background(), cfg, in, out)
			}
			if err != nil {
				t.Fatal(err)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("temporary files left: %v", left)
			}
			got := map[string][]byte{}
			for _, f := range []string{"clusters.jsonl", "kept.jsonl", "sig.jsonl"} {
				if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
					got[f] = b
				}
			}
			return got, st
		}
		t.Run(rc.name, func(t *testing.T) {
			want, _ := run(t, Input{Files: []string{path}})
			for name, data := range streams {
				got, st := run(t, Input{Files: []string{"-"}, Stdin: onlyReader{bytes.NewReader(data)}})
				for f, b := range want {
					// ids of records without one would differ (FILE:LINE);
					// every record here has an id.
					if !bytes.Equal(got[f], b) {
						t.Errorf("%s: %s differs from the file run (%d vs %d bytes)", name, f, len(got[f]), len(b))
					}
				}
				if st.Stdin == nil || st.Stdin.Bytes != int64(len(data)) {
					t.Errorf("%s: stdin stats %+v, want %d bytes read", name, st.Stdin, len(data))
					continue
				}
				if spooled := st.Stdin.SpoolBytes > 0; spooled != rc.spooled {
					t.Errorf("%s: spooled %d bytes, want a copy: %v", name, st.Stdin.SpoolBytes, rc.spooled)
				}
				if rc.spooled && st.Stdin.SpoolBytes >= int64(len(plain)) {
					t.Errorf("%s: the copy has %d bytes, the plain input %d", name, st.Stdin.SpoolBytes, len(plain))
				}
				if st.Documents != 600 {
					t.Errorf("%s: %d documents, want 600", name, st.Documents)
				}
			}
			// Redirected from a file (< docs.jsonl.gz), standard input is
			// read again from where it started: no copy.
			f := filepath.Join(t.TempDir(), "in")
			os.WriteFile(f, append([]byte("skipped by the caller\n"), streams["gzip"]...), 0o644)
			in, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			in.Seek(int64(len("skipped by the caller\n")), io.SeekStart)
			got, st := run(t, Input{Files: []string{"-"}, Stdin: in})
			for f, b := range want {
				if !bytes.Equal(got[f], b) {
					t.Errorf("redirected file: %s differs from the file run", f)
				}
			}
			if st.Stdin.SpoolBytes != 0 || st.Memory.InputBytes != int64(len(streams["gzip"])) {
				t.Errorf("redirected file: copy of %d bytes, input %d bytes; want no copy and %d", st.Stdin.SpoolBytes, st.Memory.InputBytes, len(streams["gzip"]))
			}
		})
	}
}

// TestDamagedInputIsNotASkippedRecord: a truncated gzip file loses every
// document after the cut; with SkipInvalid it is reported as a damaged
// file with the offset where reading stopped, not as one skipped record;
// without, the run stops with an error naming the file and the offset.
func TestDamagedInputIsNotASkippedRecord(t *testing.T) {
	path, _ := writeCorpus(t, 3000)
	plain, _ := os.ReadFile(path)
	gz := gzipped(t, plain)
	cut := filepath.Join(t.TempDir(), "cut.jsonl.gz")
	os.WriteFile(cut, gz[:len(gz)/2], 0o644)
	cfg := Options{}
	st, err := Run(context.Background(), cfg, Input{Files: []string{cut}, SkipInvalid: true}, Outputs{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Skipped != 0 || len(st.Damaged) != 1 {
		t.Fatalf("skipped %d, damaged %+v: want one damaged file and no skipped record", st.Skipped, st.Damaged)
	}
	d := st.Damaged[0]
	if d.File != cut || d.Offset != int64(len(gz)/2) || d.Unread != 0 || d.Record < 2 || st.Documents >= 3000 {
		t.Errorf("damage %+v after %d documents: want %s at offset %d, 0 bytes unread", d, st.Documents, cut, len(gz)/2)
	}
	_, err = Run(context.Background(), cfg, Input{Files: []string{cut}}, Outputs{})
	if err == nil || !strings.Contains(err.Error(), cut) || !strings.Contains(err.Error(), "compressed offset") {
		t.Errorf("without SkipInvalid: err = %v, want the file and its offset", err)
	}
}

// TestResumeDamagedFileNotCheckpointed: a file found damaged is not
// checkpointed, so a resumed run reads it again and still reports it.
func TestResumeDamagedFileNotCheckpointed(t *testing.T) {
	path, _ := writeCorpus(t, 1000)
	plain, _ := os.ReadFile(path)
	gz := gzipped(t, plain)
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.jsonl.gz")
	os.WriteFile(cut, gz[:len(gz)/2], 0o644)
	second, _ := writeCorpus(t, 1000)
	files := []string{cut, second}
	cfg := Options{}
	cfg.Method = "exact"
	tmp := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Run(ctx, cfg, Input{Files: files, Resume: true, SkipInvalid: true, Progress: &cancelAfter{n: 900, cancel: cancel}}, Outputs{TmpDir: tmp})
	if err == nil {
		t.Fatal("interrupted run succeeded")
	}
	if states, _ := filepath.Glob(filepath.Join(tmp, "neardup-state-*", "file-000000.ck")); len(states) != 0 {
		t.Errorf("the damaged file was checkpointed: %v", states)
	}
	st, err := Run(context.Background(), cfg, Input{Files: files, Resume: true, SkipInvalid: true}, Outputs{TmpDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Damaged) != 1 || st.Damaged[0].File != cut {
		t.Errorf("resumed run: damaged %+v, want %s", st.Damaged, cut)
	}
}
