package pipeline

import (
	"sync"

	"github.com/neardup/neardup/dedup"
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
// whose owner is gone: the worker's own (joinPrefix, parquetPrefix) and
// the dedup package's that a join makes (dedup.JoinComponents: minhash's
// shingle sets, component records and sorted runs), which nothing else
// sweeps on a worker's machine.
func sweepScratch(dir string) (tempfile.Swept, error) {
	s, err := tempfile.SweepAll(dir,
		tempfile.Pattern{Prefix: joinPrefix, Suffix: joinSuffix},
		tempfile.Pattern{Prefix: parquetPrefix, Suffix: parquetSuffix})
	if err != nil {
		return s, err
	}
	names, err := dedup.SweepScratch(dir)
	s.Files += len(names)
	s.Names = append(s.Names, names...)
	return s, err
}

// sweepScratchOnce sweeps os.TempDir() once a worker process, at the setup
// of its first DoFn that makes scratch files. A directory that cannot be
// listed is left to the scratch file's own creation to report.
var sweepScratchOnce = sync.OnceFunc(func() { sweepScratch("") })
