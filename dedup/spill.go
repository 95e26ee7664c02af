package dedup

import (
	"bufio"
	"fmt"
	"os"
	"slices"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/internal/extsort"
	"github.com/neardup/neardup/internal/tempfile"
	"github.com/neardup/neardup/sketch"
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
// input, the minhash Finder's shingle sets and sorted runs) that processes killed before they finished left
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
	sets, err := tempfile.Sweep(dir, setsPrefix, setsSuffix)
	s.Add(sets)
	if err != nil {
		return s, err
	}
	r, err := extsort.Sweep(dir)
	s.Add(r)
	return s, err
}

// splitKeyed is a Keyed method whose sketches carry a shingle set that
// only some pairs need (minhash: the tiered join and --verify). The spill
// path then keeps the sets apart, in a setFile, and the rest of each
// sketch, much smaller, in the sketch file; a bucket's members are decoded
// without their sets, and a set is read only for a pair the rest cannot
// decide.
type splitKeyed interface {
	// appendCore appends the sketch without its set to dst and returns
	// the set (nil when none, in any order, not to be modified).
	appendCore(dst []byte, s DocSketch) ([]byte, []uint64)
	// decodeCore decodes appendCore's bytes, reusing the memory of
	// reuse (a sketch decodeCore returned, or nil).
	decodeCore(b []byte, reuse DocSketch) (DocSketch, error)
	// matchCore is Match without the sets; sure is false when the pair
	// is decided by matchSets.
	matchCore(a, b DocSketch) (sim float64, ok, sure bool)
	// matchSets decides a pair by its sorted, distinct sets.
	matchSets(a, b []uint64) (float64, bool)
}

// spillFinder finds pairs of a Keyed method by external sorting.
type spillFinder struct {
	m       Keyed
	split   splitKeyed // m, when its sets are kept apart
	sets    setFile    // with split
	all     bool       // Options.AllPairs: report pairs inside a cluster too
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
	sf := &spillFinder{m: m, sorter: extsort.New(dir, budget), sketchF: f, sketchW: bufio.NewWriterSize(f, 1<<20)}
	sf.split, _ = m.(splitKeyed)
	sf.sets.dir = dir
	return sf, nil
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
	if f.split != nil {
		var set []uint64
		f.enc, set = f.split.appendCore(f.enc[:0], s)
		if len(set) > 0 {
			if err := f.sets.put(i, set); err != nil {
				return err
			}
		}
	} else {
		f.enc = f.m.AppendSketch(f.enc[:0], s)
	}
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

// sketch reads document i's sketch (into buf, returned for reuse) and
// decodes it, reusing the memory of reuse when the sets are apart.
func (f *spillFinder) sketch(i uint32, buf []byte, reuse DocSketch) (DocSketch, []byte, error) {
	n := int(f.lens[i])
	buf = slices.Grow(buf[:0], n)[:n]
	if _, err := f.sketchF.ReadAt(buf, f.offsets[i]); err != nil {
		return nil, buf, fmt.Errorf("reading spilled sketch of document %d: %w", i, err)
	}
	if f.split != nil {
		s, err := f.split.decodeCore(buf, reuse)
		return s, buf, err
	}
	s, err := f.m.DecodeSketch(buf)
	return s, buf, err
}

// groupSets holds the sets of a bucket's members that were read.
type groupSets struct {
	f    *spillFinder
	sc   sketch.HashSorter
	sets [][]uint64
	read []bool
}

func (g *groupSets) reset(n int) {
	for len(g.sets) < n {
		g.sets = append(g.sets, nil)
		g.read = append(g.read, false)
	}
	clear(g.read[:n])
}

// get returns member k's (document d's) set, read once per bucket.
func (g *groupSets) get(k int, d uint32) ([]uint64, error) {
	if !g.read[k] {
		var err error
		if g.sets[k], err = g.f.sets.get(int(d), g.sets[k], &g.sc); err != nil {
			return nil, err
		}
		g.read[k] = true
	}
	return g.sets[k], nil
}

func (f *spillFinder) Flush(emit func(Pair)) error {
	defer f.Close()
	if err := f.sketchW.Flush(); err != nil {
		return err
	}
	uf := cluster.NewUnionFind(len(f.offsets))
	var buf []byte
	var members []uint32
	var sketches, pool []DocSketch
	sets := groupSets{f: f}
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
		for k, d := range members {
			if k == len(pool) {
				pool = append(pool, nil)
			}
			var s DocSketch
			var err error
			if s, buf, err = f.sketch(d, buf, pool[k]); err != nil {
				return err
			}
			pool[k] = s
			sketches = append(sketches, s)
		}
		sets.reset(len(members))
		for bi := 1; bi < len(members); bi++ {
			b := int(members[bi])
			for ai := 0; ai < bi; ai++ {
				a := int(members[ai])
				if !f.all && uf.Find(a) == uf.Find(b) {
					continue
				}
				if f.split != nil {
					sim, ok, sure := f.split.matchCore(sketches[ai], sketches[bi])
					if !sure {
						x, err := sets.get(ai, members[ai])
						if err != nil {
							return err
						}
						y, err := sets.get(bi, members[bi])
						if err != nil {
							return err
						}
						sim, ok = f.split.matchSets(x, y)
					}
					if ok {
						uf.Union(a, b)
						emit(Pair{A: a, B: b, Similarity: sim, Distance: -1})
					}
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
	f.sets.Close()
	f.sketchF.Close()
	return os.Remove(f.sketchF.Name())
}
