package cli

import (
	"bytes"
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
