package dedup

import (
	"bytes"
	"os"
	"strings"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/internal/arena"
	"github.com/neardup/neardup/internal/sysinfo"
	"github.com/neardup/neardup/shingle"
	"github.com/zeebo/xxh3"
)

// MemoryPlan is the memory estimate made before a run and the decision
// taken from it.
type MemoryPlan struct {
	BudgetBytes   int64 `json:"budget_bytes"`
	InputBytes    int64 `json:"input_bytes"`    // on disk
	EstimatedDocs int64 `json:"estimated_docs"` // from the input size and a sample
	// EstimatedBytes is what the run would hold in memory for its
	// documents (what spilling moves to disk), without the stages'
	// batches in flight.
	EstimatedBytes int64 `json:"estimated_bytes"`
	// EstimatedMappedBytes is the part of EstimatedBytes held outside
	// the Go heap (the minhash index and signatures, package
	// internal/arena): the garbage collector neither paces itself on it
	// nor counts it in its soft limit.
	EstimatedMappedBytes int64 `json:"estimated_mapped_bytes"`
	// EstimatedFixedBytes is the part of EstimatedBytes the run holds on
	// the heap whatever its input: the Chinese word segmentation
	// dictionary of --unit cjkword (cjkDictBytes). Spilling does not move
	// it.
	EstimatedFixedBytes int64 `json:"estimated_fixed_bytes,omitempty"`
	// EstimatedPeakBytes is the peak resident memory the plan expects
	// under its garbage-collector limit (GCLimit, which the CLI sets): the
	// runtime's own, the mapped memory, plus the heap at 1.75 times what
	// is live on it (the estimate's heap part and the batches in flight;
	// on the spill path the per-document arrays, the sort's and the
	// join's buffers and the batches) unless the limit stops it first,
	// and never below what is live. With --unit cjkword, the dictionary's
	// file pages too, and at least the peak of its load
	// (cjkLoadPeakBytes), which comes before the limit is set.
	EstimatedPeakBytes int64 `json:"estimated_peak_bytes"`
	Spill              bool  `json:"spill"` // bucket keys go to disk
	SpillSupported     bool  `json:"spill_supported"`
}

// runtimeBytes is what a run holds whatever its input: the Go runtime,
// the binary's tables, the stages' batches and buffers (measured: a peak
// RSS of 48-53 MiB for one document and for the 256 of --sample).
const runtimeBytes = 48 << 20

// cjkDictBytes is the heap that the Chinese word segmentation dictionary
// of --unit cjkword holds once loaded (gse's zh_s and zh_t: 187 MiB live
// after a collection, measured with runtime.ReadMemStats). Before session
// 25 the plan left it out: its peak for 3,000 Tang poems was 60 MiB
// against a measured 421 MiB, and the garbage collector's limit
// (GCLimit), set from the documents' heap, fell below the live heap once
// that passed about 370 MiB.
const cjkDictBytes = 187 << 20

// cjkLoadLiveBytes is the most heap the loading of that dictionary holds
// live at a collection: the dictionary being built and the loader's
// transient data (runtime/metrics' /gc/heap/live at each collection of 8
// loads of zh_s and zh_t alone: 177 to 242 MiB; their resident memory
// peaked at 352 to 427 MiB). The dictionary loads before the plan sets
// the garbage collector's limit (GCLimit), so nothing but GOGC holds the
// heap: it grows to up to twice what was live at the last collection, and
// as for the run's own live data (EstimatedPeakBytes) the plan counts 1.75
// times it. Session 25's 355 MiB (MemStats.Sys grown by one load) was one
// draw from that spread: runs of the whole tang-editions peaked at 394 to
// 469 MiB against a plan of 403 (docs/benchmarks.md, "The memory plan
// counts the dictionary's load at its garbage collector's headroom").
const cjkLoadLiveBytes = 242 << 20

