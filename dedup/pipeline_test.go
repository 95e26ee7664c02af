package dedup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/neardup/neardup/text"
)

// writeCorpus writes n documents of which about a third repeat an earlier
// one with other case and spacing; it returns the path and, per document,
// the index of its first copy (the oracle).
func writeCorpus(t *testing.T, n int) (string, []int) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 8))
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu")
	var buf bytes.Buffer
	var texts []string
	first := make([]int, n)
	seen := map[string]int{}
	for i := range n {
		var txt string
		if i > 0 && r.IntN(3) == 0 {
			txt = texts[r.IntN(len(texts))]
		} else {
			var b strings.Builder
			for k := range 8 + r.IntN(8) {
				if k > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(words[r.IntN(len(words))])
			}
			txt = b.String()
		}
		texts = append(texts, txt)
		if j, ok := seen[txt]; ok {
			first[i] = j
		} else {
			seen[txt] = i
			first[i] = i
		}
		variant := txt
		if r.IntN(2) == 0 {
			variant = strings.ToUpper(txt) + "  "
		}
		line, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("d%05d", i), "text": variant})
		buf.Write(line)
		buf.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "docs.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, first
}

func TestRunExactMatchesOracleForAnyWorkers(t *testing.T) {
	path, first := writeCorpus(t, 3000)
	var ref []byte
	for _, workers := range []int{1, 2, 4} {
		dir := t.TempDir()
		cfg := Options{}
		cfg.Method, cfg.Workers = "exact", workers
		out := Outputs{Kept: filepath.Join(dir, "kept.jsonl"), Clusters: filepath.Join(dir, "c.jsonl"), Pairs: filepath.Join(dir, "p.jsonl")}
		st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, out)
		if err != nil {
			t.Fatal(err)
		}
		clusters, _ := os.ReadFile(out.Clusters)
		lines := strings.Split(strings.TrimSpace(string(clusters)), "\n")
		if len(lines) != len(first) || st.Documents != len(first) {
			t.Fatalf("workers=%d: %d cluster lines, %d documents, want %d", workers, len(lines), st.Documents, len(first))
		}
		for i, l := range lines {
			var c struct {
				ID, Cluster string
				Kept        bool
			}
			if err := json.Unmarshal([]byte(l), &c); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("d%05d", first[i])
			if c.Cluster != want || c.Kept != (first[i] == i) {
				t.Fatalf("workers=%d: line %d = %s, want cluster %s kept %v", workers, i, l, want, first[i] == i)
			}
		}
		var all []byte
		for _, p := range []string{out.Kept, out.Clusters, out.Pairs} {
			b, _ := os.ReadFile(p)
			all = append(all, b...)
		}
		if ref == nil {
			ref = all
		} else if !bytes.Equal(ref, all) {
			t.Fatalf("workers=%d: outputs differ from workers=1", workers)
		}
	}
}

func TestRunCancelledLeavesNoOutput(t *testing.T) {
	path, _ := writeCorpus(t, 3000)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := Options{}
	cfg.Method = "exact"
	_, err := Run(ctx, cfg, Input{Files: []string{path}}, Outputs{Kept: filepath.Join(dir, "kept.jsonl"), Clusters: filepath.Join(dir, "c.jsonl")})
	if err == nil {
		t.Fatal("cancelled run succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("cancelled run left %d files behind: %v", len(ents), ents)
	}
}

func TestSignExact(t *testing.T) {
	path, first := writeCorpus(t, 200)
	out := filepath.Join(t.TempDir(), "sig.jsonl")
	cfg := Options{}
	cfg.Method = "exact"
	st, err := Sign(context.Background(), cfg, Input{Files: []string{path}}, out)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 200 || st.Documents != 200 {
		t.Fatalf("%d lines, %d documents, want 200", len(lines), st.Documents)
	}
	sketch := make([]string, len(lines))
	for i, l := range lines {
		var s struct{ ID, Method, Sketch string }
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, l)
		}
		if s.Method != "exact" || len(s.Sketch) != 32 {
			t.Fatalf("line %d = %s: want method exact and 32 hex digits", i, l)
		}
		sketch[i] = s.Sketch
		if (sketch[i] == sketch[first[i]]) != true {
			t.Fatalf("doc %d duplicates %d but their hashes differ", i, first[i])
		}
	}
}

