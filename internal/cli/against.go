package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/store"
)

// storeIndex lets dedup check new documents against a saved index
// (`--against DIR` where DIR holds a neardup index).
type storeIndex struct{ s store.Index }

func (x storeIndex) NewChecker() (func(string) (string, float64, bool, error), error) {
	sk, err := x.s.NewSketcher()
	if err != nil {
		return nil, err
	}
	var ms []store.Match
	return func(text string) (string, float64, bool, error) {
		var err error
		ms, err = x.s.Query(ms[:0], sk.Sketch(text), 1)
		if err != nil || len(ms) == 0 {
			return "", 0, false, err
		}
		return ms[0].ID, ms[0].Similarity, true, nil
	}, nil
}

// MemoryBytes is what the open index holds in memory: its postings, block
// cache and memtables (for the memory plan).
func (x storeIndex) MemoryBytes() int64 {
	st, err := x.s.Stats()
	if err != nil {
		return 0
	}
	return int64(st.PostingsBytes) + st.CacheBytes + int64(st.MemTableBytes)
}

// splitAgainst separates the --against paths that are index directories,
// opened read-only (the closers close them), from corpus files and
// directories.
func splitAgainst(paths []string) (files []string, indexes []dedup.Index, closers []io.Closer, err error) {
	for _, p := range paths {
		if st, serr := os.Stat(p); !store.IsURL(p) && (serr != nil || !st.IsDir()) {
			files = append(files, p)
			continue
		}
		s, oerr := store.OpenIndex(p, store.Options{ReadOnly: true})
		switch {
		case oerr == nil:
			indexes = append(indexes, storeIndex{s})
			closers = append(closers, s)
		case errors.Is(oerr, store.ErrNotIndex) && !store.IsURL(p):
			files = append(files, p) // a directory of corpus files
		default:
			for _, c := range closers {
				c.Close()
			}
			if err := indexErr("--against", p, oerr); err != oerr {
				return nil, nil, nil, err
			}
			return nil, nil, nil, fmt.Errorf("--against %s: %w", p, oerr)
		}
	}
	return files, indexes, closers, nil
}
