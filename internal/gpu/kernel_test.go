package gpu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/text"
)

// The kernel's source compiled as C++ and run on the CPU (harness.cc)
// must give every document the signature or fingerprint that the Go CPU
// path gives it. The device check (scripts/gpu-device) runs the same
// comparison on the GPU (TestKernelOnDevice).

var (
	harnessOnce sync.Once
	harnessPath string
	harnessErr  error
)

// buildHarness compiles kernel/harness.cc with g++, once per test binary.
func buildHarness(t *testing.T) string {
	t.Helper()
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not found: the kernel's host build is not tested")
	}
	harnessOnce.Do(func() {
		dir, err := os.MkdirTemp("", "neardup-gpu-harness")
		if err != nil {
			harnessErr = err
			return
		}
		// Copied by the test process, so that go test's cache sees the
		// sources (it does not see what g++ reads).
		for _, f := range []string{"sign.cu", "harness.cc"} {
			b, err := os.ReadFile(filepath.Join("kernel", f))
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, f), b, 0o644)
			}
			if err != nil {
				harnessErr = err
				return
			}
		}
		harnessPath = filepath.Join(dir, "harness")
		out, err := exec.Command(cxx, "-O2", "-Wall", "-Werror", "-Wno-unused-function", "-o", harnessPath, filepath.Join(dir, "harness.cc")).CombinedOutput()
		if err != nil {
			harnessErr = fmt.Errorf("g++: %v\n%s", err, out)
		}
	})
	if harnessErr != nil {
		t.Fatal(harnessErr)
	}
	return harnessPath
}

// runHarness signs texts with the kernel on the CPU.
func runHarness(t *testing.T, c Config, texts [][]byte) Result {
	t.Helper()
	var in bytes.Buffer
	le := binary.LittleEndian
	w := func(v any) { binary.Write(&in, le, v) }
	w([]uint32{uint32(c.Method), uint32(c.Unit), uint32(c.N), uint32(c.K)})
	w([]uint64{c.Seed, c.Key, c.Probe})
	w(uint32(len(texts)))
	off := uint32(0)
	w(off)
	for _, tx := range texts {
		off += uint32(len(tx))
		w(off)
	}
	for _, tx := range texts {
		in.Write(tx)
	}
	if c.Method == MultiplyShift {
		w(c.A)
		w(c.B)
	}
	cmd := exec.Command(buildHarness(t))
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	nd := len(texts)
	r := Result{Status: make([]uint32, nd)}
	rd := bytes.NewReader(out)
	binary.Read(rd, le, r.Status)
	if c.Method.MinHash() {
		r.Sig = make([]uint32, nd*c.K)
		err = binary.Read(rd, le, r.Sig)
	} else {
		r.FP = make([]uint64, 2*nd)
		err = binary.Read(rd, le, r.FP)
	}
	if err != nil {
		t.Fatalf("harness output: %v", err)
	}
	// The hashes, laid out as the device leaves them (Result.DocHashes).
	r.Count = make([]uint32, nd)
	binary.Read(rd, le, r.Count)
	r.Hashes = make([]uint64, int(off)+nd)
	lo := uint32(0)
	for d, tx := range texts {
		if err := binary.Read(rd, le, r.Hashes[int(lo)+d:][:r.Count[d]]); err != nil {
			t.Fatalf("harness hashes: %v", err)
		}
		lo += uint32(len(tx))
	}
	return r
}

