package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/human"
)

// TestSummaryChained: the summary names what a chained removed document
// misses: the threshold (minhash, simhash with --verify) or the distance
// (simhash).
func TestSummaryChained(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		method string
		verify *bool
		want   string
	}{
		{"minhash", &no, "2 removed documents are below the threshold to the kept document"},
		{"simhash", &no, "2 removed documents are beyond the distance from the kept document"},
		{"simhash", nil, "2 removed documents are beyond the distance from the kept document"},
		{"simhash", &yes, "2 removed documents are below the threshold to the kept document"},
	} {
		n := 2
		s := &dedup.Stats{Method: c.method, Documents: 5, Removed: 3, Kept: 2, Clusters: 1, LargestCluster: 4,
			RemovedBelowThreshold: &n, Params: dedup.Facts{Verify: c.verify}}
		var buf bytes.Buffer
		summaryWriter{&buf}.outcome(s)
		if !strings.Contains(buf.String(), c.want) {
			t.Errorf("%s verify=%v: summary\n%s\nlacks %q", c.method, c.verify, buf.String(), c.want)
		}
	}
}

// TestSummaryNoSpill: a run over its budget that could not spill says why.
func TestSummaryNoSpill(t *testing.T) {
	for cl, want := range map[string]string{"leader": "leader clustering cannot spill", "": "this method cannot spill"} {
		s := &dedup.Stats{Method: "minhash", Params: dedup.Facts{Cluster: cl},
			Memory: dedup.MemoryPlan{BudgetBytes: 1 << 20, EstimatedBytes: 2 << 20}}
		var buf bytes.Buffer
		summaryWriter{&buf}.memory(s)
		if !strings.Contains(buf.String(), want) {
			t.Errorf("cluster %q: %q lacks %q", cl, buf.String(), want)
		}
	}
}

