package cli

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/neardup/neardup/store"
)

// TestIndexSummaryNumbers: the summaries of index add, query and upgrade
// write their counts with thousands separators, as dedup's summary does
// (they wrote 1234567); --json keeps plain numbers and -q prints nothing.
func TestIndexSummaryNumbers(t *testing.T) {
	s := indexSummary{Index: "idx", Documents: 1234567, Added: 1200000, Duplicates: 34567, Skipped: 1000, Present: 2000, IndexDocs: 9876543}
	up := s
	up.Upgrade = &store.UpgradeResult{Upgraded: 1100000, Already: 3000}
	for _, c := range []struct {
		name string
		sum  indexSummary
		add  bool
		want string
	}{
		{"add", s, true, "added 1,200,000 of 1,234,567 documents (34,567 duplicates, 2,000 already in the index, 1,000 skipped); the index holds 9,876,543\n"},
		{"query", s, false, "queried 1,234,567 documents: 34,567 have duplicates in the index (9,876,543 documents), 1,000 skipped\n"},
		{"upgrade", up, true, "read 1,234,567 documents: 1,100,000 given their shingle sets, 3,000 had them, 0 not in the index, 0 whose text gives another signature (left estimate-only), 0 without shingles, 1,000 skipped; the index holds 9,876,543"},
	} {
		var b bytes.Buffer
		if err := printIndexSummary(&b, &indexOpts{}, c.sum, c.add, nil); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.String(), c.want) {
			t.Errorf("%s: %q; want %q", c.name, b.String(), c.want)
		}
		b.Reset()
		if err := printIndexSummary(&b, &indexOpts{jsonOut: true}, c.sum, c.add, nil); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), `"documents": 1234567,`) || strings.Contains(b.String(), "1,234") {
			t.Errorf("%s --json: %s; want plain numbers", c.name, b.String())
		}
		b.Reset()
		if err := printIndexSummary(&b, &indexOpts{quiet: true, jsonOut: true}, c.sum, c.add, nil); err != nil || b.Len() > 0 {
			t.Errorf("%s -q: %q, %v; want nothing", c.name, b.String(), err)
		}
	}
}

// TestIndexSummarySingular: one document, and one duplicate, in the
// singular (it said "queried 1 documents: 1 have duplicates in the index
// (1 documents)").
func TestIndexSummarySingular(t *testing.T) {
	var b bytes.Buffer
	if err := printIndexSummary(&b, &indexOpts{}, indexSummary{Documents: 1, Duplicates: 1, IndexDocs: 1}, false, nil); err != nil {
		t.Fatal(err)
	}
	if want := "queried 1 document: 1 has duplicates in the index (1 document), 0 skipped\n"; b.String() != want {
		t.Errorf("%q; want %q", b.String(), want)
	}
}

// TestHumanCountsSeparated checks that index stats and eval write their
// counts with thousands separators, as the run summaries do (they wrote
// "disk: 123456 bytes" and "true pairs 1225" beside "added 2,225 of ...").
func TestHumanCountsSeparated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	createIndexAt(t, dir)
	var out, errb bytes.Buffer
	if code := Main([]string{"index", "add", "-q", "--index", dir, writeDocs(t, 20)}, nil, &out, &errb); code != 0 {
		t.Fatalf("index add = exit %d:\n%s", code, errb.String())
	}
	out.Reset()
	if code := Main([]string{"index", "stats", "--index", dir}, nil, &out, &errb); code != 0 {
		t.Fatalf("index stats = exit %d:\n%s", code, errb.String())
	}
	if !regexp.MustCompile(`(?m)^disk: +[1-9][0-9]{0,2}(,[0-9]{3})+ bytes`).MatchString(out.String()) {
		t.Errorf("index stats writes its disk bytes without separators:\n%s", out.String())
	}
	// One truth cluster of 50 documents: 1,225 true pairs.
	var truth strings.Builder
	for i := range 50 {
		fmt.Fprintf(&truth, "{\"id\":\"d%d\",\"cluster\":\"c\"}\n", i)
	}
	files := writeFiles(t, map[string]string{"truth.jsonl": truth.String(), "pred.jsonl": truth.String()})
	out.Reset()
	if code := Main([]string{"eval", "--truth", filepath.Join(files, "truth.jsonl"), "--clusters", filepath.Join(files, "pred.jsonl")}, nil, &out, &errb); code != 0 {
		t.Fatalf("eval = exit %d:\n%s", code, errb.String())
	}
	if !regexp.MustCompile(`true pairs +1,225\n`).MatchString(out.String()) {
		t.Errorf("eval writes its pairs without separators:\n%s", out.String())
	}
}
