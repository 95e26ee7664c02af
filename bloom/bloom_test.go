package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestOptimal(t *testing.T) {
	cases := []struct {
		n     uint64
		p     float64
		wantM uint64 // before rounding up to 64
		wantK int
	}{
		{1000000, 0.01, 9585059, 7},
		{1000000, 1e-6, 28755176, 20},
		{1, 0.5, 2, 1},
	}
	for _, c := range cases {
		m, k, err := Optimal(c.n, c.p)
		if err != nil || k != c.wantK || m != (c.wantM+63)&^63 {
			t.Errorf("Optimal(%d, %v) = %d, %d, %v; want %d, %d", c.n, c.p, m, k, err, (c.wantM+63)&^63, c.wantK)
		}
		// The formula gives back about p for the optimal sizing.
		if got := FPP(c.n, m, k); math.Abs(got-c.p)/c.p > 0.1 && c.n > 1 {
			t.Errorf("FPP(%d, %d, %d) = %v, want about %v", c.n, m, k, got, c.p)
		}
	}
	for _, bad := range []struct {
		n uint64
		p float64
	}{{0, 0.1}, {10, 0}, {10, 1}, {10, -1}, {10, math.NaN()}, {1 << 62, 1e-9}} {
		if _, _, err := Optimal(bad.n, bad.p); !errors.Is(err, ErrParams) {
			t.Errorf("Optimal(%d, %v) error %v, want ErrParams", bad.n, bad.p, err)
		}
	}
	if _, err := NewMK(0, 3, Options{}); !errors.Is(err, ErrParams) {
		t.Errorf("NewMK(0, 3) error %v, want ErrParams", err)
	}
	if _, err := NewMK(64, 65, Options{}); !errors.Is(err, ErrParams) {
		t.Errorf("NewMK(64, 65) error %v, want ErrParams", err)
	}
}

func key(prefix string, i int) []byte { return fmt.Appendf(nil, "%s-%d", prefix, i) }

// keyBuf is key without allocating: it reuses buf.
func keyBuf(buf []byte, prefix string, i int) []byte {
	buf = append(buf[:0], prefix...)
	buf = append(buf, '-')
	return strconv.AppendInt(buf, int64(i), 10)
}