// TestDedupEmptyStdin runs dedup on an empty standard input: the summary
// said "0 B read, a copy of 13 B kept in the temporary directory" (the 13
// bytes are zstd's empty frame) and that its size was not known in
// advance. It must say the input is empty, and --stats no copy.
func TestDedupEmptyStdin(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"dedup", "-"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("dedup of an empty stdin = exit %d:\n%s", code, errb.String())
	}
	if s := errb.String(); !strings.Contains(s, "standard input: empty (0 B read)\n") || strings.Contains(s, "a copy of") || strings.Contains(s, "not known in advance") {
		t.Errorf("dedup of an empty stdin says:\n%s", s)
	}
	stats := filepath.Join(t.TempDir(), "stats.json")
	errb.Reset()
	if code := Main([]string{"dedup", "-q", "--stats", stats, "-"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("dedup --stats of an empty stdin = exit %d:\n%s", code, errb.String())
	}
	b, err := os.ReadFile(stats)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"spool_bytes": 0`) {
		t.Errorf("--stats of an empty stdin:\n%s", b)
	}
}

// TestSummaryExampleControlChars: an example cluster's ids and texts are
// printed with no control character. An id with a newline and an escape
// sequence was printed raw: it broke the summary's lines and drove the
// terminal; an id with a tab or an invisible character could not be told
// from another. Such ids are quoted as the warnings quote them.
func TestSummaryExampleControlChars(t *testing.T) {
	ex := []dedup.Example{{Index: "i\x1b[2J", Members: []dedup.ExampleDoc{
		{ID: "a\tb", Text: "the text", Kept: true},
		{ID: "a\nb\x1b[31mRED", Text: "red \x1b[31mtext"},
		{ID: "日本\u200b語", Text: "same"},
		{ID: "plain id 日本語", Text: "same"},
	}}}
	var buf bytes.Buffer
	summaryWriter{&buf}.examples(ex)
	got := buf.String()
	if strings.ContainsAny(got, "\x1b\t\u200b") || strings.Count(got, "\n") != 6 {
		t.Errorf("examples print control characters or break lines:\n%q", got)
	}
	for _, want := range []string{`"i\x1b[2J"`, `"a\tb"`, `"a\nb\x1b[31mRED"`, `"日本\u200b語"`, " plain id 日本語 ", "red \uFFFD[31mtext"} {
		if !strings.Contains(got, want) {
			t.Errorf("examples lack %s:\n%s", want, got)
		}
	}
}

// TestDuplicateIDsWebArchive: documents of a web archive that share an id
// share a page's address (a page fetched twice); the warning's advice was
// "pass --id-field with a field that is (the "id" field now; without one
// a document's id is FILE:LINE)", which is neither how a WARC record is
// named nor a fix. It names WARC-Record-ID; other inputs keep the advice.
func TestDuplicateIDsWebArchive(t *testing.T) {
	s := &dedup.Stats{DuplicateIDs: 1, DuplicateIDsFirst: []string{"http://a/"}}
	for _, c := range []struct {
		files []string
		field string
		want  string
	}{
		{[]string{"a.jsonl", "crawl.warc.gz"}, "id", "pass --id-field WARC-Record-ID"},
		{[]string{"x.arc"}, "id", "pass --id-field WARC-Record-ID"},
		{[]string{"a.jsonl"}, "id", `pass --id-field with a field that is (the "id" field now`},
		{[]string{"a.jsonl"}, "doc_id", `(the "doc_id" field now; without one a document's id is FILE:LINE, FILE:ROW in Parquet)`},
		{[]string{"crawl.warc"}, "WARC-TREC-ID", `pass --id-field with a WARC header that is (the "WARC-TREC-ID" header now; a record without it is named by its WARC-Target-URI, ARC's URL, or FILE:RECORD when it has none)`},
		{[]string{"a.jsonl", "crawl.warc"}, "doc_id", `(the "doc_id" field now; without one a document's id is FILE:LINE, FILE:ROW in Parquet, and a web archive's record is named by its WARC-Target-URI, ARC's URL, or FILE:RECORD when it has none)`},
	} {
		var buf bytes.Buffer
		warnDuplicateIDs(&buf, s, c.field, c.files)
		if !strings.Contains(buf.String(), c.want) {
			t.Errorf("%v --id-field %s: %q lacks %q", c.files, c.field, buf.String(), c.want)
		}
	}
}

// TestAllowTruncatedNeedsSkipInvalid: --allow-truncated without
// --skip-invalid was accepted and did nothing: a damaged file still
// stopped the run with exit 3, and the message did not say why the flag
// given for it had no effect. It is a usage error naming --skip-invalid,
// in every command that takes it.
func TestAllowTruncatedNeedsSkipInvalid(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(`{"id":"a","text":"x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "idx")
	if code, _, errs := runCLI("index", "create", "-q", "--index", idx); code != ExitOK {
		t.Fatalf("index create: exit %d, %s", code, errs)
	}
	for _, args := range [][]string{
		{"dedup"},
		{"sign", "-o", filepath.Join(dir, "sig.jsonl")},
		{"index", "add", "--index", idx},
	} {
		code, _, errs := runCLI(append(args, "-q", "--allow-truncated", in)...)
		if code != ExitUsage || !strings.Contains(errs, "--allow-truncated applies with --skip-invalid") {
			t.Errorf("%v --allow-truncated: exit %d, %q; want %d naming --skip-invalid", args, code, errs, ExitUsage)
		}
		if code, _, errs := runCLI(append(args, "-q", "--allow-truncated", "--skip-invalid", in)...); code != ExitOK {
			t.Errorf("%v --allow-truncated --skip-invalid: exit %d, %s", args, code, errs)
		}
	}
}

// TestSummaryExampleWidth: an example's text is cut at 70 terminal
// columns, not 70 runes (140 columns of Chinese), and its id is padded to
// 22 columns: a Chinese, a mixed and an English example take the same
// columns, their texts starting in one column.
func TestSummaryExampleWidth(t *testing.T) {
	en := strings.Repeat("near duplicate ", 10)
	zh := strings.Repeat("近似重复文档检测", 20)
	mixed := strings.Repeat("MinHash 去重 ", 20)
	ex := []dedup.Example{{Members: []dedup.ExampleDoc{
		{ID: "doc-1", Text: en, Kept: true},
		{ID: "文档一", Text: zh},
		{ID: "doc 三", Text: mixed},
	}}}
	var buf bytes.Buffer
	summaryWriter{&buf}.examples(ex)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("examples:\n%s", buf.String())
	}
	const textCol = 4 + 7 + 1 + 22 + 1 // "    kept    ID... TEXT" (sw.line indents by two)
	for _, l := range lines[1:] {
		if !strings.HasSuffix(l, "…") || !utf8.ValidString(l) {
			t.Errorf("%q: not cut on a rune with an ellipsis", l)
		}
		if w := human.Width(l); w < textCol+69 || w > textCol+70 {
			t.Errorf("%q takes %d columns, want %d or %d (the text cut at 70 columns)", l, w, textCol+69, textCol+70)
		}
	}
	for i, m := range ex[0].Members {
		l := lines[i+1]
		if at := strings.Index(l, string([]rune(m.Text)[:5])); at < 0 || human.Width(l[:at]) != textCol {
			t.Errorf("%q: the text does not start at column %d", l, textCol)
		}
	}
}

// TestDuplicateIDsWARCIDField: with --id-field, the duplicate-id warning
// for WARC inputs ended "without one a document's id is FILE:LINE", but a
// WARC record without the header is named by its WARC-Target-URI (as the
// ids in the warning show), and by FILE:RECORD without one: a record has
// no line.
func TestDuplicateIDsWARCIDField(t *testing.T) {
	rec := func(uri, body string) string {
		block := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + body
		return fmt.Sprintf("WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: %s\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n", uri, len(block), block)
	}
	in := filepath.Join(t.TempDir(), "crawl.warc")
	if err := os.WriteFile(in, []byte(rec("http://a/", "the quick brown fox jumps over the lazy dog")+rec("http://a/", "a second page about something else entirely")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI("dedup", "-q", "--id-field", "WARC-TREC-ID", in)
	want := `neardup: warning: 1 id is used by more than one document ("http://a/"): the outputs (--clusters, --pairs) name documents by id and cannot tell them apart; make the ids unique, or pass --id-field with a WARC header that is (the "WARC-TREC-ID" header now; a record without it is named by its WARC-Target-URI, ARC's URL, or FILE:RECORD when it has none)` + "\n"
	if code != ExitOK || errs != want {
		t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, errs, want)
	}
}
