package pipeline

import (
	"sync"

	"github.com/neardup/neardup/internal/tempfile"
)

// A worker's scratch files on its local disk (os.TempDir), named after
// the process that owns them (package internal/tempfile) so that a worker
// that starts removes those of a worker that was killed before it could
// remove its own (out of memory, a preempted machine, kill -9): a join's
// sketches (joinFn) and the local copy of a Parquet file read from a file
// system that cannot seek (read.go).
const (
	joinPrefix    = "neardup-beam-join-"
	joinSuffix    = ".sketches"
	parquetPrefix = "neardup-beam-copy-"
	parquetSuffix = ".parquet"
)

// sweepScratch removes the scratch files in dir ("" for os.TempDir())
// whose owner is gone. The scratch files of the dedup package that a
// join makes (minhash's shingle sets) are not among them: `neardup dedup`
// sweeps those when it runs on the machine.
func sweepScratch(dir string) (tempfile.Swept, error) {
	s, err := tempfile.Sweep(dir, joinPrefix, joinSuffix)
	if err != nil {
		return s, err
	}
	p, err := tempfile.Sweep(dir, parquetPrefix, parquetSuffix)
	s.Add(p)
	return s, err
}

// sweepScratchOnce sweeps os.TempDir() once a worker process, at the setup
// of its first DoFn that makes scratch files. A directory that cannot be
// listed is left to the scratch file's own creation to report.
var sweepScratchOnce = sync.OnceFunc(func() { sweepScratch("") })