// An unknown method wraps ErrUnknownMethod and lists every method there
// is (bloom-overlap was missing from the list).
func TestUnknownMethod(t *testing.T) {
	cfg := Options{}
	cfg.Method = "nonsense"
	_, err := NewMethod(cfg)
	if !errors.Is(err, ErrUnknownMethod) {
		t.Fatalf("NewMethod(nonsense) = %v, want ErrUnknownMethod", err)
	}
	for _, m := range Methods() {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("%q does not list %s", err, m)
		}
	}
	if !slices.Contains(Methods(), "bloom-overlap") {
		t.Errorf("Methods() = %v lacks bloom-overlap", Methods())
	}
}

// The spill path (external sort of bucket keys) gives the same clusters as
// the in-memory finder.
func TestSpillMatchesInMemory(t *testing.T) {
	path, first := writeCorpus(t, 4000)
	read := func(spill bool) []byte {
		dir := t.TempDir()
		cfg := Options{}
		cfg.Method, cfg.Spill, cfg.Memory = "exact", spill, 1<<20
		out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), TmpDir: t.TempDir()}
		st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, out)
		if err != nil {
			t.Fatal(err)
		}
		if st.Memory.Spill != spill {
			t.Fatalf("spill = %v, want %v", st.Memory.Spill, spill)
		}
		if ents, _ := os.ReadDir(out.TmpDir); len(ents) != 0 {
			t.Fatalf("spill left %d temporary files", len(ents))
		}
		b, _ := os.ReadFile(out.Clusters)
		return b
	}
	mem, disk := read(false), read(true)
	if !bytes.Equal(mem, disk) {
		t.Fatal("spill and in-memory clusters differ")
	}
	if n := bytes.Count(mem, []byte(`"kept":false`)); n != countDups(first) {
		t.Fatalf("%d removed, want %d", n, countDups(first))
	}
}

func countDups(first []int) int {
	n := 0
	for i, f := range first {
		if f != i {
			n++
		}
	}
	return n
}

// cancelAfter cancels a run once n documents have been processed.
type cancelAfter struct {
	n, seen int
	cancel  context.CancelFunc
}

func (c *cancelAfter) Stage(string, int64) {}
func (c *cancelAfter) Done()               {}
func (c *cancelAfter) Advance(docs int, _ int64) {
	if c.seen += docs; c.seen >= c.n {
		c.cancel()
	}
}

// TestResumeAfterInterrupt: for every method that can checkpoint its
// sketches, a run interrupted and resumed gives what a clean run gives.
func TestResumeAfterInterrupt(t *testing.T) {
	for _, method := range []string{"exact", "minhash", "simhash", "ksentence"} {
		t.Run(method, func(t *testing.T) { testResume(t, method) })
	}
}

func testResume(t *testing.T, method string) {
	var files []string
	for range 3 {
		p, _ := writeCorpus(t, 1000)
		files = append(files, p)
	}
	cfg := Options{}
	cfg.Method = method
	runOnce := func(tmp string, resume bool, prog Progress, ctx context.Context) (*Stats, []byte, error) {
		dir := t.TempDir()
		out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), Pairs: filepath.Join(dir, "p.jsonl"), TmpDir: tmp}
		st, err := Run(ctx, cfg, Input{Files: files, Resume: resume, Progress: prog}, out)
		if err != nil {
			return nil, nil, err
		}
		c, _ := os.ReadFile(out.Clusters)
		p, _ := os.ReadFile(out.Pairs)
		return st, append(c, p...), nil
	}
	_, want, err := runOnce(t.TempDir(), false, nil, context.Background())
	if err != nil {
		t.Fatal(err)
	}

	tmp := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	if _, _, err := runOnce(tmp, true, &cancelAfter{n: 1500, cancel: cancel}, ctx); err == nil {
		t.Fatal("interrupted run succeeded")
	}
	states, _ := filepath.Glob(filepath.Join(tmp, "neardup-state-*", "file-*.ck"))
	if len(states) == 0 {
		t.Fatal("the interrupted run left no checkpoint")
	}
	st, got, err := runOnce(tmp, true, nil, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Resumed == 0 {
		t.Error("the second run resumed no file")
	}
	if !bytes.Equal(got, want) {
		t.Error("resumed run's clusters and pairs differ from a clean run's")
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "neardup-state-*")); len(left) != 0 {
		t.Errorf("state directory left after success: %v", left)
	}

	// A damaged checkpoint is ignored: the file is read again.
	ctx, cancel = context.WithCancel(context.Background())
	if _, _, err := runOnce(tmp, true, &cancelAfter{n: 1500, cancel: cancel}, ctx); err == nil {
		t.Fatal("second interrupted run succeeded")
	}
	states, _ = filepath.Glob(filepath.Join(tmp, "neardup-state-*", "file-*.ck"))
	if len(states) == 0 {
		t.Fatal("no checkpoint to damage")
	}
	b, _ := os.ReadFile(states[0])
	b[len(b)/2] ^= 0xff
	os.WriteFile(states[0], b, 0o644)
	st, got, err = runOnce(tmp, true, nil, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("run after a damaged checkpoint differs from a clean run")
	}
	if st.Resumed != len(states)-1 {
		t.Errorf("resumed %d files, want %d (all but the damaged one)", st.Resumed, len(states)-1)
	}
}