// TestFalsePositiveRate fills filters to their capacity with fixed keys and
// measures the false-positive rate on keys never added. The measured rate
// must be within 1.5x of the target p and within the stated tolerance of
// the formula (1 - e^(-kn/m))^k for the actual m and k; with about 1000
// expected false positives a tolerance of ±20% is 6 standard deviations.
func TestFalsePositiveRate(t *testing.T) {
	cases := []struct {
		n      int
		p      float64
		probes int
		tol    float64
	}{
		{50000, 0.01, 100000, 0.2},
		{100000, 1e-3, 1000000, 0.2},
		{100000, 1e-4, 2000000, 0.5},
	}
	if testing.Short() || raceEnabled {
		cases = cases[:1]
	}
	for _, c := range cases {
		f, err := New(uint64(c.n), c.p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var buf []byte
		for i := range c.n {
			buf = keyBuf(buf, "in", i)
			f.Add(buf)
		}
		for i := range c.n {
			buf = keyBuf(buf, "in", i)
			if !f.Test(buf) {
				t.Fatalf("false negative for key %d", i)
			}
		}
		fp := 0
		for i := range c.probes {
			buf = keyBuf(buf, "out", i)
			if f.Test(buf) {
				fp++
			}
		}
		rate := float64(fp) / float64(c.probes)
		formula := FPP(uint64(c.n), f.M(), f.K())
		t.Logf("n=%d p=%v: m=%d k=%d, measured FPR %.3g (%d/%d), formula %.3g, fill %.3f", c.n, c.p, f.M(), f.K(), rate, fp, c.probes, formula, f.FillRatio())
		if rate > 1.5*c.p {
			t.Errorf("n=%d p=%v: measured FPR %.3g is above 1.5 p", c.n, c.p, rate)
		}
		if math.Abs(rate-formula) > c.tol*formula {
			t.Errorf("n=%d p=%v: measured FPR %.3g, formula %.3g: off by more than %.0f%%", c.n, c.p, rate, formula, 100*c.tol)
		}
		if est := f.EstimatedFPP(); math.Abs(est-formula) > 0.05*formula {
			t.Errorf("EstimatedFPP = %.3g, want about %.3g (count %d of %d)", est, formula, f.Count(), c.n)
		}
	}
}

// TestHashKeys measures the false-positive rate of AddHash/TestHash keys
// (consecutive integers, the worst case for a weak mix) the same way.
func TestHashKeys(t *testing.T) {
	const n = 100000
	probes := 1000000
	if raceEnabled {
		probes = 100000
	}
	f, _ := New(n, 1e-3, Options{Seed: 42})
	for i := range uint64(n) {
		f.AddHash(i)
	}
	fp := 0
	for i := range uint64(probes) {
		if !f.TestHash(i % n) {
			t.Fatalf("false negative for hash %d", i%n)
		}
		if f.TestHash(n + i) {
			fp++
		}
	}
	rate, formula := float64(fp)/float64(probes), FPP(n, f.M(), f.K())
	tol := 0.2 // 6 standard deviations at 1000 expected
	if raceEnabled {
		tol = 0.5 // 5 at 100
	}
	if math.Abs(rate-formula) > tol*formula {
		t.Errorf("hash keys: measured FPR %.3g, formula %.3g", rate, formula)
	}
}

func TestAddReportsPresence(t *testing.T) {
	f, _ := New(1000, 1e-6, Options{})
	if f.AddString("a") {
		t.Error("first AddString(a) = true, want false")
	}
	if !f.AddString("a") || !f.Add([]byte("a")) || !f.TestString("a") {
		t.Error("a not present after adding it")
	}
	if f.Count() != 1 {
		t.Errorf("Count = %d after one distinct key, want 1", f.Count())
	}
	// Keys hashed ahead of time agree with Add, and carry their seed.
	if ok, err := f.TestKey(HashKey([]byte("a"), 0)); !ok || err != nil {
		t.Errorf("TestKey(HashKey(a)) = %v, %v; want true", ok, err)
	}
	if ok, err := f.AddKey(HashKey([]byte("b"), 0)); ok || err != nil || !f.TestString("b") {
		t.Errorf("AddKey(HashKey(b)) = %v, %v, then TestString(b) = %v", ok, err, f.TestString("b"))
	}
	if _, err := f.AddKey(HashKey([]byte("c"), 99)); !errors.Is(err, ErrIncompatible) || f.TestString("c") {
		t.Errorf("AddKey with another seed: %v, want ErrIncompatible and nothing added", err)
	}
	if _, err := f.TestKey(HashKey([]byte("a"), 99)); !errors.Is(err, ErrIncompatible) {
		t.Errorf("TestKey with another seed: %v, want ErrIncompatible", err)
	}
	g, _ := New(1000, 1e-6, Options{Seed: 99})
	g.AddString("a")
	// A different seed sets different bits.
	if bytes.Equal(wordsBytes(f), wordsBytes(g)) {
		t.Error("filters with different seeds have the same bits")
	}
}

func wordsBytes(f *Filter) []byte {
	var b []byte
	for _, w := range f.words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return b
}

// TestConcurrent adds and tests from several goroutines (run with -race):
// no key added may test absent.
func TestConcurrent(t *testing.T) {
	f, _ := New(80000, 1e-4, Options{})
	var wg sync.WaitGroup
	const workers, per = 8, 10000
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				k := key(fmt.Sprint("w", w), i)
				f.Add(k)
				if !f.Test(k) {
					t.Errorf("worker %d: key %d absent right after Add", w, i)
					return
				}
				f.Test(key("other", i)) // concurrent reads of bits being set
			}
		}()
	}
	wg.Wait()
	for w := range workers {
		for i := range per {
			if !f.Test(key(fmt.Sprint("w", w), i)) {
				t.Fatalf("worker %d key %d lost", w, i)
			}
		}
	}
	if c := f.Count(); c < workers*per*99/100 || c > workers*per {
		t.Errorf("Count = %d, want about %d", c, workers*per)
	}
}

