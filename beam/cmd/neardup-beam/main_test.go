package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/neardup/neardup/dedup"
)

// build compiles a package into dir and returns the binary.
func build(t *testing.T, dir, pkg, name string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// corpus writes a small corpus with exact, near and chained duplicates.
func corpus(t *testing.T, dir string) string {
	t.Helper()
	base := make([]string, 150)
	for i := range base {
		base[i] = fmt.Sprintf("t%d", i)
	}
	var b strings.Builder
	doc := func(id string, words []string) {
		fmt.Fprintf(&b, "{\"id\":%q,\"text\":%q}\n", id, strings.Join(words, " "))
	}
	w := append([]string(nil), base...)
	for i := range 12 { // a chain: each step changes one word (J about 0.93), the ends differ in 11 (J about 0.45)
		doc(fmt.Sprintf("chain-%d", i), w)
		w = append([]string(nil), w...)
		w[(i*11)%len(w)] = fmt.Sprintf("w%d", i)
	}
	doc("copy", base)
	for i := range 20 {
		other := make([]string, 30)
		for k := range other {
			other[k] = fmt.Sprintf("u%d_%d", i, k)
		}
		doc(fmt.Sprintf("other-%d", i), other)
		doc(fmt.Sprintf("other-%d-copy", i), other)
	}
	path := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func clusters(t *testing.T, dir string) []byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "clusters-*.jsonl"))
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestJobServer submits the pipeline through Beam's portable path to a
// Prism job server running as a separate process (--runner universal
// --endpoint, LOOPBACK workers), and compares the clusters with
// package dedup's.
func TestJobServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Prism and the command")
	}
	dir := t.TempDir()
	bin := build(t, dir, ".", "neardup-beam")
	prism := build(t, dir, "github.com/apache/beam/sdks/v2/go/cmd/prism", "prism")
	port := freePort(t)
	ps := exec.Command(prism, "--job_port", fmt.Sprint(port), "--serve_http=false", "--log_level", "warn")
	var plog bytes.Buffer
	ps.Stdout, ps.Stderr = &plog, &plog
	if err := ps.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ps.Process.Kill()
		ps.Wait()
	}()
	endpoint := fmt.Sprintf("localhost:%d", port)
	for start := time.Now(); ; {
		c, err := net.Dial("tcp", endpoint)
		if err == nil {
			c.Close()
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("prism job server did not listen on %s: %s", endpoint, plog.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	in := corpus(t, dir)
	for _, method := range []string{"minhash", "simhash"} {
		cfg := dedup.Options{}
		cfg.Method = method
		want := filepath.Join(dir, method+"-dedup.jsonl")
		if _, err := dedup.Run(context.Background(), cfg, dedup.Input{Files: []string{in}}, dedup.Outputs{Clusters: want}); err != nil {
			t.Fatal(err)
		}
		wantB, err := os.ReadFile(want)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, method+"-beam")
		cmd := exec.Command(bin, "--runner", "universal", "--endpoint", endpoint, "--environment_type", "LOOPBACK",
			"--method", method, "--input", in, "--output", out, "--quiet")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s\nprism: %s", method, err, b, plog.String())
		}
		if got := clusters(t, out); !bytes.Equal(got, wantB) {
			t.Errorf("%s: clusters through the job server:\n%s\nwant (dedup):\n%s", method, got, wantB)
		}
		if method == "minhash" && !bytes.Contains(wantB, []byte(`"id":"chain-11","cluster":"chain-0"`)) {
			t.Errorf("%s: the test corpus's chain is not one cluster in dedup's answer:\n%s", method, wantB)
		}
	}
}

