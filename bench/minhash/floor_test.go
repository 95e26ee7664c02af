package minhashbench

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/zeebo/xxh3"

	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/text"
	"github.com/neardup/neardup/text/t2s"
)

// The floor benchmark (issue 18 item 4) compares neardup's signing path
// with the work no MinHash signer can skip, on the same documents in the
// same run: lower-case the text, split it into words, hash every word
// 5-gram once with XXH3 and keep a one-permutation minimum per slot (128
// slots). Documents are kept raw (not lower-cased) in memory: reading them
// is outside the measurement for every signer alike.
//
//	cd bench/minhash
//	go test -run '^$' -bench 'Floor' -benchtime 5x -count 3 -cpu 1
//	NEARDUP_FLOOR_DATA=../../../shared/data/wiki-slice/docs.jsonl.gz NEARDUP_FLOOR_DOCS=2000 go test ...
//
// NEARDUP_FLOOR_DATA is a docs.jsonl.gz (default: the 2,225 articles of
// shared/data/bbc-news, about 2.4 KB each), NEARDUP_FLOOR_DOCS caps the
// number of documents; without the data the 180 texts of
// minhash/testdata/pairs.tsv are used.

// rawSet is BenchmarkFloor's corpus, not lower-cased.
var rawSet = docSet{nEnv: "NEARDUP_FLOOR_DOCS", pathEnv: "NEARDUP_FLOOR_DATA", n: 1 << 30, name: "bbc-news/docs.jsonl.gz"}

func loadRaw(b *testing.B) ([]string, int64) { return rawSet.load(b) }

// docSet is a benchmark corpus read once: the first n documents (or $nEnv)
// of shared/data/name (or the docs.jsonl.gz at $pathEnv), else the texts
// of minhash/testdata/pairs.tsv; lower-cased when lower is set.
type docSet struct {
	nEnv, pathEnv string
	n             int
	name          string
	lower         bool

	once sync.Once
	docs []string
	size int64
	from string
}

func (s *docSet) load(b *testing.B) ([]string, int64) {
	s.once.Do(func() {
		n := s.n
		if v := os.Getenv(s.nEnv); v != "" {
			n, _ = strconv.Atoi(v)
		}
		path := os.Getenv(s.pathEnv)
		if path == "" {
			path = sharedData(s.name)
		}
		s.docs, s.from = readJSONLGz(path, n), path
		if len(s.docs) == 0 {
			s.docs, s.from = readPairs("../../minhash/testdata/pairs.tsv"), "minhash/testdata/pairs.tsv"
		}
		for i := range s.docs {
			if s.lower {
				s.docs[i] = strings.ToLower(s.docs[i])
			}
			s.size += int64(len(s.docs[i]))
		}
	})
	if len(s.docs) == 0 {
		b.Skip("no corpus")
	}
	return s.docs, s.size
}

// sharedData returns the path of name in the nearest shared/data folder
// of the working directory or one of its parents (the main checkout and
// the worktrees sit at different depths), or name if there is none.
func sharedData(name string) string {
	dir, err := os.Getwd()
	if err != nil {
		return name
	}
	for {
		p := filepath.Join(dir, "shared", "data", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		up := filepath.Dir(dir)
		if up == dir {
			return name
		}
		dir = up
	}
}

// readJSONLGz returns the text fields of the first n records of a
// docs.jsonl.gz, or nil if it cannot be read.
func readJSONLGz(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil
	}
	var docs []string
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<26)
	for sc.Scan() && len(docs) < n {
		var d struct{ Text string }
		if json.Unmarshal(sc.Bytes(), &d) == nil {
			docs = append(docs, d.Text)
		}
	}
	return docs
}

// readPairs returns both texts of every line of a pairs.tsv.
func readPairs(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var docs []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		a, c, _ := strings.Cut(sc.Text(), "\t")
		docs = append(docs, a, c)
	}
	return docs
}

// floorSigner does the floor's work and nothing more: ASCII lower-casing
// through a table (bytes above 0x7F are kept as word bytes), words as runs
// of letters, digits and non-ASCII bytes, the words of a document written
// once into a buffer separated by single spaces so that every 5-gram is a
// substring hashed in place, and each hash's high bits choosing one of 128
// bins that keeps the minimum of its low 32 bits. No densification, no
// Unicode.
type floorSigner struct {
	buf    []byte
	starts []int32 // word i is buf[starts[i]:ends[i]]
	ends   []int32
	sig    [numPerm]uint32
}

var floorLower = func() (t [256]byte) {
	for c := range 256 {
		switch {
		case 'A' <= c && c <= 'Z':
			t[c] = byte(c) + 'a' - 'A'
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c >= 0x80:
			t[c] = byte(c)
		}
	}
	return t
}()

func (f *floorSigner) sign(doc string) *[numPerm]uint32 {
	buf, starts, ends := f.buf[:0], f.starts[:0], f.ends[:0]
	in := false
	for i := 0; i < len(doc); i++ {
		c := floorLower[doc[i]]
		if c == 0 {
			if in {
				ends = append(ends, int32(len(buf)))
				buf = append(buf, ' ')
				in = false
			}
			continue
		}
		if !in {
			starts = append(starts, int32(len(buf)))
			in = true
		}
		buf = append(buf, c)
	}
	if in {
		ends = append(ends, int32(len(buf)))
	}
	f.buf, f.starts, f.ends = buf, starts, ends
	for i := range f.sig {
		f.sig[i] = minhash.Empty
	}
	if len(starts) == 0 {
		return &f.sig
	}
	n := min(ngram, len(starts))
	for i := 0; i+n <= len(starts); i++ {
		h := xxh3.HashSeed(buf[starts[i]:ends[i+n-1]], shingle.DefaultSeed)
		bin := (h >> 32) * numPerm >> 32
		f.sig[bin] = min(f.sig[bin], uint32(h))
	}
	return &f.sig
}