// kernelSpecs are the configurations tested: every method, both units,
// n below, at and above the token counts, slot counts that are not
// multiples of 32.
func kernelSpecs() []sketch.Spec {
	mh := func(f minhash.Family, k int, u shingle.Unit, n int) sketch.Spec {
		return sketch.Spec{Method: sketch.MinHash, Shingle: shingle.Options{Unit: u, N: n}, MinHash: sketch.MinHashSpec{Family: f, NumPerm: k}}
	}
	sh := func(w sketch.Weighting, bits int, u shingle.Unit, n int) sketch.Spec {
		return sketch.Spec{Method: sketch.SimHash, Shingle: shingle.Options{Unit: u, N: n}, SimHash: sketch.SimHashSpec{Weights: w, Bits: bits}}
	}
	seeded := mh(minhash.OPH, 128, shingle.Word, 3)
	seeded.Shingle.Seed, seeded.MinHash.Seed = 12345, 678
	return []sketch.Spec{
		{}, // the default: OPH, 128 slots, word 5-grams
		seeded,
		mh(minhash.OPH, 64, shingle.Word, 1),
		mh(minhash.OPH, 1000, shingle.Word, 2),
		mh(minhash.OPH, 256, shingle.Char, 3),
		mh(minhash.OPH, 7, shingle.Char, 64),
		mh(minhash.MultiplyShift, 128, shingle.Word, 5),
		mh(minhash.MultiplyShift, 33, shingle.Char, 5),
		sh(sketch.WeightSet, 64, shingle.Word, 5),
		sh(sketch.WeightSet, 128, shingle.Word, 3),
		sh(sketch.WeightSet, 13, shingle.Char, 4),
		sh(sketch.WeightCount, 64, shingle.Char, 4),
		sh(sketch.WeightCount, 100, shingle.Word, 2),
	}
}

// testTexts returns ASCII texts of every shape: empty, no token, fewer
// tokens than n, punctuation and symbols between words, runs of spaces,
// digits, capitals, repeated words, tokens and shingles longer than the
// kernel's 240 bytes, and long documents.
func testTexts(seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	vocab := strings.Fields("a rose is flower which the of and to in 1 42 2024 x9 Zebra QUICK brown fox jumps over lazy dog lorem ipsum dolor sit amet")
	seps := []string{" ", " ", " ", " ", "  ", ", ", ". ", "-", " $ ", "\t", "\n", "!?", " | ", "'", "_"}
	var out [][]byte
	for _, s := range []string{"", " ", "a", "ab", "abc", "abcd", "abcdefgh", "abcdefghi", "$$$ !!!", "one two", "one two three four",
		"x y", strings.Repeat("a", 16), strings.Repeat("b", 17), strings.Repeat("c", 128), strings.Repeat("d", 129),
		strings.Repeat("e", 240), strings.Repeat("f", 241), strings.Repeat("g", 300) + " tail",
		strings.Repeat("w", 100) + " " + strings.Repeat("v", 100) + " " + strings.Repeat("u", 100),
		"  leading and trailing  ", "a,b,c,d,e,f,g,h"} {
		out = append(out, []byte(s))
	}
	for range 400 {
		var b strings.Builder
		n := rng.IntN(60)
		if rng.IntN(20) == 0 {
			n = 2000 + rng.IntN(3000)
		}
		if rng.IntN(50) == 0 {
			n = 4000 + rng.IntN(200) // about MAXSET shingles
		}
		for i := range n {
			if i > 0 {
				b.WriteString(seps[rng.IntN(len(seps))])
			}
			w := vocab[rng.IntN(len(vocab))]
			if rng.IntN(50) == 0 {
				w = strings.Repeat(w, 1+rng.IntN(30))
			}
			b.WriteString(w)
		}
		out = append(out, []byte(b.String()))
	}
	// The same, normalised as the pipeline does.
	norm, _ := text.New(text.DefaultOptions())
	for _, t := range slices.Clone(out) {
		out = append(out, norm.AppendBytes(nil, t))
	}
	return out
}

