package text

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"unicode/utf8"
	"unsafe"
)

// The ASCII fast path. ASCII text is valid UTF-8 and already in NFKC, its
// case folding is A-Z to a-z, and each byte is one character whose class
// (asciiClass) the options map to one action. AppendBytes skips the UTF-8
// check and NFKC for a text that is all ASCII, and folder.run hands every
// run of ASCII bytes, in any text, to runASCII, which applies the
// per-character steps with one table lookup a byte and copies runs of word
// bytes in bulk. The results equal the per-character path's byte for byte
// (TestASCIIFastPath, FuzzASCIIFastPath).

// Actions of asciiTable.act.
const (
	actNonASCII = iota // a byte from 0x80 up: not handled here
	actWord            // part of a token: written as out (case-folded)
	actSpace           // a separator: owes a space before the next character
	actNewline         // a separator owing a line break (KeepNewlines)
	actEmit            // ends any token and writes out (after the owed separator)
)

// asciiTable is what the per-character steps do to each byte for one set
// of Options.
type asciiTable struct {
	act [256]uint8
	out [256]byte // for actSpace: ' '
	// simple says that every ASCII byte is actWord or actSpace, as with
	// the default options; word[c] is 1 for actWord, 0 otherwise.
	simple bool
	word   [256]uint8
}

// newASCIITable derives, for each ASCII byte, the action that the steps of
// folder (space, control, punct and the token path) take with opts.
func newASCIITable(o *Options) (t asciiTable) {
	// space is what folder.space does with whitespace c of the given kind.
	space := func(c byte, kind int) (uint8, byte) {
		switch {
		case !o.Whitespace:
			return actEmit, c
		case kind == sepNewline && o.KeepNewlines:
			return actNewline, 0
		}
		return actSpace, 0
	}
	for i := range utf8.RuneSelf {
		c := byte(i)
		act, out := uint8(actEmit), c // folder.visible(c)
		switch asciiClass[c] {
		case asciiOther:
			act = actWord
			if o.CaseFold && 'A' <= c && c <= 'Z' {
				out = c + 'a' - 'A'
			}
		case asciiSpace:
			act, out = space(c, sepSpace)
		case asciiNewline:
			act, out = space(c, sepNewline)
		case asciiControl:
			if o.Invisible {
				act, out = space(' ', sepSpace)
			}
		case asciiPunct:
			switch {
			case !o.Punctuation:
			case o.PunctuationMode == PunctCanonical:
				r := canonicalPunct(rune(c))
				if r >= utf8.RuneSelf {
					panic(fmt.Sprintf("text: canonical form of ASCII %q is %q, not ASCII", c, r))
				}
				out = byte(r)
			default:
				act, out = space(' ', sepSpace)
			}
		}
		if act == actSpace {
			out = ' '
		}
		t.act[c], t.out[c] = act, out
	}
	t.simple = true
	for c := range utf8.RuneSelf {
		switch t.act[c] {
		case actWord:
			t.word[c] = 1
		case actSpace:
		default:
			t.simple = false
		}
	}
	return t
}

// runASCII applies the per-character steps to the ASCII bytes at the start
// of src and returns how many it consumed (up to the first byte from 0x80
// up, or all of src). It writes into f.dst by index, with the state in
// locals; with stop words it hands token boundaries to beginToken and
// endToken, which need the token's position.
func (f *folder) runASCII(src []byte) int {
	t := &f.n.ascii
	stop := f.n.stop != nil
	if t.simple && !stop && f.pending != sepNewline {
		return f.runASCIISimple(src)
	}
	// Each byte writes at most one byte, and the first may also write the
	// separator owed before it.
	d := slices.Grow(f.dst, len(src)+1)
	w := len(d)
	d = d[:cap(d)]
	pending, inTok := f.pending, f.inTok
	// sync hands the state to f's methods; load takes it back.
	sync := func() { f.dst, f.pending, f.inTok = d[:w], pending, inTok }
	load := func() { w, pending, inTok = len(f.dst), f.pending, f.inTok; d = f.dst[:cap(f.dst)] }
	// flush writes the owed separator, unless nothing has been written.
	flush := func() {
		if pending != sepNone {
			if w > f.start {
				d[w] = ' '
				if pending == sepNewline {
					d[w] = '\n'
				}
				w++
			}
			pending = sepNone
		}
	}
	end := func() {
		if stop {
			sync()
			f.endToken()
			load()
		}
		inTok = false
	}
	i := 0
	for i < len(src) {
		c := src[i]
		switch t.act[c] {
		case actNonASCII:
			sync()
			return i
		case actWord:
			if !inTok {
				if stop {
					sync()
					f.beginToken()
					load()
				} else {
					flush()
					inTok = true
				}
			}
			for {
				d[w] = t.out[c]
				w++
				i++
				if i == len(src) {
					break
				}
				c = src[i]
				if t.act[c] != actWord {
					break
				}
			}
			continue
		case actSpace:
			if inTok {
				end()
			}
			pending = max(pending, sepSpace)
		case actNewline:
			if inTok {
				end()
			}
			pending = max(pending, sepNewline)
		case actEmit:
			if inTok {
				end()
			}
			flush()
			d[w] = t.out[c]
			w++
		}
		i++
	}
	sync()
	return i
}