func TestMerge(t *testing.T) {
	a, _ := New(1000, 1e-4, Options{})
	b, _ := New(1000, 1e-4, Options{})
	for i := range 300 {
		a.Add(key("a", i))
		b.Add(key("b", i))
	}
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if !a.Test(key("a", i)) || !a.Test(key("b", i)) {
			t.Fatalf("key %d missing after merge", i)
		}
	}
	if a.Count() != 600 {
		t.Errorf("Count after merge = %d, want 600", a.Count())
	}
	for _, other := range []func() (*Filter, error){
		func() (*Filter, error) { return New(1000, 1e-3, Options{}) },        // other m, k
		func() (*Filter, error) { return New(1000, 1e-4, Options{Seed: 5}) }, // other seed
		func() (*Filter, error) { return NewMK(a.M(), a.K()+1, Options{}) },  // other k
	} {
		c, _ := other()
		before := wordsBytes(a)
		if err := a.Merge(c); !errors.Is(err, ErrIncompatible) {
			t.Errorf("Merge of m=%d k=%d seed=%#x into m=%d k=%d: error %v, want ErrIncompatible", c.M(), c.K(), c.seed, a.M(), a.K(), err)
		}
		if !bytes.Equal(before, wordsBytes(a)) {
			t.Error("a refused merge changed the filter")
		}
	}
}

func sample(t testing.TB) *Filter {
	f, err := New(500, 0.01, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 400 {
		f.Add(key("s", i))
	}
	return f
}

func TestFileRoundTrip(t *testing.T) {
	f := sample(t)
	var buf bytes.Buffer
	n, err := f.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) || n != FileSize(f.M()) {
		t.Fatalf("WriteTo = %d, %v; buffer %d, FileSize %d", n, err, buf.Len(), FileSize(f.M()))
	}
	g, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if g.Params() != f.Params() || g.Count() != f.Count() || !bytes.Equal(wordsBytes(f), wordsBytes(g)) {
		t.Fatal("filter changed in a round trip")
	}
	if gn, gp := g.Capacity(); gn != 500 || gp != 0.01 {
		t.Errorf("Capacity after round trip = %d, %v; want 500, 0.01", gn, gp)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "f.bloom")
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	if h, err := LoadFor(path, f.Params()); err != nil || !h.TestString("s-7") && !h.Test(key("s", 7)) {
		t.Fatalf("LoadFor: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("Save left %d files, want 1", len(ents))
	}
	// Built with other parameters.
	other, _ := New(500, 0.001, Options{})
	if _, err := LoadFor(path, other.Params()); !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), path) {
		t.Errorf("LoadFor with other parameters: %v, want ErrIncompatible naming %s", err, path)
	}
}

// rewriteHeader patches a header field and fixes the header checksum.
func rewriteHeader(b []byte, off int, v uint32) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint32(b[off:], v)
	binary.LittleEndian.PutUint32(b[64:], crc32.Checksum(b[:64], castagnoli))
	return b
}