// cpuResult is what the Go CPU path gives a text: its status and its
// signature or fingerprint.
func cpuResult(t *testing.T, spec sketch.Spec, txt []byte) (uint32, []uint32, [2]uint64) {
	t.Helper()
	sk, err := spec.NewSketcher()
	if err != nil {
		t.Fatal(err)
	}
	sh, _ := shingle.New(sk.Spec().Shingle)
	toks := sh.Tokens(nil, string(txt))
	if len(toks) == 0 {
		return StatusEmpty, nil, [2]uint64{}
	}
	// A shingle longer than 240 bytes makes the kernel give up, as do
	// more than 4096 shingles under SimHash set weights.
	n := min(sh.N(), len(toks))
	if spec.Method == sketch.SimHash && spec.SimHash.Weights == sketch.WeightSet && len(toks)-n+1 > 4096 {
		return StatusFallback, nil, [2]uint64{}
	}
	for i := 0; i+n <= len(toks); i++ {
		l := n - 1
		if sh.Unit() == shingle.Char {
			l = 0
		}
		for _, tk := range toks[i : i+n] {
			l += len(tk)
		}
		if l > 240 {
			return StatusFallback, nil, [2]uint64{}
		}
	}
	var out sketch.Sketch
	sk.SketchNormalized(&out, txt)
	return StatusOK, out.Sig, [2]uint64{out.FP.Lo, out.FP.Hi}
}

func TestKernelOnHost(t *testing.T) {
	texts := testTexts(1)
	for _, spec := range kernelSpecs() {
		c, err := ConfigFor(spec)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%v/%v/k%d/%v-n%d", spec.Method, c.Method, c.K, spec.Shingle.Unit, c.N)
		t.Run(name, func(t *testing.T) {
			got := runHarness(t, c, texts)
			checkResult(t, spec, c, texts, got)
			checkHashes(t, spec, texts, got)
		})
	}
}

// checkHashes compares the kernel's shingle hashes (Config.Hashes) with
// the CPU's, for the documents it signed.
func checkHashes(t *testing.T, spec sketch.Spec, texts [][]byte, got Result) {
	t.Helper()
	sk, _ := spec.NewSketcher()
	off := []uint32{0}
	for _, tx := range texts {
		off = append(off, off[len(off)-1]+uint32(len(tx)))
	}
	for d, tx := range texts {
		want := sk.Shingles(nil, string(tx))
		if got.Status[d] != StatusOK {
			if got.Count[d] != 0 {
				t.Errorf("text %d: status %d with %d hashes", d, got.Status[d], got.Count[d])
			}
			continue
		}
		if h := got.DocHashes(off, d); !slices.Equal(h, want) {
			t.Fatalf("text %d (%d bytes) %.60q: %d hashes %x..., want %d %x...", d, len(tx), tx, len(h), h[:min(3, len(h))], len(want), want[:min(3, len(want))])
		}
	}
}

// checkResult compares the kernel's result for texts with the CPU's.
func checkResult(t *testing.T, spec sketch.Spec, c Config, texts [][]byte, got Result) {
	t.Helper()
	bad := 0
	for d, tx := range texts {
		st, sig, fp := cpuResult(t, spec, tx)
		if got.Status[d] != st {
			t.Errorf("text %d (%d bytes) %.60q: status %d, want %d", d, len(tx), tx, got.Status[d], st)
			bad++
		} else if st == StatusOK {
			if c.Method.MinHash() {
				g := got.Sig[d*c.K : (d+1)*c.K]
				for j := range g {
					if g[j] != sig[j] {
						t.Errorf("text %d (%d bytes) %.60q: slot %d = %d, want %d", d, len(tx), tx, j, g[j], sig[j])
						bad++
						break
					}
				}
			} else if g := [2]uint64{got.FP[2*d], got.FP[2*d+1]}; g != fp {
				t.Errorf("text %d (%d bytes) %.60q: fingerprint %x, want %x", d, len(tx), tx, g, fp)
				bad++
			}
		}
		if bad > 10 {
			t.Fatal("too many differences")
		}
	}
}

// The embedded PTX is the kernel of sign.cu with the Params of the Go
// side (cuda.go's params: 136 bytes); scripts/gen-ptx -check says whether
// it is up to date with the source.
func TestPTX(t *testing.T) {
	b, err := os.ReadFile("kernel/sign.ptx")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".entry sign(", ".param .align 8 .b8 sign_param_0[136]", ".target sm_70"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("kernel/sign.ptx lacks %q: run scripts/gen-ptx", want)
		}
	}
}
