package dedup

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/sketch"
)

// TestSetFile: sets come back sorted and distinct (get) or distinct
// (getDistinct), before and after the write buffer is flushed, through
// the read-ahead window or not, and again after their repeats were
// removed in place; a set stored as distinct comes back as stored, one
// read without repeats is marked so; documents without a set read as
// empty; the file holds the
// hashes little-endian whatever the machine; Close removes the file.
func TestSetFile(t *testing.T) {
	for _, native := range []bool{true, false} {
		t.Run(fmt.Sprintf("native=%v", native), func(t *testing.T) {
			defer func(v bool) { nativeLittleEndian = v }(nativeLittleEndian)
			nativeLittleEndian = native
			testSetFile(t)
		})
	}
}

func testSetFile(t *testing.T) {
	dir := t.TempDir()
	s := &setFile{dir: dir}
	var sc sketch.HashSorter
	var dd hashSet
	sets := map[int][]uint64{0: {5, 3, 3, 1}, 2: {9}, 5: {1 << 63, 7, 7, 2, 0, 0}, 7: {8, 1, 4}}
	for _, i := range []int{0, 2, 5} {
		if err := s.put(i, slices.Clone(sets[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.putSet(7, slices.Clone(sets[7]), true); err != nil {
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		var buf []uint64
		for i := range 9 {
			got, err := s.get(i, buf, &sc)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(sets[i])
			slices.Sort(want)
			want = slices.Compact(want)
			if !slices.Equal(got, want) || s.has(i) != (len(want) > 0) {
				t.Errorf("document %d: %v (has %v), want %v", i, got, s.has(i), want)
			}
			for _, ahead := range []bool{false, true} {
				d, err := s.getDistinct(i, nil, &dd, ahead)
				if i == 7 && !slices.Equal(d, sets[7]) {
					t.Errorf("document 7 stored distinct: %v, want it as stored, %v", d, sets[7])
				}
				d = slices.Clone(d)
				slices.Sort(d)
				if err != nil || !slices.Equal(d, want) {
					t.Errorf("document %d distinct (ahead %v): %v, %v; want %v", i, ahead, d, err, want)
				}
			}
			buf = got
		}
	}
	check() // the first read flushes the buffer
	if !s.isDistinct(2) || s.isDistinct(0) {
		t.Errorf("read once, document 2 (no repeats) is marked %v, document 0 (repeats) %v", s.isDistinct(2), s.isDistinct(0))
	}
	check() // again: the repeats removed in place left the same sets
	// Larger than the write buffer: written through in pieces.
	big := make([]uint64, setWriteBuffer/8*2+3)
	for i := range big {
		big[i] = uint64(len(big) - i)
	}
	sets[8] = big
	if err := s.put(8, big); err != nil {
		t.Fatal(err)
	}
	if err := s.put(3, []uint64{1}); err == nil {
		t.Error("a set stored out of order was accepted")
	}
	check()
	name := s.f.Name()
	if filepath.Dir(name) != dir || !strings.HasPrefix(filepath.Base(name), setsPrefix) {
		t.Errorf("scratch file %s, want %s in %s", name, setsPrefix, dir)
	}
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 16 || binary.LittleEndian.Uint64(raw) != 5 || binary.LittleEndian.Uint64(raw[8:]) != 3 {
		t.Errorf("the file does not begin with 5 and 3, little-endian: % x", raw[:min(len(raw), 16)])
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Errorf("%s not removed by Close: %v", name, err)
	}
	if _, err := s.get(0, nil, &sc); err == nil {
		t.Error("get after Close did not fail")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestMinShared: the fewest shared hashes that reach a threshold, against
// a scan of every count.
func TestMinShared(t *testing.T) {
	for _, th := range []float64{0.1, 0.5, 0.7, 0.8, 0.9, 1} {
		for na := range 40 {
			for nb := range 40 {
				want := min(na, nb) + 1
				for x := 0; x <= min(na, nb); x++ {
					if jaccardOf(x, na, nb) >= th {
						want = x
						break
					}
				}
				if got := minShared(na, nb, th); got != want {
					t.Fatalf("minShared(%d, %d, %v) = %d, want %d", na, nb, th, got, want)
				}
			}
		}
	}
}

// TestHashSet: the intersection counted by probing equals a sorted merge
// (jaccard.Intersection) on random sets with repeats and the hash 0, and
// build keeps each distinct hash once; countAtLeast stops only when the
// count cannot reach its need, and is exact otherwise; hashes crafted to share their
// probe position fall back to binary search and still count right.
func TestHashSet(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var hs hashSet
	distinct := func(h []uint64) []uint64 {
		h = slices.Clone(h)
		slices.Sort(h)
		return slices.Compact(h)
	}
	check := func(name string, a, b []uint64) {
		t.Helper()
		wa, wb := distinct(a), distinct(b)
		got := hs.build(slices.Clone(a))
		if !slices.Equal(distinct(got), wa) || len(got) != len(wa) || hs.n != len(wa) {
			t.Fatalf("%s: build kept %d hashes (n %d), want the %d distinct", name, len(got), hs.n, len(wa))
		}
		want := jaccard.Intersection(wa, wb)
		if n := hs.count(wb); n != want {
			t.Errorf("%s: count %d, want %d", name, n, want)
		}
		for _, need := range []int{0, want, want + 1, r.IntN(len(wb) + 2)} {
			n, ok := hs.countAtLeast(wb, need)
			if ok != (want >= need) || ok && n != want {
				t.Errorf("%s: countAtLeast(%d) = %d, %v; the count is %d", name, need, n, ok, want)
			}
		}
		if n, want := hs.count(wa), len(wa); n != want {
			t.Errorf("%s: count of itself %d, want %d", name, n, want)
		}
	}
	for round := range 300 {
		na, nb := r.IntN(400), r.IntN(400)
		pool := make([]uint64, 1+r.IntN(600))
		for x := range pool {
			pool[x] = r.Uint64()
		}
		pool[0] = 0
		pick := func(n int) []uint64 {
			h := make([]uint64, n)
			for x := range h {
				h[x] = pool[r.IntN(len(pool))]
			}
			return h
		}
		check(fmt.Sprintf("round %d", round), pick(na), pick(nb))
	}
	check("empty", nil, []uint64{1, 2})
	check("empty probe", []uint64{1, 2}, nil)
	// Hashes whose top bits after the multiplication agree: every one
	// probes from the same cell.
	crafted := func(n, from int) []uint64 {
		h := make([]uint64, n)
		inv := uint64(hashMul)
		for range 5 { // the inverse of hashMul modulo 2^64 (Newton)
			inv *= 2 - hashMul*inv
		}
		for x := range h {
			h[x] = uint64(from+x+1) * inv // h*hashMul = from+x+1: top bits 0
		}
		return h
	}
	a := crafted(3000, 0)
	check("crafted", a, crafted(3000, 1500))
	if hs.build(slices.Clone(a)); hs.sorted == nil {
		t.Error("crafted hashes did not fall back to binary search")
	}
	// A well-spread table probed with crafted hashes falls back in count.
	b := make([]uint64, 3000)
	for x := range b {
		b[x] = r.Uint64() | 1
	}
	b = append(b, a[:10]...)
	hs.build(slices.Clone(b))
	if hs.sorted != nil {
		t.Fatal("random hashes fell back")
	}
	if n := hs.count(a); n != 10 {
		t.Errorf("crafted probe: count %d, want 10", n)
	}
}

type fullDisk struct{}

func (fullDisk) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestSetFileErrors: a full disk and a failed read are errors naming the
// file (and the document), and a write error sticks.
func TestSetFileErrors(t *testing.T) {
	var sc sketch.HashSorter
	s := &setFile{dir: t.TempDir()}
	defer s.Close()
	if err := s.put(0, []uint64{1, 2}); err != nil {
		t.Fatal(err)
	}
	s.out = fullDisk{}
	err := s.put(1, make([]uint64, setWriteBuffer/8+1))
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), s.f.Name()) {
		t.Fatalf("disk full: %v", err)
	}
	if _, err2 := s.get(0, nil, &sc); !errors.Is(err2, syscall.ENOSPC) {
		t.Errorf("after a write error get returns %v", err2)
	}
	if err2 := s.put(2, []uint64{1}); !errors.Is(err2, syscall.ENOSPC) {
		t.Errorf("after a write error put returns %v", err2)
	}

	r := &setFile{dir: t.TempDir()}
	defer r.Close()
	if err := r.put(3, []uint64{1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := r.flush(); err != nil {
		t.Fatal(err)
	}
	r.f.Close() // reads now fail
	if _, err := r.get(3, nil, &sc); err == nil || !strings.Contains(err.Error(), "document 3") {
		t.Errorf("read error: %v", err)
	}

	bad := &setFile{dir: filepath.Join(t.TempDir(), "missing")}
	if err := bad.put(0, []uint64{1}); err == nil || !strings.Contains(err.Error(), "scratch file") {
		t.Errorf("scratch directory missing: %v", err)
	}
}

// TestRunMinhashScratch: a run keeps its shingle sets in --tmp-dir and
// removes them; an unusable --tmp-dir is an error naming the document.
func TestRunMinhashScratch(t *testing.T) {
	texts := append(mhCorpus(t), nearCorpus(20, 6, 0.8, 4)...)
	dir := t.TempDir()
	in := writeTexts(t, dir, texts, "d%d")
	tmp := t.TempDir()
	out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), TmpDir: tmp}
	if _, err := Run(context.Background(), mhConfig(false, 0.8), Input{Files: []string{in}}, out); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("files left in the temporary directory: %v", left)
	}
	out.TmpDir = filepath.Join(tmp, "missing")
	_, err := Run(context.Background(), mhConfig(false, 0.8), Input{Files: []string{in}}, out)
	if err == nil || !strings.Contains(err.Error(), "scratch file") || !strings.Contains(err.Error(), `document "d0"`) {
		t.Errorf("missing --tmp-dir: %v", err)
	}
}

// TestMinhashSpillCore: the spill path's compact sketch decodes to the low
// 16 bits of the slots and the effective slots, into the memory it is
// given; a wrong length is an error.
func TestMinhashSpillCore(t *testing.T) {
	m, err := NewMethod(mhConfig(false, 0.8))
	if err != nil {
		t.Fatal(err)
	}
	mm := m.(*minhashMethod)
	sk, _ := m.NewSketcher()
	x, err := sk.Sketch(&Doc{Text: []byte("the quick brown fox jumps over the lazy dog and runs far away")})
	if err != nil {
		t.Fatal(err)
	}
	b, set := mm.appendCore(nil, x)
	if len(b) != 2+2*128 || len(set) == 0 {
		t.Fatalf("core of %d bytes, set of %d", len(b), len(set))
	}
	reuse := &minhashSketch{sig: make([]uint32, 0, 128)}
	y, err := mm.decodeCore(b, reuse)
	if err != nil {
		t.Fatal(err)
	}
	got, want := y.(*minhashSketch), x.(*minhashSketch)
	if got != reuse || &got.sig[0] != &reuse.sig[:1][0] || got.keff != want.keff {
		t.Errorf("decoded into new memory, or keff %d want %d", got.keff, want.keff)
	}
	if matches16Full(got.sig, want.sig) != 128 {
		t.Error("decoded slots differ in their low 16 bits")
	}
	if _, err := mm.decodeCore(b[:len(b)-1], nil); err == nil {
		t.Error("a truncated spilled sketch was accepted")
	}
}

// TestSetFileInMemory: with memOnly (the staged join) no file is made;
// every set is stored distinct and read as a view that reads leave
// unchanged, with the same sets as the file gives; Close frees them.
func TestSetFileInMemory(t *testing.T) {
	dir := t.TempDir()
	mem, file := &setFile{dir: dir, memOnly: true}, &setFile{dir: dir}
	var sc sketch.HashSorter
	var dd hashSet
	rng := rand.New(rand.NewPCG(1, 2))
	sets := map[int][]uint64{}
	for _, i := range []int{0, 1, 3, 4, 8} {
		h := make([]uint64, 1+rng.IntN(300))
		for k := range h {
			h[k] = rng.Uint64N(200) // many repeats; 0 among them
		}
		sets[i] = h
		if err := mem.put(i, slices.Clone(h)); err != nil {
			t.Fatal(err)
		}
		if err := file.put(i, slices.Clone(h)); err != nil {
			t.Fatal(err)
		}
	}
	if mem.f != nil {
		t.Fatalf("memOnly made a file: %s", mem.f.Name())
	}
	for range 2 { // twice: the first reads must change nothing
		for i := range 10 {
			got, err := mem.getDistinct(i, nil, &dd, false)
			if err != nil {
				t.Fatal(err)
			}
			want, err := file.get(i, nil, &sc)
			if err != nil {
				t.Fatal(err)
			}
			got = slices.Clone(got)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("set %d: in memory %v, in the file %v", i, got, want)
			}
			if _, ok := sets[i]; ok && !mem.isDistinct(i) {
				t.Errorf("set %d not marked distinct", i)
			}
			sorted, err := mem.get(i, nil, &sc)
			if err != nil || !slices.Equal(sorted, want) {
				t.Fatalf("get %d: %v %v, want %v", i, sorted, err, want)
			}
		}
	}
	file.Close()
	if err := mem.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.getDistinct(0, nil, &dd, false); err == nil {
		t.Error("a read after Close: no error")
	}
}

// TestSetFileSharedDist: after shareDist, a set that one readOnly copy
// finds without repeats is marked for every copy and for the file; a set
// with repeats is never marked, and each copy still reads it distinct.
func TestSetFileSharedDist(t *testing.T) {
	s := &setFile{dir: t.TempDir()}
	sets := [][]uint64{{5, 3, 1}, {9, 9, 2}, {4, 6}}
	for i, h := range sets {
		if err := s.put(i, slices.Clone(h)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.flushAll(); err != nil {
		t.Fatal(err)
	}
	s.shareDist()
	a, b := *s, *s
	a.readOnly, b.readOnly = true, true
	var dd hashSet
	for i, want := range [][]uint64{{5, 3, 1}, {9, 2}} {
		got, err := a.getDistinct(i, nil, &dd, false)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("set %d: got %v, want %v", i, got, want)
		}
	}
	for _, c := range []*setFile{&a, &b, s} {
		if !c.isDistinct(0) || c.isDistinct(1) || c.isDistinct(2) {
			t.Fatalf("marks %v %v %v, want true false false (set 2 not read yet)", c.isDistinct(0), c.isDistinct(1), c.isDistinct(2))
		}
	}
	if got, err := b.getDistinct(1, nil, &dd, false); err != nil || !slices.Equal(got, []uint64{9, 2}) {
		t.Fatalf("set 1 through the other copy: %v, %v", got, err)
	}
	s.Close()
}
