// Package t2s converts Traditional Chinese to Simplified Chinese with OpenCC's
// dictionaries, in pure Go.
//
// # Algorithm
//
// The conversion is the one OpenCC's t2s.json configuration performs:
//
//  1. Phrases: scanning left to right, at each position the longest entry of
//     TSPhrases that is a prefix of the remaining text is replaced by its
//     simplified form (forward maximum matching). Phrases exist where a
//     character-by-character conversion would be wrong (計畫 -> 计划) and to
//     protect characters that must not change in context (乾隆 stays 乾隆,
//     not 干隆).
//  2. Characters: any other character found in TSCharacters is replaced by
//     its simplified form; where OpenCC lists several candidates the first one
//     is used, as OpenCC does.
//  3. Everything else (Simplified characters, Latin text, punctuation,
//     invalid UTF-8 bytes) is copied unchanged.
//
// [Append], [AppendString] and [String] reproduce `opencc -c t2s.json`
// exactly; the tests compare them with the opencc binary when it is installed.
//
// # Stable conversion
//
// OpenCC's conversion is not idempotent: 變徵 becomes 变徵 (the phrase keeps
// 徵), but converting 变徵 again gives 变征, and 薴 becomes 苧, which is itself
// converted to 苎. A text normaliser must be idempotent, so [AppendStable]
// differs in two ways: the simplified output of every phrase is also treated as
// a phrase that maps to itself (变徵 stays 变徵), and the conversion is repeated
// until the text no longer changes (at most a few rounds; it converges on the
// whole dictionary and on real corpora, which the tests check). It agrees with
// [Append] on Traditional input except for characters like 薴 whose OpenCC
// result is still Traditional.
//
// # Data
//
// The dictionaries (about 24 KB gzip-compressed, from OpenCC 1.1.6, Apache-2.0,
// see LICENSE.OpenCC) are embedded in the binary and decoded on first use,
// once per process, into tables of about 300 KB. [Load] decodes them
// explicitly and reports an error if the embedded data is damaged; the
// conversion functions call it themselves and, should loading fail, copy
// their input unchanged. The data file is regenerated with go generate (see
// internal/gen).
//
// # Concurrency
//
// All functions are safe for concurrent use. The tables are read-only once
// loaded.
package t2s

//go:generate go run ./internal/gen -o t2s.dat.gz

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

//go:embed t2s.dat.gz
var data []byte

// maxPhraseRunes bounds the length of a phrase in characters; the data has
// phrases of up to 14.
const maxPhraseRunes = 32

// stableRounds bounds the number of rounds of AppendStable.
const stableRounds = 4

type phraseTable struct {
	m       map[string]string
	first   []uint8        // BMP rune -> longest phrase (in runes) starting with it; 0 if none
	firstHi map[rune]uint8 // the same for runes above the BMP
}

func (p *phraseTable) add(k, v string) {
	p.m[k] = v
	r, _ := utf8.DecodeRuneInString(k)
	n := uint8(utf8.RuneCountInString(k))
	if r < 0x10000 {
		p.first[r] = max(p.first[r], n)
	} else {
		p.firstHi[r] = max(p.firstHi[r], n)
	}
}

func (p *phraseTable) longest(r rune) int {
	if r < 0x10000 {
		return int(p.first[r])
	}
	return int(p.firstHi[r])
}

type tables struct {
	chars   []uint16      // BMP rune -> simplified rune; 0 if none; inHi if in charsHi
	charsHi map[rune]rune // entries whose key or value is above the BMP
	exact   phraseTable   // TSPhrases as is
	stable  phraseTable   // TSPhrases plus every output mapped to itself
}

var (
	loadOnce sync.Once
	loaded   *tables
	loadErr  error
)

// Load decodes the embedded dictionaries if that has not been done yet and
// reports whether they are usable. It is cheap after the first call.
func Load() error {
	loadOnce.Do(func() {
		loaded, loadErr = parse(data)
		if loadErr != nil {
			loaded = nil
			loadErr = fmt.Errorf("t2s: embedded dictionary: %w", loadErr)
		}
	})
	return loadErr
}

func get() *tables {
	Load()
	return loaded
}

// ErrFormat reports damaged dictionary data.
var ErrFormat = errors.New("malformed data")

