package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neardup/neardup/internal/objstore"
)

// storageCorpus writes a corpus with near-duplicates into a local folder:
// a.jsonl, b.jsonl.gz (compressed), sub/c.txt and a file no reader takes.
func storageCorpus(t *testing.T) (dir string, files map[string][]byte) {
	t.Helper()
	r := rand.New(rand.NewPCG(26, 1))
	words := strings.Fields("the quick brown fox jumps over a lazy dog while seven wizards quietly box jugs of liquid gold near the old mill")
	doc := func() string {
		var sb strings.Builder
		for i := range 40 {
			if i > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(words[r.IntN(len(words))])
		}
		return sb.String()
	}
	var prev string
	jsonl := func(prefix string, n int) []byte {
		var b bytes.Buffer
		for i := range n {
			text := doc()
			if i%3 == 2 { // a near copy of the one before
				text = prev + " again"
			}
			prev = text
			fmt.Fprintf(&b, "{\"id\":\"%s%d\",\"text\":%q}\n", prefix, i, text)
		}
		return b.Bytes()
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(jsonl("b", 150))
	zw.Close()
	var txt bytes.Buffer
	for i := range 60 {
		if i%4 == 3 {
			txt.WriteString(prev + "\n")
			continue
		}
		prev = doc()
		txt.WriteString(prev + "\n")
	}
	files = map[string][]byte{
		"a.jsonl":    jsonl("a", 200),
		"b.jsonl.gz": gz.Bytes(),
		"sub/c.txt":  txt.Bytes(),
		"notes.md":   []byte("not an input\n"),
	}
	dir = t.TempDir()
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, files
}

// TestStorageURLs runs dedup, sign and index add with inputs and outputs
// on a real S3 server (and the GCS emulator): the outputs are those of the
// same run on local files, byte for byte.
func TestStorageURLs(t *testing.T) {
	for name, start := range objectStores {
		t.Run(name, func(t *testing.T) {
			bucket := start(t)
			ctx := context.Background()
			dir, files := storageCorpus(t)
			in, err := objstore.Open(ctx, bucket+"/corpus")
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			for n, b := range files {
				if err := in.PutBytes(ctx, n, b); err != nil {
					t.Fatal(err)
				}
			}
			local := t.TempDir()
			outs := []string{"-o", "kept.jsonl", "--clusters", "clusters.jsonl", "--pairs", "pairs.jsonl"}
			run := func(where string, args ...string) {
				t.Helper()
				var full []string
				for i, a := range args {
					if i > 0 && strings.HasPrefix(args[i-1], "-") && strings.HasSuffix(a, ".jsonl") {
						a = where + "/" + a
					}
					full = append(full, a)
				}
				if code, _, errs := runCLI(full...); code != 0 {
					t.Fatalf("neardup %s: exit %d\n%s", strings.Join(full, " "), code, errs)
				}
			}
			args := append([]string{"dedup", "--threshold", "0.7"}, outs...)
			run(local, append(args, "--stats", local+"/stats.json", dir)...)
			run(bucket+"/out", append(args, "--stats", bucket+"/out/stats.json", bucket+"/corpus")...)
			out, err := objstore.Open(ctx, bucket+"/out")
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			for _, n := range []string{"kept.jsonl", "clusters.jsonl", "pairs.jsonl"} {
				want, err := os.ReadFile(filepath.Join(local, n))
				if err != nil {
					t.Fatal(err)
				}
				got, err := out.ReadAll(ctx, n)
				if err != nil {
					t.Fatal(err)
				}
				// The documents of sub/c.txt have no ids: theirs are FILE:LINE.
				want = bytes.ReplaceAll(want, []byte(dir+"/"), []byte(bucket+"/corpus/"))
				if !bytes.Equal(got, want) {
					t.Errorf("%s: %d bytes from object storage, %d from the local run", n, len(got), len(want))
				}
			}
			if !strings.Contains(string(mustRead(t, filepath.Join(local, "clusters.jsonl"))), "a2") {
				t.Errorf("the corpus found no duplicates: the test proves little")
			}
			var ls, rs struct{ Documents, Kept int }
			json.Unmarshal(mustRead(t, filepath.Join(local, "stats.json")), &ls)
			b, err := out.ReadAll(ctx, "stats.json")
			if err != nil {
				t.Fatal(err)
			}
			json.Unmarshal(b, &rs)
			if ls != rs || ls.Documents != 410 {
				t.Errorf("stats: local %+v, object storage %+v; want equal, 410 documents", ls, rs)
			}

			// One object named on its own, and sign's output.
			run(local, "sign", "-o", "sigs.jsonl", filepath.Join(dir, "a.jsonl"))
			run(bucket+"/out", "sign", "-o", "sigs.jsonl", bucket+"/corpus/a.jsonl")
			if got, _ := out.ReadAll(ctx, "sigs.jsonl"); !bytes.Equal(got, mustRead(t, filepath.Join(local, "sigs.jsonl"))) {
				t.Errorf("sign: %d bytes from object storage, want the local run's", len(got))
			}

			// index add reads a prefix.
			idx := filepath.Join(t.TempDir(), "idx")
			if code, _, errs := runCLI("index", "create", "--index", idx); code != 0 {
				t.Fatal(errs)
			}
			run(bucket+"/out", "index", "add", "--index", idx, "-o", "added.jsonl", bucket+"/corpus")
			if got, _ := out.ReadAll(ctx, "added.jsonl"); bytes.Count(got, []byte("\n")) != 410 {
				t.Errorf("index add wrote %d result lines, want 410", bytes.Count(got, []byte("\n")))
			}

			// A run that fails leaves no output behind.
			if err := in.PutBytes(ctx, "zz-bad.jsonl", []byte("{\"id\":\"x\",\"text\":\n")); err != nil {
				t.Fatal(err)
			}
			code, _, errs := runCLI("dedup", "-o", bucket+"/failed/kept.jsonl", "--clusters", bucket+"/failed/clusters.jsonl", bucket+"/corpus")
			if code == 0 {
				t.Fatalf("dedup over a bad record succeeded")
			}
			if !strings.Contains(errs, bucket+"/corpus/zz-bad.jsonl") {
				t.Errorf("the error does not name the bad object's URL:\n%s", errs)
			}
			if names, err := out.List(ctx, ""); err != nil || strings.Contains(strings.Join(names, " "), "failed") {
				t.Errorf("a failed run left %q (%v)", names, err)
			}
			f, _ := objstore.Open(ctx, bucket+"/failed")
			if names, _ := f.List(ctx, ""); len(names) != 0 {
				t.Errorf("a failed run left %q", names)
			}
			f.Close()

			// A missing prefix is a usage error naming it.
			code, _, errs = runCLI("dedup", "-o", local+"/x.jsonl", bucket+"/nothing-here")
			if code != 2 || !strings.Contains(errs, bucket+"/nothing-here") {
				t.Errorf("dedup of a missing prefix: exit %d, %s; want 2 naming it", code, errs)
			}
		})
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