// A run removes the spill files and the output temporary files that a
// killed process left (named after their owner, package
// internal/tempfile), counts them in its Stats, and leaves other files
// alone.
func TestRunRemovesAbandonedTempFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("owner liveness needs /proc")
	}
	// A process that has exited: its pid names no process any more.
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Skip(err)
	}
	dead := child.Process.Pid
	path, _ := writeCorpus(t, 50)
	dir, tmp := t.TempDir(), t.TempDir()
	out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), TmpDir: tmp}
	left := []string{
		filepath.Join(tmp, fmt.Sprintf("neardup-run-%d-77-123.bin", dead)),
		filepath.Join(tmp, fmt.Sprintf("neardup-sketches-%d-77-124.bin", dead)),
		filepath.Join(tmp, fmt.Sprintf("neardup-sets-%d-77-126.bin", dead)),
		filepath.Join(dir, fmt.Sprintf(".c.jsonl.tmp-%d-77-125", dead)),
	}
	kept := []string{filepath.Join(tmp, "neardup-run-1.bin"), filepath.Join(dir, ".other.tmp-1-2-3")}
	for i, p := range append(slices.Clone(left), kept...) {
		if err := os.WriteFile(p, make([]byte, 100+i), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := Run(context.Background(), Options{}, Input{Files: []string{path}}, out)
	if err != nil {
		t.Fatal(err)
	}
	if st.AbandonedFiles != 4 || st.AbandonedBytes != 100+101+102+103 {
		t.Errorf("AbandonedFiles %d, AbandonedBytes %d; want 4 and 406", st.AbandonedFiles, st.AbandonedBytes)
	}
	for _, p := range left {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s was not removed: %v", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// With --html the example clusters show the extracted text, which is what
// the method compared, not the markup (issue 12 item 7).
func TestExamplesHTMLShowText(t *testing.T) {
	page := func(body string) string {
		return "<!DOCTYPE html><html><head><title>T</title><style>p{color:red}</style></head><body><p>" + body + "</p></body></html>"
	}
	dir := t.TempDir()
	path := writeTexts(t, dir, []string{
		page("The committee approved the new budget for the city parks on Monday."),
		page("The committee approved the new budget for the city parks on Monday."),
		page("Something else entirely."),
	}, "d%d")
	cfg := Options{}
	norm := text.DefaultOptions()
	norm.HTML = true
	cfg.Method, cfg.Spec.Normalize = "exact", &norm
	st, err := Run(context.Background(), cfg, Input{Files: []string{path}, Examples: 3}, Outputs{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Examples) != 1 || len(st.Examples[0].Members) != 2 {
		t.Fatalf("examples %+v, want one cluster of two", st.Examples)
	}
	for _, m := range st.Examples[0].Members {
		if strings.ContainsAny(m.Text, "<>") || strings.Contains(m.Text, "color") || !strings.Contains(m.Text, "The committee approved") {
			t.Errorf("example member %s: text %q, want the extracted text", m.ID, m.Text)
		}
	}
}

// With --t2s off, a run counts the documents with Traditional Chinese
// characters, so that the summary and the report can say that --t2s would
// join them with their Simplified copies. English text naming a place in
// Traditional characters is not counted.
func TestTraditionalCounted(t *testing.T) {
	path := writeTexts(t, t.TempDir(), []string{"舉頭望明月，低頭思故鄉。", "举头望明月，低头思故乡。", "plain English text here",
		"An English article about Taiwan (台灣) and Hong Kong names them in Traditional characters."}, "d%d")
	for _, t2s := range []bool{false, true} {
		cfg := Options{}
		norm := text.DefaultOptions()
		norm.T2S = t2s
		cfg.Method, cfg.Spec.Normalize = "exact", &norm
		st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, Outputs{})
		if err != nil {
			t.Fatal(err)
		}
		want, removed := 1, 0
		if t2s {
			want, removed = 0, 1
		}
		if st.Traditional != want || st.Removed != removed {
			t.Errorf("t2s %v: Traditional %d, removed %d; want %d, %d", t2s, st.Traditional, st.Removed, want, removed)
		}
	}
}

// With --html off, a run counts the documents that start like HTML pages,
// so that the summary and the report can say that --html compares their
// main content rather than their markup; with --html on, none.
func TestHTMLLikeCounted(t *testing.T) {
	path := writeTexts(t, t.TempDir(), []string{
		"<!DOCTYPE html><html><body><p>one page</p></body></html>",
		"\n  <HTML lang=en><body><p>another page</p></body></HTML>",
		"plain text that mentions <html> later",
		"<p>a fragment, not a page</p>",
	}, "d%d")
	for _, html := range []bool{false, true} {
		cfg := Options{}
		norm := text.DefaultOptions()
		norm.HTML = html
		cfg.Method, cfg.Spec.Normalize = "exact", &norm
		st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, Outputs{})
		if err != nil {
			t.Fatal(err)
		}
		want := 2
		if html {
			want = 0
		}
		if st.HTMLLike != want {
			t.Errorf("html %v: HTMLLike %d, want %d", html, st.HTMLLike, want)
		}
	}
}

// With --html, a run counts the pages in which no main content was found
// (a page of links only, an empty one); --html-all looks for none and
// counts none.
func TestHTMLNoMainContentCounted(t *testing.T) {
	article := "<html><body><nav><a href=/>Home</a></nav><div class=content><p>The committee approved the new budget for the city parks on Monday, after a long debate.</p></div></body></html>"
	links := "<html><body><ul><li><a href=/a>Parks</a></li><li><a href=/b>Budget</a></li></ul></body></html>"
	path := writeTexts(t, t.TempDir(), []string{article, links, "", "<div hidden>x</div>"}, "d%d")
	for _, all := range []bool{false, true} {
		cfg := Options{}
		norm := text.DefaultOptions()
		norm.HTML, norm.HTMLAll = true, all
		cfg.Method, cfg.Spec.Normalize = "exact", &norm
		st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, Outputs{})
		if err != nil {
			t.Fatal(err)
		}
		want := 3
		if all {
			want = 0
		}
		if st.HTMLNoMainContent != want {
			t.Errorf("HTMLAll %v: HTMLNoMainContent = %d, want %d", all, st.HTMLNoMainContent, want)
		}
	}
}

// Pages of a web archive are compared on their main content with --html,
// as JSONL pages are: two pages of one site that share a long template
// and differ in their articles are not duplicates, though their whole
// visible texts (--html-all, and no --html) are.
func TestWARCMainContent(t *testing.T) {
	var menu strings.Builder
	for i := range 60 {
		fmt.Fprintf(&menu, "<li><a href=/s%d>Section number %d of the site</a></li>", i, i)
	}
	page := func(article string) string {
		return "<html><body><div class=sidebar><ul>" + menu.String() + "</ul></div><div class=content><p>" + article +
			"</p></div><div class=footer>Copyright the site, all rights reserved, terms of use and privacy policy apply.</div></body></html>"
	}
	var warc bytes.Buffer
	for i, article := range []string{
		"The committee approved the new budget for the city parks on Monday, after a long debate about the playgrounds.",
		"A storm closed the harbour for two days, and the ferries will sail again on Thursday morning, the port said.",
	} {
		body := "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + page(article)
		fmt.Fprintf(&warc, "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.com/%d\r\nWARC-Date: 2026-01-01T00:00:00Z\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n", i, len(body), body)
	}
	path := filepath.Join(t.TempDir(), "pages.warc")
	if err := os.WriteFile(path, warc.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		html, all bool
		removed   int
	}{{true, false, 0}, {true, true, 1}, {false, false, 1}} {
		cfg := Options{}
		norm := text.DefaultOptions()
		norm.HTML, norm.HTMLAll = tc.html, tc.all
		cfg.Spec.Normalize = &norm
		st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, Outputs{})
		if err != nil {
			t.Fatal(err)
		}
		if st.Documents != 2 || st.Removed != tc.removed {
			t.Errorf("HTML %v, HTMLAll %v: %d documents, %d removed; want 2, %d", tc.html, tc.all, st.Documents, st.Removed, tc.removed)
		}
		// The reader extracted the pages' main content: the HTML step,
		// which finds no page in that text, does not count them.
		if st.HTMLNoMainContent != 0 {
			t.Errorf("HTML %v, HTMLAll %v: HTMLNoMainContent = %d, want 0 (web archive pages are extracted by the reader)", tc.html, tc.all, st.HTMLNoMainContent)
		}
	}
}
