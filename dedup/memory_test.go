package dedup

import (
	"testing"
)

// TestGCLimit: the garbage collector's limit is one and a half times the
// estimate, at least 512 MiB, never above the budget; the spill path's is
// the budget (at least 256 MiB, never above it).
func TestGCLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		est, budget int64
		spill       bool
		want        int64
	}{
		{100 * mib, 8192 * mib, false, 512 * mib},
		{1000 * mib, 8192 * mib, false, 1500 * mib},
		{1000 * mib, 1200 * mib, false, 1200 * mib},
		{4000 * mib, 1024 * mib, true, 1024 * mib},
		{4000 * mib, 100 * mib, true, 100 * mib},
	} {
		p := MemoryPlan{EstimatedBytes: c.est, BudgetBytes: c.budget, Spill: c.spill}
		if got := p.GCLimit(); got != c.want {
			t.Errorf("%+v: GCLimit %d MiB, want %d", c, got/mib, c.want/mib)
		}
	}
}

// TestPlanPeak: the plan's peak is the runtime's own plus the heap, which
// grows to twice the live estimate unless the limit stops it, or on the
// spill path the budget plus the per-document arrays.
func TestPlanPeak(t *testing.T) {
	texts := fpTexts(300, 5)
	for _, spill := range []bool{false, true} {
		cfg := Options{Spill: spill, Memory: 300 << 20}
		_, st := runClusters(t, cfg, texts)
		p := st.Memory
		if p.Spill != spill {
			t.Fatalf("spill %v, want %v", p.Spill, spill)
		}
		want := runtimeBytes + min(p.GCLimit(), 2*p.EstimatedBytes)
		if spill {
			want = runtimeBytes + p.GCLimit()
		}
		if p.EstimatedPeakBytes < want || !spill && p.EstimatedPeakBytes != want || spill && p.EstimatedPeakBytes > want+p.EstimatedDocs*1024 {
			t.Errorf("spill %v: estimated peak %d, want %d (+ per-document arrays when spilling); plan %+v", spill, p.EstimatedPeakBytes, want, p)
		}
	}
}