// pathSigner is what `neardup sign` does to a document with the default
// options (dedup's minhash sketcher, tiered join): normalise with
// text.DefaultOptions, look for Traditional Chinese (the run's statistic),
// hash the word 5-grams in text order and sign with OPH at 128 slots.
type pathSigner struct {
	norm   *text.Normalizer
	sh     *shingle.Shingler
	h      *minhash.Hasher
	buf    []byte
	hashes []uint64
	sig    minhash.Signature
	trad   int
}

func newPathSigner(tb testing.TB) *pathSigner {
	norm, err := text.New(text.DefaultOptions())
	if err != nil {
		tb.Fatal(err)
	}
	sh, err := shingle.New(shingle.Options{Unit: shingle.Word, N: ngram})
	if err != nil {
		tb.Fatal(err)
	}
	h, err := minhash.New(minhash.Options{NumPerm: numPerm, Family: minhash.OPH})
	if err != nil {
		tb.Fatal(err)
	}
	return &pathSigner{norm: norm, sh: sh, h: h}
}

func (s *pathSigner) sign(doc string) minhash.Signature {
	s.buf = s.norm.Append(s.buf[:0], doc)
	if t2s.HasTraditional(s.buf) {
		s.trad++
	}
	s.hashes = s.sh.AppendHashes(s.hashes[:0], unsafeString(s.buf))
	s.sig = s.h.Sign(s.sig, s.hashes)
	return s.sig
}

// BenchmarkFloor runs the floor, neardup's signing path and its stages,
// and ekzhu/minhash-lsh (lower-casing and tokenising included, as in
// BenchmarkSignatures) on the same raw documents, one after the other in
// one process. Compare CPU-ns/doc.
func BenchmarkFloor(b *testing.B) {
	docs, size := loadRaw(b)
	ps := newPathSigner(b)
	shingles := 0
	for _, d := range docs {
		ps.sign(d)
		shingles += len(ps.hashes)
	}
	b.Logf("corpus: %d documents, %d bytes, %d word 5-grams, from %s", len(docs), size, shingles, rawSet.from)
	run := func(name string, setup func(), sign func(string)) {
		b.Run(name, func(b *testing.B) {
			if setup != nil {
				setup()
			}
			b.SetBytes(size)
			b.ReportAllocs()
			c0 := processCPU()
			for b.Loop() {
				for _, d := range docs {
					sign(d)
				}
			}
			reportCPU(b, docs, c0)
			report(b, docs)
		})
	}
	var fl floorSigner
	run("floor", nil, func(d string) { fl.sign(d) })
	run("neardup-sign", nil, func(d string) { ps.sign(d) })

	// The stages of neardup-sign, each on its own input, prepared only
	// when a stage runs.
	var norm []string
	var hashes [][]uint64
	prepare := func() {
		if norm != nil {
			return
		}
		for _, d := range docs {
			s := string(ps.norm.Append(nil, d))
			norm = append(norm, s)
			hashes = append(hashes, ps.sh.AppendHashes(nil, s))
		}
	}
	var buf []byte
	run("stage-normalize", nil, func(d string) { buf = ps.norm.Append(buf[:0], d) })
	i := 0
	next := func() int { i++; return (i - 1) % len(docs) }
	run("stage-shingle", prepare, func(string) { ps.hashes = ps.sh.AppendHashes(ps.hashes[:0], norm[next()]) })
	run("stage-oph", prepare, func(string) { ps.sig = ps.h.Sign(ps.sig, hashes[next()]) })

	ek := newEkzhuSigner(b)
	run("ekzhu", nil, func(d string) { ek.sign(strings.ToLower(d)) })
}

// TestFloorSameShingles checks that the floor hashes the same shingles as
// neardup on ASCII text without punctuation inside words: the same number
// of 5-grams, the same hashes.
func TestFloorSameShingles(t *testing.T) {
	var fl floorSigner
	ps := newPathSigner(t)
	for _, d := range []string{"", "one", "The quick brown Fox jumps over the lazy dog", "a  b\tc\nd e f g, h: i"} {
		fl.sign(d)
		ps.sign(d)
		if len(fl.starts) != len(ps.sh.Tokens(nil, string(ps.buf))) {
			t.Errorf("%q: floor %d words, neardup %d", d, len(fl.starts), len(ps.sh.Tokens(nil, string(ps.buf))))
		}
		var want [numPerm]uint32
		for i := range want {
			want[i] = minhash.Empty
		}
		for _, h := range ps.hashes {
			bin := (h >> 32) * numPerm >> 32
			want[bin] = min(want[bin], uint32(h))
		}
		if fl.sig != want {
			t.Errorf("%q: the floor's bins differ from the minima of neardup's shingle hashes", d)
		}
	}
}

// unsafeString views b as a string, as dedup's textView does: the shingler
// keeps no part of it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