func TestReadErrors(t *testing.T) {
	var buf bytes.Buffer
	_, _ = sample(t).WriteTo(&buf)
	good := buf.Bytes()
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 1; return b }
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrCorrupt},
		{"other file", []byte("{\"id\": 1}\n"), ErrFormat},
		{"magic", flip(0), ErrFormat},
		{"newer version", rewriteHeader(good, 8, 2), ErrVersion},
		{"version 0", rewriteHeader(good, 8, 0), ErrCorrupt},
		{"hash scheme", rewriteHeader(good, 12, 7), ErrCorrupt},
		{"k zero", rewriteHeader(good, 24, 0), ErrCorrupt},
		{"k huge", rewriteHeader(good, 24, 1000), ErrCorrupt},
		{"header bit", flip(20), ErrCorrupt},
		{"bits bit", flip(headerSize + 5), ErrCorrupt},
		{"checksum bit", flip(len(good) - 1), ErrCorrupt},
		{"header cut", good[:40], ErrCorrupt},
		{"bits cut", good[:headerSize+16], ErrCorrupt},
		{"checksum cut", good[:len(good)-2], ErrCorrupt},
	}
	for _, c := range cases {
		if _, err := Read(bytes.NewReader(c.in)); !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
	// Every truncation fails, and Load names the file.
	dir := t.TempDir()
	for _, cut := range []int{1, 8, headerSize - 1, headerSize, len(good) / 2, len(good) - 1} {
		p := filepath.Join(dir, fmt.Sprint("cut", cut))
		_ = os.WriteFile(p, good[:cut], 0o644)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("Load of a file cut at %d: %v, want an error naming it", cut, err)
		}
	}
	p := filepath.Join(dir, "trailing")
	_ = os.WriteFile(p, append(bytes.Clone(good), 0), 0o644)
	if _, err := Load(p); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Load with a trailing byte: %v, want ErrCorrupt", err)
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// FuzzRead checks that Read never panics and that a filter it accepts is
// written back byte for byte.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	_, _ = sample(f).WriteTo(&buf)
	f.Add(buf.Bytes())
	small, _ := NewMK(64, 1, Options{})
	small.AddString("x")
	buf.Reset()
	_, _ = small.WriteTo(&buf)
	f.Add(buf.Bytes())
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Read(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrFormat) && !errors.Is(err, ErrVersion) {
				t.Fatalf("error %v wraps none of the format errors", err)
			}
			return
		}
		var out bytes.Buffer
		if _, err := g.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), data[:out.Len()]) {
			t.Fatal("an accepted filter is not written back identically")
		}
	})
}

// TestAllocs proves Add and Test do not allocate.
func TestAllocs(t *testing.T) {
	f, _ := New(10000, 1e-6, Options{})
	k := []byte("https://example.com/some/page")
	for name, fn := range map[string]func(){
		"Add":        func() { f.Add(k) },
		"Test":       func() { f.Test(k) },
		"AddString":  func() { f.AddString("abc") },
		"TestString": func() { f.TestString("abc") },
		"AddHash":    func() { f.AddHash(12345) },
		"TestHash":   func() { f.TestHash(12345) },
		"AddKey":     func() { _, _ = f.AddKey(HashKey(k, 0)) },
		"TestKey":    func() { _, _ = f.TestKey(HashKey(k, 0)) },
	} {
		if a := testing.AllocsPerRun(1000, fn); a != 0 {
			t.Errorf("%s allocates %v times, want 0", name, a)
		}
	}
}

func BenchmarkAddTest(b *testing.B) {
	for _, p := range []float64{1e-2, 1e-6} {
		const n = 1 << 20
		keys := make([][]byte, 4096)
		for i := range keys {
			keys[i] = key("https://example.com/page", i)
		}
		b.Run(fmt.Sprintf("Add/p=%g", p), func(b *testing.B) {
			f, _ := New(n, p, Options{})
			b.ReportAllocs()
			b.SetBytes(int64(len(keys[0])))
			i := 0
			for b.Loop() {
				f.Add(keys[i&4095])
				i++
			}
		})
		b.Run(fmt.Sprintf("Test/p=%g", p), func(b *testing.B) {
			f, _ := New(n, p, Options{})
			for _, k := range keys[:2048] {
				f.Add(k)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(keys[0])))
			i := 0
			for b.Loop() {
				f.Test(keys[i&4095])
				i++
			}
		})
	}
}

func BenchmarkAddParallel(b *testing.B) {
	f, _ := New(1<<24, 1e-6, Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var h uint64
		for pb.Next() {
			h += 0x9e3779b97f4a7c15
			f.AddHash(h)
		}
	})
}

func TestKeyHex(t *testing.T) {
	k := HashKey([]byte("abc"), 0)
	if got := string(k.AppendHex(nil)); len(got) != 32 || strings.Trim(got, "0123456789abcdef") != "" {
		t.Errorf("AppendHex = %q, want 32 hex digits", got)
	}
	if string(k.AppendHex(nil)) == string(HashKey([]byte("abd"), 0).AppendHex(nil)) {
		t.Error("two keys print the same hash")
	}
}