// cjkFileBytes is what the dictionary's load adds to the binary's resident
// pages: the embedded dictionary files (gse's zh/s_1.txt and zh/t_1.txt,
// 8.3 MiB) and the loader's code, read once and resident after (RssFile
// of a one-document run: 48.2 MiB, 58.3 MiB with --unit cjkword; from a
// copy of the binary, 29-30 and 38 MiB). MemStats does not count them,
// nor did runtimeBytes.
const cjkFileBytes = 10 << 20

// cjkLoadPeakBytes is the peak resident memory of the dictionary's load:
// the runtime's, the dictionary's file pages and the heap at 1.75 times
// what the load holds live. The plan of a --unit cjkword run is at
// least this.
const cjkLoadPeakBytes = runtimeBytes + cjkFileBytes + cjkLoadLiveBytes/4*7

// spillBytesPerDoc is what the spill path keeps in memory per document
// beyond the pipeline's own: its sketch's offset and length (12), the
// offset of its shingle set (8), the join's best match and forest pointer
// (8, spill_forest.go) and the matching pairs it keeps for the spanning
// forest (24 bytes a pair, about one a removed document).
const spillBytesPerDoc = 52

// spillOrderedBytesPerDoc is spillBytesPerDoc for a method whose spanning
// pairs follow its own order (simhash: spill_forest.go): the offset and
// length (12) and the pairs kept with their places in the order
// (orderedEdge, 64 bytes, counted as 72 with the spare capacity of the
// growing slice; about one a removed document), without the (b, a)
// forest's arrays; spillSetBytesPerDoc more when its sets are apart
// (simhash --verify: splitKeyed.splitsSets).
const spillOrderedBytesPerDoc = 84

// spillSetBytesPerDoc is the offset of a document's shingle set in the
// sets' file (setFile.start).
const spillSetBytesPerDoc = 8

// GCLimit is the garbage collector's soft memory limit that suits the
// plan (runtime/debug.SetMemoryLimit; the CLI sets it). The runtime
// counts only its own memory in the limit, not what the run maps outside
// the Go heap (EstimatedMappedBytes) nor the binary's resident pages, so
// the limit is set from the heap the budget leaves (heapBudget): one and
// a half times what the run is estimated to hold on the heap, at least
// gcLimitFloor, never above that heap budget less the mapped memory (nor
// below a quarter of it); on the spill path, the heap budget, which is
// what it holds. The heap then stays near what is live instead of
// growing to twice that before each collection, and the whole process
// within the budget.
func (p MemoryPlan) GCLimit() int64 {
	budget := p.heapBudget()
	if p.Spill {
		return budget
	}
	heap := p.EstimatedBytes - p.EstimatedMappedBytes
	limit := max(heap/2*3, gcLimitFloor)
	return min(limit, max(budget-p.EstimatedMappedBytes, budget/4))
}

// heapBudget is what the budget leaves for the run's own memory once the
// runtime's share (runtimeBytes: the binary's resident pages, which no
// limit of the collector counts, and its fixed buffers) is taken; at
// least half the budget, for budgets too small to hold both.
func (p MemoryPlan) heapBudget() int64 {
	return max(p.BudgetBytes-runtimeBytes, p.BudgetBytes/2)
}