func parse(gz []byte) (*tables, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(zr)
	line := 0
	next := func() (string, bool) {
		for sc.Scan() {
			line++
			if s := sc.Text(); !strings.HasPrefix(s, "#") {
				return s, true
			}
		}
		return "", false
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("line %d: %w: %s", line, ErrFormat, fmt.Sprintf(format, args...))
	}
	if s, ok := next(); !ok || s != "neardup-t2s 1" {
		return nil, fail("bad header %q", s)
	}
	section := func(tag string) (int, error) {
		s, ok := next()
		n, err := strconv.Atoi(strings.TrimPrefix(s, tag+" "))
		if !ok || !strings.HasPrefix(s, tag+" ") || err != nil || n <= 0 || n > 1<<20 {
			return 0, fail("want section %s, have %q", tag, s)
		}
		return n, nil
	}
	entry := func() (string, string, error) {
		s, ok := next()
		k, v, cut := strings.Cut(s, "\t")
		if !ok || !cut || k == "" || v == "" || !utf8.ValidString(s) {
			return "", "", fail("bad entry %q", s)
		}
		return k, v, nil
	}

	t := &tables{
		chars:   make([]uint16, 0x10000),
		charsHi: map[rune]rune{},
		exact:   phraseTable{m: map[string]string{}, first: make([]uint8, 0x10000), firstHi: map[rune]uint8{}},
		stable:  phraseTable{m: map[string]string{}, first: make([]uint8, 0x10000), firstHi: map[rune]uint8{}},
	}
	np, err := section("P")
	if err != nil {
		return nil, err
	}
	type pair struct{ k, v string }
	phrases := make([]pair, 0, np)
	for range np {
		k, v, err := entry()
		if err != nil {
			return nil, err
		}
		if n := utf8.RuneCountInString(k); n < 2 || n > maxPhraseRunes {
			return nil, fail("phrase %q has %d characters", k, n)
		}
		phrases = append(phrases, pair{k, v})
		t.exact.add(k, v)
		t.stable.add(k, v)
	}
	for _, p := range phrases {
		if _, ok := t.stable.m[p.v]; !ok && utf8.RuneCountInString(p.v) >= 2 && utf8.RuneCountInString(p.v) <= maxPhraseRunes {
			t.stable.add(p.v, p.v)
		}
	}
	nc, err := section("C")
	if err != nil {
		return nil, err
	}
	for range nc {
		k, v, err := entry()
		if err != nil {
			return nil, err
		}
		kr, kn := utf8.DecodeRuneInString(k)
		vr, vn := utf8.DecodeRuneInString(v)
		if kn != len(k) || vn != len(v) || vr == 0 {
			return nil, fail("character entry %q -> %q is not one character each", k, v)
		}
		switch {
		case kr < 0x10000 && vr < 0x10000 && vr != inHi:
			t.chars[kr] = uint16(vr)
		case kr < 0x10000:
			t.chars[kr] = inHi
			t.charsHi[kr] = vr
		default:
			t.charsHi[kr] = vr
		}
	}
	if s, ok := next(); ok {
		return nil, fail("trailing data %q", s)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return t, nil
}

// inHi in tables.chars sends the lookup to tables.charsHi. U+FFFF is a
// noncharacter, never a conversion result.
const inHi = 0xFFFF

func (t *tables) char(r rune) rune {
	if r < 0x10000 {
		if v := t.chars[r]; v != inHi {
			return rune(v)
		}
	}
	return t.charsHi[r]
}

// convert appends the conversion of src to dst using phrase table p.
func (t *tables) convert(dst, src []byte, p *phraseTable) []byte {
	var ends [maxPhraseRunes]int
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf {
			j := i + 1
			for j < len(src) && src[j] < utf8.RuneSelf {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, c)
			i++
			continue
		}
		if longest := p.longest(r); longest >= 2 {
			n, j := 0, i
			for n < longest && j < len(src) {
				rr, s := utf8.DecodeRune(src[j:])
				if rr == utf8.RuneError && s == 1 {
					break
				}
				j += s
				ends[n] = j
				n++
			}
			matched := false
			for k := n; k >= 2; k-- {
				if v, ok := p.m[string(src[i:ends[k-1]])]; ok {
					dst = append(dst, v...)
					i = ends[k-1]
					matched = true
					break
				}
			}
			if matched {
				continue
			}
		}
		if s := t.char(r); s != 0 {
			dst = utf8.AppendRune(dst, s)
		} else {
			dst = append(dst, src[i:i+size]...)
		}
		i += size
	}
	return dst
}

