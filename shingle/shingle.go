// Package shingle turns text into tokens and n-gram shingles, and shingles into
// stable 64-bit hashes.
//
// # Tokens
//
// Three units are supported:
//
//   - Word: maximal runs of Unicode letters, marks and digits. Every Han,
//     Hiragana, Katakana and Hangul character is a token of its own (as in
//     Lucene's standard tokenizer), so unsegmented CJK text still yields
//     useful word n-grams. Everything else separates tokens.
//   - Char: every rune of the text, whitespace included. Normalise the text
//     first (package text) so that whitespace runs are folded.
//   - CJKWord: Chinese word segmentation with github.com/go-ego/gse (jieba's
//     dictionary and algorithm); non-CJK runs are tokenised as Word. The
//     dictionary is loaded on first use, never before.
//
// # Shingles
//
// A shingle is n consecutive tokens. Its hash is XXH3-64 with a fixed seed
// (DefaultSeed unless Options.Seed is set) of the UTF-8 bytes of its tokens
// joined by a single space (U+0020) for Word and CJKWord, and of the runes
// concatenated for Char. The hashes are stable across platforms, processes
// and versions of this package: they may be persisted.
//
// A text with fewer than n tokens but at least one yields exactly one
// shingle made of all its tokens, so that short texts (a title, a short
// verse) still compare. A text with no tokens yields no shingles.
//
// A set of shingles is the sorted, de-duplicated list of hashes; a bag
// (multiset) is the sorted list with repeats. Both are what package jaccard
// takes.
//
// # Concurrency
//
// A Shingler holds scratch space and is not safe for concurrent use; create
// one per goroutine. The functions of the package are safe.
package shingle

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/go-ego/gse"
	"github.com/zeebo/xxh3"
)

// DefaultSeed is the XXH3 seed used when Options.Seed is zero. Changing it
// changes every persisted hash, so it is fixed forever.
const DefaultSeed uint64 = 0x6e65617264757031 // "neardup1"

// Unit says what a token is.
type Unit uint8

const (
	Word    Unit = iota // Unicode words; CJK ideographs one by one
	Char                // runes
	CJKWord             // gse segmentation of CJK runs, Word elsewhere
)

// String returns the name used on the command line.
func (u Unit) String() string {
	switch u {
	case Word:
		return "word"
	case Char:
		return "char"
	case CJKWord:
		return "cjkword"
	}
	return fmt.Sprintf("Unit(%d)", uint8(u))
}

// ParseUnit parses "word", "char" or "cjkword".
func ParseUnit(s string) (Unit, error) {
	switch s {
	case "word", "":
		return Word, nil
	case "char":
		return Char, nil
	case "cjkword", "cjk":
		return CJKWord, nil
	}
	return 0, fmt.Errorf("unknown unit %q (want word, char or cjkword)", s)
}

// ErrInvalidN is returned for an n-gram size below 1 or above MaxN.
var ErrInvalidN = errors.New("shingle: n-gram size must be between 1 and 64")

// MaxN is the largest n-gram size accepted.
const MaxN = 64

// Options configures a Shingler. The zero value means word 1-grams with
// DefaultSeed; most callers set N.
type Options struct {
	Unit Unit
	// N is the n-gram size; 0 means 1. (The sketch specification,
	// sketch.Spec, and the command line default to 5 instead,
	// sketch.DefaultNgram: this package is the primitive, whose zero is
	// single tokens; set N to match a Spec.)
	N int
	// Seed for the XXH3 hash; 0 means DefaultSeed.
	Seed uint64
}

// Shingler tokenises text and hashes its n-gram shingles. It reuses internal
// buffers between calls: not safe for concurrent use. Its hashing methods
// (AppendHashes, AppendSet, AppendBag) keep neither the text nor any part of
// it once they return, so a caller may pass a string that views a byte
// buffer it reuses afterwards (unsafe.String) instead of copying it.
type Shingler struct {
	unit Unit
	n    int
	seed uint64
	seg  *gse.Segmenter // the shared segmenter, for CJKWord
	// bounds holds the start and the end of each token in turn: token t
	// is text[bounds[2t]:bounds[2t+1]].
	bounds []int32
	buf    []byte
}

