// Package ksentence computes KSentence fingerprints (seed 002, "文本去重算法:
// Minhash/Simhash/Klongsent"): split a text into sentences, take the K
// longest, and hash them with MD5. Two documents are duplicates when their
// fingerprints are equal. It assumes that the K longest sentences of two
// copies of a text are identical, so it is precise and fast, finds
// templated copies well, and misses copies whose long sentences were edited
// (seed 002 measures precision above MinHash and SimHash, recall below).
//
// # Sentences
//
// A sentence ends at a newline (LF, CR, U+2028, U+2029), at Chinese and
// full-width sentence punctuation (。｡．！？ and the ellipsis …), at ! and
// ?, and at a full stop '.' followed by white space, the end of the text, a
// closing quote or bracket, or a CJK character, or preceded by a CJK
// character (so "3.14" and "example.com" do not split, and a 。 that
// normalisation turned into '.' still does). Runs of terminators ("?!", "……", "...") and
// the closing quotes and brackets that follow them end one sentence. The
// content of a sentence is its text without the terminators and closing
// marks, with leading and trailing white space removed and inner runs of
// white space folded to one space; empty sentences are dropped. Its length
// is its number of runes. Semicolons and commas do not end sentences.
//
// The input must keep newlines and sentence punctuation: normalise with
// punctuation and newline folding off (the pipeline does so for this
// method).
//
// # Fingerprint
//
// The K longest sentences (Options.K, default 3; ties broken by position,
// earlier first; all of them when there are fewer) are joined, longest
// first, with a newline between them, and hashed with MD5. A text without
// sentences has the MD5 of the empty string. The fingerprint is stable: it
// may be stored and compared across versions.
//
// # Concurrency and errors
//
// A Hasher keeps scratch space and is not safe for concurrent use; create
// one per goroutine. Sum and AppendSentences do not allocate once their
// buffers have grown, accept any bytes (invalid UTF-8 counts one rune per
// bad byte), and never fail. New returns ErrK for K < 0.
package ksentence

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// DefaultK is the number of sentences when Options.K is zero.
const DefaultK = 3

// ErrK is returned for a negative Options.K.
var ErrK = errors.New("ksentence: K must be at least 1")

// Fingerprint is the MD5 of the K longest sentences.
type Fingerprint [md5.Size]byte

// AppendHex appends the fingerprint as 32 lowercase hex digits.
func (f Fingerprint) AppendHex(dst []byte) []byte { return hex.AppendEncode(dst, f[:]) }

// String returns the fingerprint as 32 lowercase hex digits.
func (f Fingerprint) String() string { return hex.EncodeToString(f[:]) }

// Span is a sentence: text[Start:End] with terminators and surrounding
// white space already cut off (inner white space is not folded).
type Span struct {
	Start, End int
	// Runes is the length of the folded content in runes.
	Runes int
}

// Options configures a Hasher. The zero value means K = DefaultK.
type Options struct {
	// K is the number of longest sentences hashed; 0 means DefaultK.
	K int
}

// Hasher computes fingerprints. Not safe for concurrent use.
type Hasher struct {
	k     int
	spans []Span
	top   []int
	buf   []byte
}

// New returns a Hasher for opts.
func New(opts Options) (*Hasher, error) {
	if opts.K == 0 {
		opts.K = DefaultK
	}
	if opts.K < 1 {
		return nil, fmt.Errorf("%w (got %d)", ErrK, opts.K)
	}
	return &Hasher{k: opts.K}, nil
}

// K returns the number of sentences hashed.
func (h *Hasher) K() int { return h.k }

// isTerminator reports whether r always ends a sentence.
func isTerminator(r rune) bool {
	switch r {
	case '\n', '\r', '\u2028', '\u2029', '\u0085',
		'。', '｡', '．', '！', '？', '!', '?', '…', '‼', '⁇', '⁈', '⁉':
		return true
	}
	return false
}

// isCloser reports whether r is a closing quote or bracket that stays with
// the end of a sentence.
func isCloser(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '}', '”', '’', '」', '』', '）', '】', '》', '〉', '〕', '］', '｝', '»', '›':
		return true
	}
	return false
}