// gcLimitFloor is the lowest soft limit GCLimit sets: below it the
// collector's cycles (each scans the stacks and globals and the whole
// live heap) would cost more than the memory they save.
const gcLimitFloor = 256 << 20

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
	var window int64 // the first compressed file's zstd window
	ratio := 0.0     // of the first compressed file, measured; applied to all
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
		l := strings.ToLower(name)
		zst := strings.HasSuffix(l, ".zst") || strings.HasSuffix(l, ".zstd")
		if zst || strings.HasSuffix(l, ".gz") {
			if ratio == 0 {
				ratio = compressionRatio(path, st.Size(), zst, &window)
			}
			f = ratio
		}
		decoded += float64(st.Size()) * f
	}
	smp := r.sample()
	if smp.n > 0 && smp.recBytes > 0 {
		p.EstimatedDocs = int64(decoded) / max(smp.recBytes/smp.n, 1)
	}
	n := max(smp.n, 1)
	idBytes, textBytes := smp.idBytes/n, smp.textBytes/n
	per, mapped := int64(defaultFinderBytesPerDoc), int64(0)
	if me := r.caps.memory; me != nil {
		var heap int64
		heap, mapped = me.BytesPerDoc(int(textBytes), smp.copies, smp.n)
		per = heap + mapped
	}
	p.EstimatedBytes = p.EstimatedDocs * (pipelineBytesPerDoc + idBytes + per)
	if arena.OffHeap {
		p.EstimatedMappedBytes = p.EstimatedDocs * mapped
	}
	if r.useComponents() {
		// The component join holds no index for the whole run, but one
		// index a worker for the components being replayed, counted here
		// as small ones (a giant component of templated pages holds an
		// entry a member: the whole index, as the streaming Finder does).
		perDoc, perEntry := r.caps.components.componentBytes()
		entries := min(p.EstimatedDocs, int64(r.cfg.workers()*replayReuseMax))
		mapped = perEntry
		p.EstimatedBytes = p.EstimatedDocs*(pipelineBytesPerDoc+idBytes+perDoc) + entries*mapped
		if arena.OffHeap {
			p.EstimatedMappedBytes = entries * mapped
		}
	}
	// The cascade's claim table holds every distinct text's content id
	// for the whole run, spilled or not (counted for every document: an
	// upper bound).
	var cascadeBytes int64
	if r.cascade != nil {
		cascadeBytes = p.EstimatedDocs * cascadeEntryBytes
		p.EstimatedBytes += cascadeBytes
	}
	// The word segmentation dictionary is held whatever the input.
	if r.spec.Shingle.Unit == shingle.CJKWord {
		p.EstimatedFixedBytes = cjkDictBytes
		p.EstimatedBytes += p.EstimatedFixedBytes
	}
	for _, ix := range r.in.AgainstIndexes { // open already: they cannot spill
		p.EstimatedBytes += ix.MemoryBytes()
	}
	p.SpillSupported = r.caps.keyed != nil
	// A quarter more than the live data leaves room for the garbage
	// collector and the buffers: spill before the budget is reached.
	p.Spill = p.SpillSupported && (r.cfg.Spill || p.EstimatedBytes+p.EstimatedBytes/4 > p.heapBudget())
	// The stages' batches in flight are held too, spilled or not, and
	// the zstd decoder's window (the reader decodes one input at a time;
	// it keeps the window's text as history: 8 MiB for klauspost's
	// stream encoder, measured 6 to 11 MiB more peak RSS than the same
	// 300 records uncompressed): they count in the peak, not in the
	// decision to spill.
	live := p.EstimatedBytes - p.EstimatedMappedBytes + smp.inFlight(r.cfg.workers()) + window
	if p.Spill {
		p.EstimatedMappedBytes = 0
		// What the spill path holds: the per-document arrays, the
		// external sort's buffers and the join's batches (a quarter of
		// the budget together: newSpillFinder; less when every
		// document's keys, or the sketches of a bucket member for each,
		// take less) and the stages' batches.
		work := min(p.heapBudget()/4, p.EstimatedDocs*smp.spilledBytes/n)
		perDoc := int64(spillBytesPerDoc)
		if r.caps.pairOrder != nil {
			perDoc = spillOrderedBytesPerDoc
			if r.caps.split != nil && r.caps.split.splitsSets() {
				perDoc += spillSetBytesPerDoc
			}
		}
		live = p.EstimatedDocs*(pipelineBytesPerDoc+idBytes+perDoc) + work + smp.inFlight(r.cfg.workers()) + cascadeBytes + p.EstimatedFixedBytes + window
	}
	// The heap grows to twice what was live at the last collection,
	// unless the soft limit stops it first; as the live data grows
	// through the run, the peak falls between one and two times the final
	// live data: 1.75 times fits the measured runs (docs/benchmarks.md).
	// No limit holds the heap below what is live: a run whose live data
	// is above its limit (a spilled run whose per-document arrays fill
	// its budget) peaks there.
	p.EstimatedPeakBytes = runtimeBytes + p.EstimatedMappedBytes + max(live, min(p.GCLimit(), live/4*7))
	if p.EstimatedFixedBytes > 0 {
		// The dictionary's file pages stay resident for the run; its
		// load, before the limit is set, may peak above the run.
		p.EstimatedPeakBytes = max(p.EstimatedPeakBytes+cjkFileBytes, cjkLoadPeakBytes)
	}
	return p
}

