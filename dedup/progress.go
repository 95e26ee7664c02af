package dedup

import "github.com/neardup/neardup/corpus"

// Progress receives counts while a run goes on, for progress bars. Its
// methods are called from one goroutine at a time, often (once per batch
// of documents): they should be cheap.
type Progress interface {
	// Stage starts a stage; estimated is the expected number of documents
	// (0 when unknown).
	Stage(name string, estimated int64)
	// Advance reports docs more documents, of bytes input bytes, done in
	// the current stage.
	Advance(docs int, bytes int64)
	// Done ends the last stage.
	Done()
}

// NoProgress returns a Progress that shows nothing (what a nil
// Input.Progress means).
func NoProgress() Progress { return noProgress{} }

// noProgress is used when Input.Progress is nil.
type noProgress struct{}

func (noProgress) Stage(string, int64) {}
func (noProgress) Advance(int, int64)  {}
func (noProgress) Done()               {}

// EstimateDocs estimates how many documents files hold, the way a run
// plans its memory: from their sizes (decompressed by the ratio measured
// on the first compressed one) and the average record size of the first
// records. It is 0 when it cannot tell (standard input, special files).
// The estimate is for progress bars and plans: it may be far off.
func EstimateDocs(files []string, opts corpus.Options) int64 {
	named := make([]string, 0, len(files))
	for _, f := range files {
		if f != "-" { // standard input cannot be sized before it is read
			named = append(named, f)
		}
	}
	if len(named) == 0 {
		return 0
	}
	r := &run{in: Input{Files: named, Options: opts}}
	return r.plan().EstimatedDocs
}
