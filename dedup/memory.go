package dedup

import (
	"bytes"
	"os"
	"strings"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/internal/sysinfo"
)

// MemoryPlan is the memory estimate made before a run and the decision
// taken from it.
type MemoryPlan struct {
	BudgetBytes    int64 `json:"budget_bytes"`
	InputBytes     int64 `json:"input_bytes"`     // on disk
	EstimatedDocs  int64 `json:"estimated_docs"`  // from the input size and a sample
	EstimatedBytes int64 `json:"estimated_bytes"` // what the run would hold in memory
	// EstimatedPeakBytes is the peak resident memory the plan expects
	// under its garbage-collector limit (GCLimit, which the CLI sets): the
	// runtime's own, plus the heap, which grows to twice what is live
	// before a collection unless the limit stops it first; on the spill
	// path, the budget plus the per-document arrays.
	EstimatedPeakBytes int64 `json:"estimated_peak_bytes"`
	Spill              bool  `json:"spill"` // bucket keys go to disk
	SpillSupported     bool  `json:"spill_supported"`
}

// runtimeBytes is what a run holds whatever its input: the Go runtime,
// the binary's tables, the stages' batches and buffers (measured: a peak
// RSS of 48-53 MiB for one document and for the 256 of --sample).
const runtimeBytes = 48 << 20

// spillBytesPerDoc is what the spill path keeps in memory per document
// beyond the pipeline's own: its sketch's offset and length.
const spillBytesPerDoc = 12

// GCLimit is the garbage collector's soft memory limit that suits the
// plan (runtime/debug.SetMemoryLimit; the CLI sets it): one and a half
// times what the run is estimated to hold, at least 512 MiB, never above
// the budget; on the spill path, the budget (at least 256 MiB), which is
// what it holds. The heap then stays near what is live instead of growing
// to twice that before each collection.
func (p MemoryPlan) GCLimit() int64 {
	limit := max(p.EstimatedBytes/2*3, 512<<20)
	if p.Spill {
		limit = max(p.BudgetBytes, 256<<20)
	}
	return min(limit, p.BudgetBytes)
}

// Per-document memory of the pipeline itself: the id string and its
// header, union-find parent and size, cluster bookkeeping.
const pipelineBytesPerDoc = 16 + 8 + 8 + 16

// defaultFinderBytesPerDoc is assumed for methods that do not say.
const defaultFinderBytesPerDoc = 256

// DefaultMemory returns the default budget: half of the machine's RAM (or
// 1 GiB when it cannot be read).
func DefaultMemory() int64 {
	if r := sysinfo.TotalRAM(); r > 0 {
		return r / 2
	}
	return 1 << 30
}

// plan estimates the run's memory need from the input size and a sample of
// its first records, and decides whether to spill.
func (r *run) plan() MemoryPlan {
	p := MemoryPlan{BudgetBytes: r.cfg.Memory}
	if p.BudgetBytes <= 0 {
		p.BudgetBytes = DefaultMemory()
	}
	var decoded float64
	ratio := 0.0 // of the first compressed file, measured; applied to all
	for _, name := range r.in.Files {
		path := name
		if src, ok := r.sources[name]; ok {
			p.InputBytes += src.Size
			decoded += float64(src.Size)
			continue
		}
		if name == "-" {
			// A pipe's size is not known in advance; a file's is.
			if r.stdin.size > 0 {
				p.InputBytes += r.stdin.size
				decoded += float64(r.stdin.size) * corpus.CompressionRatioOf(bytes.NewReader(r.stdin.peek()))
			}
			continue
		}
		st, err := os.Stat(path)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		p.InputBytes += st.Size()
		f := 1.0
		if l := strings.ToLower(name); strings.HasSuffix(l, ".gz") || strings.HasSuffix(l, ".zst") {
			if ratio == 0 {
				if ratio, err = corpus.CompressionRatio(path); err != nil || ratio < 1 {
					ratio = 4 // typical for text
				}
			}
			f = ratio
		}
		decoded += float64(st.Size()) * f
	}
	// Sample the first records for their average size and id length.
	recBytes, idBytes, textBytes, n := int64(0), int64(0), int64(0), int64(0)
	if len(r.in.Files) > 0 {
		name := r.in.Files[0]
		var rd corpus.Reader
		var err error
		opts := r.in.Options
		opts.OnInvalid = func(*corpus.RecordError) error { return nil }
		if src, ok := r.sources[name]; ok {
			rd, err = src.Open(opts)
		} else if name == "-" { // its first bytes, which the first pass reads again
			rd = corpus.NewStream(bytes.NewReader(bytes.Clone(r.stdin.peek())), "-", opts)
		} else {
			rd, err = corpus.Open(name, opts)
		}
		if err == nil && rd != nil {
			for n < 256 && rd.Next() {
				d := rd.Doc()
				recBytes += int64(len(d.Raw)) + 1
				idBytes += int64(len(d.ID))
				textBytes += int64(len(d.Text))
				n++
			}
			rd.Close()
		}
	}
	if n > 0 && recBytes > 0 {
		p.EstimatedDocs = int64(decoded) / (recBytes / n)
		idBytes /= n
		textBytes /= n
	}
	per := int64(defaultFinderBytesPerDoc)
	if me := r.caps.memory; me != nil {
		per = int64(me.BytesPerDoc(int(textBytes)))
	}
	p.EstimatedBytes = p.EstimatedDocs * (pipelineBytesPerDoc + idBytes + per)
	for _, ix := range r.in.AgainstIndexes { // open already: they cannot spill
		p.EstimatedBytes += ix.MemoryBytes()
	}
	p.SpillSupported = r.caps.keyed != nil
	// A quarter more than the live data leaves room for the garbage
	// collector and the buffers: spill before the budget is reached.
	p.Spill = p.SpillSupported && (r.cfg.Spill || p.EstimatedBytes+p.EstimatedBytes/4 > p.BudgetBytes)
	p.EstimatedPeakBytes = runtimeBytes + min(p.GCLimit(), 2*p.EstimatedBytes)
	if p.Spill {
		p.EstimatedPeakBytes = runtimeBytes + p.GCLimit() + p.EstimatedDocs*(pipelineBytesPerDoc+idBytes+spillBytesPerDoc)
	}
	return p
}

// PeakRSS returns the process's peak resident set size in bytes (Linux
// VmHWM), or 0 when it cannot be read.
func PeakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			for _, c := range strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")) {
				if c < '0' || c > '9' {
					break
				}
				kb = kb*10 + int64(c-'0')
			}
			return kb << 10
		}
	}
	return 0
}

// cpuSeconds returns the process's user plus system CPU time so far, or 0
// when it cannot be read.
func cpuSeconds() float64 { return sysinfo.CPUSeconds() }
