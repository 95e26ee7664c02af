package dedup

import (
	"strings"
	"testing"

	"github.com/neardup/neardup/corpus"
)

// TestRangeReaderShortNumbers: a file with fewer documents than the plan
// counted says both counts with thousands separators ("3 documents where
// the plan counted at least 12000" before).
func TestRangeReaderShortNumbers(t *testing.T) {
	in := strings.Repeat(`{"text":"a document"}`+"\n", 3)
	r := &rangeReader{Reader: corpus.NewStream(strings.NewReader(in), "in.jsonl", corpus.Options{}), name: "in.jsonl", lo: 0, hi: 12000}
	for r.Next() {
	}
	want := "in.jsonl: 3 documents where the plan counted at least 12,000: the input changed since the job was planned"
	if err := r.Err(); err == nil || err.Error() != want {
		t.Errorf("Err() = %v, want %q", err, want)
	}
}
