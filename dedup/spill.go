package dedup

import (
	"bufio"
	"fmt"
	"os"
	"slices"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/internal/extsort"
	"github.com/neardup/neardup/internal/tempfile"
)

// The spill's sketch file is named sketchPrefix + owner + sketchSuffix
// (package internal/tempfile).
const (
	sketchPrefix = "neardup-sketches-"
	sketchSuffix = ".bin"
	// The copy of standard input that a second pass reads (stdin.go).
	stdinPrefix = "neardup-stdin-"
	stdinSuffix = ".spool"
)

// sweepSpill removes the spill files in dir (sketches, copies of standard
// input and sorted runs) that processes killed before they finished left
// behind.
func sweepSpill(dir string) (tempfile.Swept, error) {
	s, err := tempfile.Sweep(dir, sketchPrefix, sketchSuffix)
	if err != nil {
		return s, err
	}
	in, err := tempfile.Sweep(dir, stdinPrefix, stdinSuffix)
	s.Add(in)
	if err != nil {
		return s, err
	}
	r, err := extsort.Sweep(dir)
	s.Add(r)
	return s, err
}

// spillFinder finds pairs of a Keyed method by external sorting.
type spillFinder struct {
	m       Keyed
	all     bool // Options.AllPairs: report pairs inside a cluster too
	sorter  *extsort.Sorter
	sketchF *os.File
	sketchW *bufio.Writer
	offsets []int64  // offsets[i]: start of document i's sketch in the file
	lens    []uint32 // lens[i]: its length; 0 for a document without one
	size    int64
	keys    []uint64
	enc     []byte
}

func newSpillFinder(m Keyed, dir string, budget int64) (*spillFinder, error) {
	f, err := tempfile.Create(dir, sketchPrefix, sketchSuffix)
	if err != nil {
		return nil, err
	}
	return &spillFinder{m: m, sorter: extsort.New(dir, budget), sketchF: f, sketchW: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (f *spillFinder) Add(i int, s DocSketch, _ func(Pair)) error {
	if i != len(f.offsets) {
		return fmt.Errorf("spill finder: document %d added out of order", i)
	}
	f.offsets = append(f.offsets, f.size)
	if s == nil {
		f.lens = append(f.lens, 0)
		return nil
	}
	f.enc = f.m.AppendSketch(f.enc[:0], s)
	f.lens = append(f.lens, uint32(len(f.enc)))
	n, err := f.sketchW.Write(f.enc)
	f.size += int64(n)
	if err != nil {
		return err
	}
	f.keys = f.m.AppendKeys(f.keys[:0], s)
	for _, k := range f.keys {
		if err := f.sorter.Add(extsort.Entry{Key: k, Doc: uint32(i)}); err != nil {
			return err
		}
	}
	return nil
}

func (f *spillFinder) sketch(i uint32, buf []byte) (DocSketch, []byte, error) {
	n := int(f.lens[i])
	buf = slices.Grow(buf[:0], n)[:n]
	if _, err := f.sketchF.ReadAt(buf, f.offsets[i]); err != nil {
		return nil, buf, fmt.Errorf("reading spilled sketch of document %d: %w", i, err)
	}
	s, err := f.m.DecodeSketch(buf)
	return s, buf, err
}

func (f *spillFinder) Flush(emit func(Pair)) error {
	defer f.Close()
	if err := f.sketchW.Flush(); err != nil {
		return err
	}
	uf := cluster.NewUnionFind(len(f.offsets))
	var buf []byte
	var members []uint32
	var sketches []DocSketch
	hamming := capabilitiesOf(f.m).hamming
	return f.sorter.Groups(func(_ uint64, docs []uint32) error {
		members = members[:0]
		for _, d := range docs { // docs are ascending; drop repeats
			if len(members) == 0 || members[len(members)-1] != d {
				members = append(members, d)
			}
		}
		if len(members) < 2 {
			return nil
		}
		sketches = sketches[:0]
		for _, d := range members {
			var s DocSketch
			var err error
			if s, buf, err = f.sketch(d, buf); err != nil {
				return err
			}
			sketches = append(sketches, s)
		}
		for bi := 1; bi < len(members); bi++ {
			b := int(members[bi])
			for ai := 0; ai < bi; ai++ {
				a := int(members[ai])
				if !f.all && uf.Find(a) == uf.Find(b) {
					continue
				}
				if sim, dist, ok := f.m.Match(sketches[ai], sketches[bi]); ok {
					uf.Union(a, b)
					emit(Pair{A: a, B: b, Similarity: sim, Distance: dist, Hamming: hamming})
				}
			}
		}
		return nil
	})
}

// Close removes the temporary files; the pipeline calls it on failure too.
func (f *spillFinder) Close() error {
	f.sorter.Close()
	f.sketchF.Close()
	return os.Remove(f.sketchF.Name())
}
