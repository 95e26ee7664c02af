package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/staged"
	"github.com/neardup/neardup/store"
)

// savedIndex names an --against index for the summary: where it is (a Redis
// URL without its password) and the parameters it matches by.
// warn is its extractionWarning ("" for none), which the command prints.
type savedIndex struct{ loc, params, warn string }

// splitAgainst separates the --against paths that are index directories,
// opened read-only (the closers close them), from corpus files and
// directories; named says, for each index, where it is and the
// parameters it compares by (its own, not the run's: the summary names
// them).
func splitAgainst(paths []string) (files []string, indexes []dedup.Index, closers []io.Closer, named []savedIndex, err error) {
	for _, p := range paths {
		if st, serr := os.Stat(p); !store.IsURL(p) && (serr != nil || !st.IsDir()) {
			files = append(files, p)
			continue
		}
		s, oerr := store.OpenIndex(p, store.Options{ReadOnly: true})
		switch {
		case oerr == nil:
			indexes = append(indexes, staged.StoreIndex{S: s})
			closers = append(closers, s)
			sp := s.Spec()
			named = append(named, savedIndex{loc: redactLoc(p), params: fmt.Sprintf("%s, %s", sp.Method, describeParams(sp)), warn: extractionWarning("--against", p, s)})
		case errors.Is(oerr, store.ErrNotIndex) && !store.IsURL(p):
			files = append(files, p) // a directory of corpus files
		default:
			for _, c := range closers {
				c.Close()
			}
			if err := indexErr("--against", p, oerr); err != oerr {
				return nil, nil, nil, nil, err
			}
			return nil, nil, nil, nil, fmt.Errorf("--against %s: %w", p, oerr)
		}
	}
	return files, indexes, closers, named, nil
}
