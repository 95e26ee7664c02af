package store

import (
	"fmt"
	"strconv"

	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/text"
)

// The main content of an HTML page is what text.MainText extracts, and its
// extraction changes between builds (text.MainVersion). An index of pages'
// main content (MainContent) records at Create the version that extracted
// them (docs/format/store.md, key 00 "extraction"; docs/format/redis.md,
// meta's extraction), so that a build with another version can warn that
// the pages it queries or adds are not extracted as the indexed ones were
// (the same page may no longer match itself exactly). Other indexes
// record none; so do indexes made before the version was recorded.

// NoExtraction, as Options.Extraction, makes Create record no extraction
// version, as an index made before versions were recorded has none.
const NoExtraction = -1

// MainContent reports whether an index of the Spec sp sketches the main
// content of HTML pages (text.MainText): HTML without HTMLAll.
func MainContent(sp sketch.Spec) bool {
	return sp.Normalize != nil && sp.Normalize.HTML && !sp.Normalize.HTMLAll
}

// Extraction returns the text.MainVersion that extracted the pages of an
// index of main content, as recorded at its creation: 0 for an index that
// recorded none (made before versions were recorded, or not of main
// content: MainContent).
func (k *keyer) Extraction() int { return k.extraction }

// extractionAtCreate is the version Create records for the resolved Spec
// rp given opts: 0 (none) unless rp is of main content.
func extractionAtCreate(rp sketch.Spec, opts Options) (int, error) {
	switch {
	case opts.Extraction < NoExtraction:
		return 0, fmt.Errorf("%w: extraction version %d", ErrParams, opts.Extraction)
	case !MainContent(rp) || opts.Extraction == NoExtraction:
		return 0, nil
	case opts.Extraction == 0:
		return text.MainVersion, nil
	}
	return opts.Extraction, nil
}

// decodeExtraction reads the value of 00 "extraction" (u32le, at least 1).
func decodeExtraction(src []byte) (int, error) {
	v, err := decodeVersion(src)
	if err != nil || v == 0 || v > 1<<30 {
		return 0, fmt.Errorf("%w: extraction version %x", ErrCorrupt, src)
	}
	return int(v), nil
}

// parseExtraction reads meta's extraction field of a Redis index ("" for
// none).
func parseExtraction(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return 0, fmt.Errorf("%w: extraction %q", ErrCorrupt, s)
	}
	return v, nil
}