func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// fullStopEnds reports whether a '.' followed by text[next:] ends a
// sentence.
func fullStopEnds(text []byte, next int) bool {
	if next >= len(text) {
		return true
	}
	r, _ := utf8.DecodeRune(text[next:])
	return unicode.IsSpace(r) || isCloser(r) || isCJK(r) || r == '.' || isTerminator(r)
}

// afterCJK reports whether the rune before text[i] is a CJK character: a
// '.' there is a Chinese full stop folded to ASCII (text.PunctCanonical
// turns 。 into '.').
func afterCJK(text []byte, i int) bool {
	r, _ := utf8.DecodeLastRune(text[:i])
	return r != utf8.RuneError && isCJK(r)
}

// AppendSentences appends the sentences of text, in order, to dst.
func AppendSentences(dst []Span, text []byte) []Span {
	start := 0
	i := 0
	for i < len(text) {
		r, size := utf8.DecodeRune(text[i:])
		if !(isTerminator(r) || r == '.' && (fullStopEnds(text, i+size) || afterCJK(text, i))) {
			i += size
			continue
		}
		end := i
		// Absorb the run of terminators, full stops and closing marks.
		for i < len(text) {
			r, size = utf8.DecodeRune(text[i:])
			if !(isTerminator(r) || r == '.' || isCloser(r)) {
				break
			}
			i += size
		}
		dst = appendSpan(dst, text, start, end)
		start = i
	}
	return appendSpan(dst, text, start, len(text))
}

// appendSpan trims text[start:end] and appends it when not empty.
func appendSpan(dst []Span, text []byte, start, end int) []Span {
	for start < end {
		r, size := utf8.DecodeRune(text[start:end])
		if !unicode.IsSpace(r) {
			break
		}
		start += size
	}
	for end > start {
		r, size := utf8.DecodeLastRune(text[start:end])
		if !unicode.IsSpace(r) {
			break
		}
		end -= size
	}
	if start == end {
		return dst
	}
	n := 0
	space := false
	for i := start; i < end; {
		r, size := utf8.DecodeRune(text[i:end])
		i += size
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			n++ // the folded space
			space = false
		}
		n++
	}
	return append(dst, Span{Start: start, End: end, Runes: n})
}

// appendFolded appends text with runs of white space folded to one space.
func appendFolded(dst, text []byte) []byte {
	space := false
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		if unicode.IsSpace(r) {
			space = true
			i += size
			continue
		}
		if space {
			dst = append(dst, ' ')
			space = false
		}
		dst = append(dst, text[i:i+size]...)
		i += size
	}
	return dst
}

// longest appends to dst the indexes into spans of the k longest sentences,
// longest first, ties broken by position.
func longest(dst []int, spans []Span, k int) []int {
	dst = dst[:0]
	for i, s := range spans {
		// Insert i into the sorted top list if it beats the last one.
		if len(dst) == k && spans[dst[k-1]].Runes >= s.Runes {
			continue
		}
		if len(dst) < k {
			dst = append(dst, i)
		} else {
			dst[k-1] = i
		}
		for j := len(dst) - 1; j > 0 && spans[dst[j-1]].Runes < s.Runes; j-- {
			dst[j], dst[j-1] = dst[j-1], dst[j]
		}
	}
	return dst
}

// AppendLongest appends the folded contents of the K longest sentences,
// longest first and separated by newlines, to dst: what Sum hashes.
func (h *Hasher) AppendLongest(dst []byte, text []byte) []byte {
	h.spans = AppendSentences(h.spans[:0], text)
	h.top = longest(h.top, h.spans, h.k)
	for n, i := range h.top {
		if n > 0 {
			dst = append(dst, '\n')
		}
		s := h.spans[i]
		dst = appendFolded(dst, text[s.Start:s.End])
	}
	return dst
}

// Sum returns the fingerprint of text. It does not allocate once the
// Hasher's buffers have grown to the size of the texts it sees.
func (h *Hasher) Sum(text []byte) Fingerprint {
	h.buf = h.AppendLongest(h.buf[:0], text)
	return md5.Sum(h.buf)
}
