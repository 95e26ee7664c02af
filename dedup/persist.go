package dedup

import (
	"errors"
	"fmt"
	"os"

	"github.com/neardup/neardup/bloom"
)

// loadOrNew returns the filter of Options.BloomFile when that file exists,
// else a new filter sized from (n, p).
func (m *bloomMethod) loadOrNew() (*bloom.Filter, error) {
	if m.file != "" {
		f, err := bloom.Load(m.file)
		switch {
		case err == nil:
			seed := m.seed
			if seed == 0 {
				seed = bloom.DefaultSeed
			}
			if f.Params().Seed != seed {
				return nil, conflict("BloomFile", "BloomSeed", "%s was built with another seed: %w", m.file, bloom.ErrIncompatible)
			}
			m.loaded = true
			return f, nil
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("bloom filter file %s: %w", m.file, err)
		}
	}
	m.loaded = false
	return bloom.New(m.n, m.p, bloom.Options{Seed: m.seed})
}

// Persist saves the filter to Options.BloomFile.
func (m *bloomMethod) Persist() error {
	if m.file == "" || m.filter == nil {
		return nil
	}
	return m.filter.Save(m.file)
}

// Persist saves the IDF table in use to Options.SaveIDF.
func (m *simhashMethod) Persist() error {
	if m.saveIDF == "" || m.idf == nil {
		return nil
	}
	return m.idf.Save(m.saveIDF)
}