// compressionRatio measures how many times larger the compressed file at
// path (size bytes) is decompressed. A zstd file's block headers say its
// whole size (corpus.DecompressedSize, a read of 3 bytes a block), which
// is better than the ratio of its first 4 MiB (the bench corpus's compress
// 2.88 times, the whole file 2.66 times: 8% more documents estimated);
// they also give its window, what the decoder keeps as history, into
// *window. A gzip file's trailer states its size when it is one member
// (corpus.GzipSize gives the rule: the head's ratio was off by 2 to 4% on
// the gzip corpora of /work/shared/data; when it does not, it gives the
// head's ratio from the same decoding). The plan measures the first
// compressed file only and applies its ratio to the others (a thousand
// shards are not each read).
func compressionRatio(path string, size int64, zst bool, window *int64) float64 {
	var ratio float64
	if zst {
		n, w, ok := corpus.DecompressedSize(path)
		*window = w
		if ok && size > 0 && n >= size {
			return float64(n) / float64(size)
		}
		ratio, _ = corpus.CompressionRatio(path) // 0 on an error
	} else {
		n, headRatio, ok := corpus.GzipSize(path)
		if ok && size > 0 && n > 0 {
			return float64(n) / float64(size)
		}
		ratio = headRatio // 0 when the file does not open
	}
	if ratio < 1 {
		return 4 // typical for text
	}
	return ratio
}

// planSample is what the plan learns from the first records of the input.
type planSample struct {
	n         int64 // records sampled
	recBytes  int64 // their bytes as read, newlines included
	idBytes   int64
	textBytes int64 // of their text before normalisation
	// sketchBytes is the memory of their sketches while they travel
	// through the stages (a minhash sketch's shingle hashes until the
	// Finder has them).
	sketchBytes int64
	// copies is how many are an exact copy of an earlier sampled one
	// (after normalisation).
	copies int64
	html   bool // the text is HTML (Normalize.HTML)
	// lines is whether the first input is JSONL that the reader hands
	// the workers in blocks of whole lines (readStage: at most
	// blockBytes, any number of records) rather than in batches of
	// documents.
	lines bool
	// keyed is whether the batches keep each record as read (readStage:
	// with --key-field), which bounds them at batchBytes.
	keyed bool
	// spilledBytes is what their keys and sketches take in the spill
	// path's sort and join: a sketch for each key (an upper bound: a
	// key's sketch is read only when others share the key).
	spilledBytes int64
}

// planSampleSize is the records the plan reads and sketches.
const planSampleSize = 256