// TestExitCodes: usage errors exit 2, bad input data exits 3 (as
// `neardup dedup` does) naming the file, line and document id, with
// dedup's hint; other failures exit 1.
func TestExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	dir := t.TempDir()
	bin := build(t, dir, ".", "neardup-beam")
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"id\":\"a\",\"text\":\"x y z\"}\n{\"id\":\"b\",\"text\":3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	syntax := filepath.Join(dir, "syntax.jsonl")
	os.WriteFile(syntax, []byte("{\"id\":\"a\",\"text\":\"x y z\"}\nnot json\n"), 0o644)
	missing := filepath.Join(dir, "missing.jsonl")
	os.WriteFile(missing, []byte("{\"id\":\"a\",\"text\":\"x y z\"}\n{\"id\":\"b\",\"body\":\"q\"}\n"), 0o644)
	utf8 := filepath.Join(dir, "utf8.jsonl")
	os.WriteFile(utf8, []byte("{\"id\":\"a\",\"text\":\"x \xff z\"}\n"), 0o644)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	for i := range 3000 {
		fmt.Fprintf(zw, "{\"id\":\"d%d\",\"text\":\"word%d and other words\"}\n", i, i)
	}
	zw.Close()
	damaged := filepath.Join(dir, "damaged.jsonl.gz")
	os.WriteFile(damaged, gz.Bytes()[:gz.Len()/2], 0o644)
	ok := filepath.Join(dir, "ok.jsonl")
	os.WriteFile(ok, []byte("{\"id\":\"a\",\"text\":\"x y z\"}\n"), 0o644)
	txt := filepath.Join(dir, "x.txt")
	os.WriteFile(txt, []byte("a\n"), 0o644)
	noFormat := filepath.Join(dir, "corpus.data")
	os.WriteFile(noFormat, []byte("a\n"), 0o644)
	out := filepath.Join(dir, "out")
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--output", out}, 2, "no --input"},
		{[]string{"--input", filepath.Join(dir, "none-*.jsonl"), "--output", out}, 2, "matches no file"},
		{[]string{"--input", txt, "--output", out}, 2, "is not JSONL"},
		// --format as neardup dedup has it: for files whose names give
		// no format, refused where no input is one.
		{[]string{"--input", noFormat, "--output", out}, 2, "give its format with --format jsonl or --format txt"},
		{[]string{"--input", noFormat, "--output", out, "--format", "csv"}, 2, `--format "csv": want jsonl or txt`},
		{[]string{"--input", bad, "--output", out, "--format", "txt"}, 2, "--format txt applies to files whose names give no format (data.zst, corpus.data), and no input is one"},
		{[]string{"--input", bad, "--output", out, "--method", "bloom"}, 2, "not supported by the pipeline"},
		{[]string{"--input", bad, "--output", out, "--method", "jaccard"}, 2, "not supported by the pipeline"},
		{[]string{"--input", bad, "--output", out, "--threshold", "1.5"}, 2, "--threshold"},
		{[]string{"--input", bad, "--output", out, "--method", "simhash", "--num-perm", "256"}, 2, "--num-perm applies to --method minhash, not simhash: leave it out"},
		// Bad input data: exit 3 and dedup's words and hint.
		{[]string{"--input", bad, "--output", out, "--quiet"}, 3, "bad.jsonl:2 (offset 26) id \"b\": text field is not a string"},
		{[]string{"--input", bad, "--output", out, "--quiet"}, 3, "\nhint: --text-field NAME reads the text from another field (--skip-invalid skips the records whose text is not a string)\n"},
		{[]string{"--input", missing, "--output", out, "--quiet"}, 3, "missing.jsonl:2 (offset 26) id \"b\": missing text field \"text\""},
		{[]string{"--input", missing, "--output", out, "--quiet"}, 3, "\nhint: --text-field NAME reads the text from another field (--skip-invalid skips the records without it)\n"},
		{[]string{"--input", syntax, "--output", out, "--quiet"}, 3, "syntax.jsonl:2 (offset 26): invalid JSON"},
		{[]string{"--input", utf8, "--output", out, "--quiet"}, 3, "utf8.jsonl:1 (offset 0) id \"a\": invalid UTF-8"},
		{[]string{"--input", damaged, "--output", out, "--quiet"}, 3, "damaged.jsonl.gz:"},
		{[]string{"--input", damaged, "--output", out, "--quiet"}, 3, "gzip: stream truncated"},
		// --skip-invalid: every record skipped is exit 3 as in dedup;
		// a damaged stream is not skipped.
		{[]string{"--input", utf8, "--output", out, "--quiet", "--skip-invalid"}, 3, "every record (1) was invalid and skipped by --skip-invalid: no document was read; the first: " + utf8 + ":1 (offset 0)"},
		{[]string{"--input", damaged, "--output", out, "--quiet", "--skip-invalid"}, 3, "--skip-invalid skips bad records, not a damaged file, in neardup-beam"},
		// Other failures: exit 1.
		{[]string{"--input", ok, "--output", filepath.Join(ok, "out"), "--quiet"}, 1, "not a directory"},
	}
	for _, c := range cases {
		cmd := exec.Command(bin, c.args...)
		b, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != c.code || !strings.Contains(string(b), c.msg) {
			t.Errorf("%q: exit %d, want %d with %q; output:\n%s", c.args, code, c.code, c.msg, lastLines(string(b), 5))
		}
	}
	if _, err := os.Stat(filepath.Join(out, "stats.json")); err == nil {
		t.Errorf("a failed run left outputs")
	}
	// A bad record fails the job with the record's file and line, not
	// the bundle's plan inside Beam's error chain (6.7 kB before, issue
	// 32 item 7); -verbose keeps the whole chain.
	b, _ := exec.Command(bin, "--input", bad, "--output", out).CombinedOutput()
	if s := string(b); len(s) > 600 || !strings.Contains(s, "bad.jsonl:2") || strings.Contains(s, "DataSource[") {
		t.Errorf("a bad record: %d bytes of errors, want the record's file and line alone:\n%s", len(s), lastLines(s, 10))
	}
	b, _ = exec.Command(bin, "--input", bad, "--output", out, "-verbose").CombinedOutput()
	if s := string(b); !strings.Contains(s, "bad.jsonl:2") || !strings.Contains(s, "caused by") {
		t.Errorf("-verbose: the whole chain is missing:\n%s", lastLines(s, 10))
	}

	// Documents that share an id: neardup dedup's warning, even with
	// -quiet, and exit 0.
	dup := filepath.Join(dir, "dup.jsonl")
	os.WriteFile(dup, []byte("{\"id\":\"a\",\"text\":\"x y z\"}\n{\"id\":\"a\",\"text\":\"p q r s\"}\n{\"id\":\"c\",\"text\":\"k\"}\n{\"id\":\"c\",\"text\":\"l\"}\n"), 0o644)
	b, err := exec.Command(bin, "--input", dup, "--output", out, "--quiet").CombinedOutput()
	if want := `neardup-beam: warning: 2 ids are used by more than one document ("a", "c"): the outputs (clusters-*.jsonl, pairs-*.jsonl) name documents by id and cannot tell them apart; make the ids unique, or pass --id-field with a field that is (the "id" field now; without one a document's id is FILE:LINE, FILE:ROW in Parquet)` + "\n"; err != nil || string(b) != want {
		t.Errorf("documents sharing ids: %v, said:\n%s\nwant:\n%s", err, b, want)
	}

	// A mistyped flag: the error, a suggestion and one line, not the
	// whole list (186 lines before); -help lists ours, not Beam's.
	b, err = exec.Command(bin, "--treshold", "0.5").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("--treshold: %v, want exit 2", err)
	}
	if s := string(b); strings.Count(s, "\n") > 3 || !strings.Contains(s, "did you mean -threshold?") || !strings.Contains(s, "neardup-beam -help") {
		t.Errorf("--treshold said:\n%s", lastLines(s, 10))
	}
	b, err = exec.Command(bin, "-help").CombinedOutput()
	if err != nil {
		t.Errorf("-help: %v", err)
	}
	help := string(b)
	for _, want := range []string{"-threshold", "-input", "-endpoint", "Prism in-process, the default, needs none", "-help-beam lists them"} {
		if !strings.Contains(help, want) {
			t.Errorf("-help has no %q:\n%s", want, help)
		}
	}
	for _, not := range []string{"(required)", "-staging_location\n"} {
		if strings.Contains(help, not) {
			t.Errorf("-help lists Beam's %q", not)
		}
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}
