package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/neardup/neardup/dedup"
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
