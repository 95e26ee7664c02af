package shingle

import (
	"sync"
	"unsafe"

	"github.com/go-ego/gse"
)

// The gse segmenter is read-only once its dictionary is loaded, so one is
// shared by all Shinglers. It is loaded by the first New for CJKWord, which
// fails if it cannot be: the dictionary costs about a second and tens of
// megabytes.
var (
	cjkOnce sync.Once
	cjkSeg  *gse.Segmenter
	cjkErr  error
)

func segmenter() (*gse.Segmenter, error) {
	cjkOnce.Do(func() {
		seg := new(gse.Segmenter)
		seg.SkipLog = true
		if err := seg.LoadDictEmbed("zh_s"); err != nil {
			cjkErr = err
			return
		}
		if err := seg.LoadDictEmbed("zh_t"); err != nil {
			cjkErr = err
			return
		}
		cjkSeg = seg
	})
	return cjkSeg, cjkErr
}

// LoadCJK loads the Chinese word segmentation dictionary now rather than on
// first use, and reports an error loading it.
func LoadCJK() error {
	_, err := segmenter()
	return err
}

// appendCJKWords appends CJKWord tokens, as seg segments text: gse
// segments that hold a CJK character are one token each; other segments
// are split as Word. seg is the Shingler's, loaded by New, which fails
// when the dictionary cannot load rather than tokenise some other way and
// change the sketches.
func appendCJKWords(seg *gse.Segmenter, dst []int32, text string) []int32 {
	if len(text) == 0 {
		return dst
	}
	b := unsafe.Slice(unsafe.StringData(text), len(text)) // read-only view
	for _, s := range seg.Segment(b) {
		start, end := s.Start(), s.End()
		if start < 0 || end > len(text) || start >= end {
			continue
		}
		piece := text[start:end]
		hasCJK := false
		for _, r := range piece {
			if isCJK(r) {
				hasCJK = true
				break
			}
		}
		if hasCJK {
			dst = append(dst, int32(start), int32(end))
		} else {
			dst = appendWords(dst, piece, start)
		}
	}
	return dst
}
