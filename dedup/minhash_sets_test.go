package dedup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/neardup/neardup/sketch"
)

// TestSetFile: sets come back sorted and distinct, before and after the
// write buffer is flushed; documents without a set read as empty; Close
// removes the file.
func TestSetFile(t *testing.T) {
	dir := t.TempDir()
	s := &setFile{dir: dir}
	var sc sketch.HashSorter
	sets := map[int][]uint64{0: {5, 3, 3, 1}, 2: {9}, 5: {1 << 63, 7, 7, 2}}
	for _, i := range []int{0, 2, 5} {
		if err := s.put(i, slices.Clone(sets[i])); err != nil {
			t.Fatal(err)
		}
	}
	check := func() {
		t.Helper()
		var buf []uint64
		for i := range 7 {
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
			ahead, err := s.getAhead(i, nil, &sc)
			if err != nil || !slices.Equal(ahead, want) {
				t.Errorf("document %d read ahead: %v, %v; want %v", i, ahead, err, want)
			}
			buf = got
		}
	}
	check() // the first read flushes the buffer
	// Larger than the write buffer: written through in pieces.
	big := make([]uint64, setWriteBuffer/8*2+3)
	for i := range big {
		big[i] = uint64(len(big) - i)
	}
	sets[6] = big
	if err := s.put(6, big); err != nil {
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