// New returns a Shingler for opts.
func New(opts Options) (*Shingler, error) {
	if opts.N == 0 {
		opts.N = 1
	}
	if opts.N < 1 || opts.N > MaxN {
		return nil, fmt.Errorf("%w (got %d)", ErrInvalidN, opts.N)
	}
	switch opts.Unit {
	case Word, Char, CJKWord:
	default:
		return nil, fmt.Errorf("shingle: unknown unit %d", opts.Unit)
	}
	var seg *gse.Segmenter
	if opts.Unit == CJKWord {
		// Loaded here, once per process, so that a dictionary that cannot
		// load is an error rather than word tokens in its place, which
		// would change every sketch without a word.
		var err error
		if seg, err = segmenter(); err != nil {
			return nil, fmt.Errorf("shingle: unit cjk-word: the Chinese word dictionary did not load: %w", err)
		}
	}
	if opts.Seed == 0 {
		opts.Seed = DefaultSeed
	}
	return &Shingler{unit: opts.Unit, n: opts.N, seed: opts.Seed, seg: seg}, nil
}

// N returns the n-gram size.
func (s *Shingler) N() int { return s.n }

// Unit returns the token unit.
func (s *Shingler) Unit() Unit { return s.unit }

// Tokens appends the tokens of text to dst and returns it. It allocates the
// strings; the hashing methods do not.
func (s *Shingler) Tokens(dst []string, text string) []string {
	s.tokenize(text)
	for t := 0; t+1 < len(s.bounds); t += 2 {
		dst = append(dst, text[s.bounds[t]:s.bounds[t+1]])
	}
	return dst
}

// AppendHashes appends the hash of every shingle of text, in text order and
// with repeats, to dst and returns it.
func (s *Shingler) AppendHashes(dst []uint64, text string) []uint64 {
	s.tokenize(text)
	b := s.bounds
	k := len(b) / 2
	if k == 0 {
		return dst
	}
	n := min(s.n, k)
	if n == 1 || s.unit == Char {
		// The gram is a substring: one token, or runes, which are contiguous.
		for i := 0; i+n <= k; i++ {
			dst = append(dst, xxh3.HashStringSeed(text[b[2*i]:b[2*(i+n)-1]], s.seed))
		}
		return dst
	}
	// Normalised text usually separates words by one space: then the gram
	// is a substring too, and joining it would copy the same bytes. split
	// is the last token j <= i that is not separated from token j-1 by
	// exactly one space; the gram of tokens i-n+1..i is a substring when
	// split <= i-n+1.
	split := 0
	for i := 1; i < k; i++ {
		if e := b[2*i-1]; b[2*i] != e+1 || text[e] != ' ' {
			split = i
		}
		first := i - n + 1
		switch {
		case first < 0:
		case split <= first:
			dst = append(dst, xxh3.HashStringSeed(text[b[2*first]:b[2*i+1]], s.seed))
		default:
			dst = append(dst, s.hashJoined(text, b[2*first:2*i+2]))
		}
	}
	return dst
}

// AppendSet appends the sorted, de-duplicated shingle hashes of text to dst.
// Only the appended part is sorted.
func (s *Shingler) AppendSet(dst []uint64, text string) []uint64 {
	start := len(dst)
	dst = s.AppendHashes(dst, text)
	tail := dst[start:]
	slices.Sort(tail)
	return dst[:start+len(slices.Compact(tail))]
}

// AppendBag appends the sorted shingle hashes of text, repeats kept, to dst.
func (s *Shingler) AppendBag(dst []uint64, text string) []uint64 {
	start := len(dst)
	dst = s.AppendHashes(dst, text)
	slices.Sort(dst[start:])
	return dst
}

// hashJoined returns the hash of the tokens whose bounds are toks
// joined by one space.
func (s *Shingler) hashJoined(text string, toks []int32) uint64 {
	b := s.buf[:0]
	for t := 0; t+1 < len(toks); t += 2 {
		if t > 0 {
			b = append(b, ' ')
		}
		b = append(b, text[toks[t]:toks[t+1]]...)
	}
	s.buf = b
	return xxh3.HashSeed(b, s.seed)
}

func (s *Shingler) tokenize(text string) {
	s.bounds = s.bounds[:0]
	switch s.unit {
	case Char:
		for i := 0; i < len(text); {
			_, w := utf8.DecodeRuneInString(text[i:]) // an invalid byte is a token of width 1
			s.bounds = append(s.bounds, int32(i), int32(i+w))
			i += w
		}
	case Word:
		s.bounds = appendWords(s.bounds, text, 0)
	case CJKWord:
		s.bounds = appendCJKWords(s.seg, s.bounds, text)
	}
}