// runASCIISimple is runASCII for a simple table without stop words, when
// no line break is owed: every byte is a word byte or a separator, so the
// output is the words joined by single spaces. It has no branch per byte
// but the loop's: each byte is written (its output form, or ' ' for a
// separator) and the write position advances over a word byte, and over
// the first separator after visible output. That space is provisional
// until a word byte follows: at the end of the run it is taken back and
// owed instead, as folder.space would have left it.
func (f *folder) runASCIISimple(src []byte) int {
	t := &f.n.ascii
	d := slices.Grow(f.dst, len(src)+1)
	w := len(d)
	d = d[:cap(d)]
	// open is 1 when the last byte written is visible, so that a
	// separator must write a space; prov is 1 when the last byte written
	// is a provisional space.
	var open, prov uint8
	switch {
	case w == f.start: // nothing written: separators write nothing
	case f.pending == sepSpace:
		d[w] = ' '
		w++
		prov = 1
	default:
		open = 1
	}
	n := len(src)
	if !f.ascii {
		n = asciiPrefix(src)
	}
	// Each byte writes at most one byte at w, and d has room for one
	// more than src after the space above: the writes below stay within
	// d, whose bounds are therefore not checked.
	p := unsafe.Pointer(unsafe.SliceData(d))
	for _, c := range src[:n] {
		x := t.word[c]
		y := x ^ 1
		*(*byte)(unsafe.Add(p, w)) = t.out[c]
		w += int(x | y&open)
		prov = (prov | open) & y
		open = x
	}
	switch {
	case n == 0: // keep the state, take back the space written above
		w -= int(prov)
	case open == 1:
		f.pending, f.inTok = sepNone, true
	default:
		f.pending, f.inTok = sepSpace, false
		w -= int(prov)
	}
	f.dst = d[:w]
	return n
}

// lowerASCII maps A-Z to a-z in b, which holds only ASCII bytes, eight
// bytes at a time.
func lowerASCII(b []byte) {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		// For bytes below 0x80 no addition carries into the next byte:
		// the high bit of x+(0x80-'A') says x >= 'A', that of
		// x+(0x80-'Z'-1) says x > 'Z'.
		upper := (x + (0x80-'A')*ones) &^ (x + (0x80-'Z'-1)*ones) & high
		binary.LittleEndian.PutUint64(b, x|upper>>2)
		b = b[8:]
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
}

// asciiPrefix returns the number of ASCII bytes at the start of b.
func asciiPrefix(b []byte) int {
	i := 0
	// 32 bytes a step while they are ASCII, then the eight that hold the
	// first byte that is not.
	for ; i+32 <= len(b); i += 32 {
		q := b[i : i+32 : i+32]
		x := binary.LittleEndian.Uint64(q) | binary.LittleEndian.Uint64(q[8:]) |
			binary.LittleEndian.Uint64(q[16:]) | binary.LittleEndian.Uint64(q[24:])
		if x&0x8080808080808080 != 0 {
			break
		}
	}
	for ; i+8 <= len(b); i += 8 {
		if x := binary.LittleEndian.Uint64(b[i:]) & 0x8080808080808080; x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for ; i < len(b) && b[i] < utf8.RuneSelf; i++ {
	}
	return i
}

// nonASCIIPrefix returns the number of bytes from 0x80 up at the start of
// b.
func nonASCIIPrefix(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if x := ^binary.LittleEndian.Uint64(b[i:]) & 0x8080808080808080; x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for ; i < len(b) && b[i] >= utf8.RuneSelf; i++ {
	}
	return i
}

// isASCII reports whether b holds only bytes below 0x80.
func isASCII(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