// sample reads the first records of the first input, normalises and
// sketches them.
func (r *run) sample() planSample {
	smp := planSample{html: r.spec.Normalize != nil && r.spec.Normalize.HTML}
	if len(r.in.Files) == 0 {
		return smp
	}
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
	if err != nil || rd == nil {
		return smp
	}
	defer rd.Close()
	// readStage splits every JSONL input but a Source's into blocks of
	// lines.
	_, isSource := r.sources[name]
	_, jsonl := rd.(*corpus.JSONL)
	smp.lines = jsonl && !isSource
	smp.keyed = r.cfg.KeyField != ""
	var sk DocSketcher
	if r.method != nil && r.norm != nil {
		sk, _ = r.method.NewSketcher()
	}
	seen := map[uint64]bool{}
	var buf, enc []byte
	var keys []uint64
	for smp.n < planSampleSize && rd.Next() {
		d := rd.Doc()
		smp.recBytes += int64(len(d.Raw)) + 1
		smp.idBytes += int64(len(d.ID))
		smp.textBytes += int64(len(d.Text))
		smp.n++
		if sk == nil {
			continue
		}
		buf = r.norm.Append(buf[:0], d.Text)
		h := xxh3.Hash(buf)
		if seen[h] {
			smp.copies++
		}
		seen[h] = true
		s, err := sk.Sketch(&Doc{ID: d.ID, Text: buf})
		if err != nil || s == nil {
			continue
		}
		smp.sketchBytes += int64(sketchMemory(s))
		if k := r.caps.keyed; k != nil {
			keys = k.AppendKeys(keys[:0], s)
			if split := r.caps.split; split != nil {
				enc, _ = split.appendCore(enc[:0], s)
			} else {
				enc = k.AppendSketch(enc[:0], s)
			}
			smp.spilledBytes += int64(len(keys) * max(len(enc), 12))
		}
	}
	return smp
}

// sketchMemory is what a sketch holds on the heap, roughly.
func sketchMemory(s DocSketch) int {
	switch s := s.(type) {
	case *minhashSketch:
		return 64 + 4*len(s.sig) + 8*len(s.set.h)
	case *simhashSketch:
		return 64 + 8*len(s.set) // the set under --verify
	default:
		return 64
	}
}

// The stages' batches in flight (stages.go): the one the reader fills,
// two a worker queued for the workers and two a worker for the collector,
// one on each worker and the one the collector applies.
func batchesInFlight(workers int) int64 { return int64(5*workers + 2) }

// inFlight estimates the memory of the stages' batches in flight. A
// JSONL input's block of lines (readStage) holds the records of
// blockBytes, however many, their text (a copy when the JSON string has
// escapes) and their sketch. Another input's batch holds batchSize
// documents, their text and sketch, whatever their size: batchBytes
// bounds only the records a batch keeps as read (with --key-field), and
// such a batch holds those too (the normalised text is a worker's
// scratch). The plan counts every batch as holding all three: the
// batches before the workers hold no sketch yet, so this over-counts
// (wiki-slice as a .txt file: 202 MiB planned for 113 MiB at -j 1).
//
// Before session 26 every batch was counted as one of batchSize records
// or fewer of batchBytes. For JSONL that was up to four times the records
// of a block for records over 4 KiB (wiki-slice's articles, 21 KB on
// average in its first 256: planned at 125 MiB for a 68-73 MiB peak at -j
// 2) and too few for records under 1 KiB (bible-kjv-family's 220-byte
// verses, about 1,190 to a block, not 256: a plan of 155.7 MiB for
// 154.8-159.2 MiB at -j 1); for other inputs, too few for records over 4
// KiB (wiki-slice as a .txt file, a document a line: 95 MiB for 101-126
// MiB at -j 1, 126 MiB for 161-171 at -j 2). HTML keeps that count for
// its parsed pages, and for its JSONL blocks too: its term below was
// fitted to llvm-docs with it, whose peak is the parse of its largest
// pages (up to 3 MB each), not the blocks.
func (s planSample) inFlight(workers int) int64 {
	if s.n == 0 {
		return 0
	}
	rec := max(s.recBytes/s.n, 1)
	text := s.textBytes / s.n
	batched := min(int64(batchSize), (batchBytes+rec-1)/rec)
	docs := int64(batchSize)
	switch {
	case s.lines && s.html, s.keyed:
		docs = batched
	case s.lines:
		docs = (blockBytes + rec - 1) / rec
	}
	// The record as read is counted for every input, though only the
	// JSONL blocks and --key-field's batches keep it apart from the text.
	held := docs * (rec + text + s.sketchBytes/s.n)
	if s.html {
		// The parsed tree of an HTML page takes about three times its
		// bytes (measured on llvm-docs).
		held += batched * 3 * text
	}
	return batchesInFlight(workers) * held
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
