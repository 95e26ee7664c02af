package dedup

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

// noProgress is used when Input.Progress is nil.
type noProgress struct{}

func (noProgress) Stage(string, int64) {}
func (noProgress) Advance(int, int64)  {}
func (noProgress) Done()               {}