// appendWords appends the bounds of the Word tokens of text (the start
// and the end of each in turn), offset by base, to dst. Text is read eight
// bytes at a time: the ASCII bytes at the start of each eight are
// classified at once (wordMask8), and a token bound is written at each
// step of the mask, without a branch for most of them; a byte from 0x80 up
// starts a rune, which is decoded and classified alone.
func appendWords(dst []int32, text string, base int) []int32 {
	const high = 0x8080808080808080
	// Every byte is at most one bound, plus the end of a token that ends
	// the text; the steps of eight bytes write four bounds unconditionally.
	n0 := len(dst)
	b := slices.Grow(dst, len(text)+5)
	b = b[:cap(b)]
	n := n0 // bounds written
	// in is 1 inside a token (when n-n0 is odd). It is kept apart from n,
	// so that the classes of the next eight bytes do not wait for the
	// count of the bounds of these.
	var in uint64
	for i := 0; i < len(text); {
		// Eight ASCII bytes at a time, as long as they last.
		for ; i+8 <= len(text); i += 8 {
			x := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(text[i:]), 8))
			if x&high != 0 {
				break
			}
			m := wordMask8(x)
			n = putSteps(b, n, int32(base+i), (m^(m<<1|in))&0xFF)
			in = m >> 7
		}
		if i == len(text) {
			break
		}
		var x uint64
		if i+8 <= len(text) {
			x = binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(text[i:]), 8))
		} else {
			var tail [8]byte
			copy(tail[:], text[i:])
			x = binary.LittleEndian.Uint64(tail[:])
		}
		p := min(len(text)-i, 8) // ASCII bytes at the start of x
		if h := x & high; h != 0 {
			p = min(p, bits.TrailingZeros64(h)>>3)
		}
		if p > 0 {
			// m has bit k set when byte k is a word byte; a token starts
			// at each 0-to-1 step and ends at each 1-to-0 step, counting
			// the state before byte 0. A byte from 0x80 up may spoil the
			// classes of the bytes after it, never of those before.
			keep := uint64(1)<<p - 1
			m := wordMask8(x) & keep
			n = putSteps(b, n, int32(base+i), (m^(m<<1|in))&keep)
			in = m >> (p - 1) & 1
			i += p
			if p == 8 || i == len(text) {
				continue
			}
		}
		r, w := utf8.DecodeRuneInString(text[i:])
		switch {
		case isCJK(r):
			if in == 1 {
				b[n] = int32(base + i)
				n++
			}
			b[n], b[n+1] = int32(base+i), int32(base+i+w)
			n += 2
			in = 0
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			if in == 0 {
				b[n] = int32(base + i)
				n++
			}
			in = 1
		default:
			if in == 1 {
				b[n] = int32(base + i)
				n++
			}
			in = 0
		}
		i += w
	}
	if in == 1 {
		b[n] = int32(base + len(text))
		n++
	}
	return b[:n]
}

// putSteps writes a bound at at+k into b from n on for each bit k set in
// steps, and returns the new n. It writes four bounds whatever steps holds
// (past the last, TrailingZeros64(0) writes at+64, which the caller never
// keeps), so that most calls take no branch: b must have room for them.
func putSteps(b []int32, n int, at int32, steps uint64) int {
	c := bits.OnesCount64(steps)
	q := (*[4]int32)(b[n : n+4])
	q[0] = at + int32(bits.TrailingZeros64(steps))
	steps &= steps - 1
	q[1] = at + int32(bits.TrailingZeros64(steps))
	steps &= steps - 1
	q[2] = at + int32(bits.TrailingZeros64(steps))
	steps &= steps - 1
	q[3] = at + int32(bits.TrailingZeros64(steps))
	if c > 4 {
		putRest(b[n+4:], at, steps&(steps-1))
	}
	return n + c
}

// putRest writes the bounds of putSteps after the fourth.
func putRest(b []int32, at int32, steps uint64) {
	for k := 0; steps != 0; k++ {
		b[k] = at + int32(bits.TrailingZeros64(steps))
		steps &= steps - 1
	}
}

// wordMask8 returns the word bytes of x, eight ASCII bytes in
// little-endian order: bit k is set when byte k is an ASCII letter or
// digit, exactly the ASCII runes that unicode.IsLetter and unicode.IsDigit
// accept (no ASCII rune is a mark; TestWordMask8). No addition carries
// from one byte into the next, because every byte is below 0x80.
func wordMask8(x uint64) uint64 {
	const ones = 0x0101010101010101
	y := x | 0x20*ones // A-Z to a-z; no other byte lands in a-z
	letter := (y + (0x80-'a')*ones) &^ (y + (0x80-'z'-1)*ones)
	digit := (x + (0x80-'0')*ones) &^ (x + (0x80-'9'-1)*ones)
	w := (letter | digit) & (0x80 * ones)
	// Gather the eight high bits into the low byte.
	return (w >> 7) * 0x0102040810204080 >> 56
}

// isCJK reports whether r is a character that forms a token on its own
// under Word: Han ideographs, kana and Hangul syllables.
func isCJK(r rune) bool {
	if r < 0x2E80 {
		return false
	}
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}