// unsettled reports whether b holds a character that a further round of
// conversion could change.
func (t *tables) unsettled(b []byte) bool {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		i += size
		if s := t.char(r); s != 0 && s != r {
			return true
		}
	}
	return false
}

// HasTraditional reports whether b holds a character that the conversion
// changes: a Traditional Chinese character (or a variant form) whose
// Simplified form differs. It is meant for telling a user that the
// conversion would matter: text without any character of the CJK ranges
// the dictionaries change (U+346E to U+2B726: no UTF-8 lead byte 0xE3 to
// 0xF0, so not general punctuation such as dashes and quotes) is answered
// without a lookup and without loading the dictionaries.
func HasTraditional(b []byte) bool {
	i := 0
	for ; i < len(b); i++ {
		// Eight ASCII bytes at a time: English text costs a load and a
		// mask a word.
		for i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 == 0 {
			i += 8
		}
		if i < len(b) && b[i] >= 0xE3 && b[i] <= 0xF0 {
			break
		}
	}
	if i >= len(b) {
		return false
	}
	t := get()
	return t != nil && t.unsettled(b[i:])
}

// ChineseWithTraditional reports whether b is Chinese text holding
// Traditional characters: HasTraditional, and Han characters make at
// least a quarter of its letters. An English article naming a place in
// Traditional characters (台灣, 香港) is not counted: the hint that
// HasTraditional feeds tells users of Chinese corpora to turn --t2s on,
// and a few names in other text gain nothing from it (276 of the 11,658
// articles of an English Wikipedia slice held one).
func ChineseWithTraditional(b []byte) bool {
	if !HasTraditional(b) {
		return false
	}
	letters, han := 0, 0
	for _, r := range string(b) {
		if r < utf8.RuneSelf {
			if 'a' <= r|0x20 && r|0x20 <= 'z' {
				letters++
			}
			continue
		}
		if unicode.Is(unicode.Han, r) {
			han++
			letters++
		} else if unicode.IsLetter(r) {
			letters++
		}
	}
	return 4*han >= letters
}

// Append appends the Simplified Chinese form of src to dst and returns the
// extended buffer, exactly as OpenCC's t2s.json conversion would produce it.
// It does not allocate when dst has room for the result. src and dst must
// not overlap.
func Append(dst, src []byte) []byte {
	t := get()
	if t == nil {
		return append(dst, src...)
	}
	return t.convert(dst, src, &t.exact)
}

// AppendString is like [Append] for a string.
func AppendString(dst []byte, src string) []byte {
	return Append(dst, unsafe.Slice(unsafe.StringData(src), len(src)))
}

// String returns the Simplified Chinese form of s, as [Append] computes it.
func String(s string) string {
	return string(AppendString(make([]byte, 0, len(s)), s))
}

var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

// AppendStable appends the idempotent Simplified Chinese form of src to dst:
// AppendStable applied to its own output changes nothing. See the package
// documentation for how it differs from [Append]. It does not allocate when
// dst has room for the result, except in the rare case that a further round
// of conversion is needed, which uses a pooled buffer. src and dst must not
// overlap.
func AppendStable(dst, src []byte) []byte {
	t := get()
	if t == nil {
		return append(dst, src...)
	}
	start := len(dst)
	dst = t.convert(dst, src, &t.stable)
	if !t.unsettled(dst[start:]) {
		return dst
	}
	bp := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(bp)
	for range stableRounds - 1 {
		next := t.convert((*bp)[:0], dst[start:], &t.stable)
		*bp = next
		if bytes.Equal(next, dst[start:]) {
			break
		}
		dst = append(dst[:start], next...)
	}
	return dst
}

// StableString returns the idempotent Simplified Chinese form of s, as
// [AppendStable] computes it.
func StableString(s string) string {
	return string(AppendStable(make([]byte, 0, len(s)), unsafe.Slice(unsafe.StringData(s), len(s))))
}
