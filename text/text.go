package text

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/text/unicode/norm"

	"github.com/neardup/neardup/text/t2s"
)

// PunctuationMode says what the Punctuation step does with punctuation.
type PunctuationMode uint8

const (
	// PunctSpace replaces every punctuation character with a space, so that
	// the words on either side stay apart; with Whitespace on, the spaces
	// then fold with their neighbours. "Hello, world!" becomes
	// "hello world". This is the default.
	PunctSpace PunctuationMode = iota
	// PunctCanonical keeps punctuation but folds each family of variants
	// to one ASCII character, for callers that split sentences after
	// normalisation: double quotes of every kind, 「」『』《》〈〉 become '"';
	// single quotes '\''; dashes (category Pd, including 〜) '-'; 。 '.';
	// 、 ','; other opening brackets '(' and closing ones ')'; ・ and ‧
	// '·'. NFKC has already turned full-width ！？，：；（） and … into
	// ASCII. Other punctuation is kept as it is.
	PunctCanonical
)

func (m PunctuationMode) String() string {
	switch m {
	case PunctSpace:
		return "space"
	case PunctCanonical:
		return "canonical"
	}
	return fmt.Sprintf("PunctuationMode(%d)", uint8(m))
}

// Options selects the normalisation steps. Every step can be switched on
// alone, except that KeepNewlines and StopWords need Whitespace; the zero
// value switches everything off, in which case normalisation only
// replaces invalid UTF-8 with U+FFFD. Use [DefaultOptions] for the usual
// set. The package documentation describes the steps and their order.
type Options struct {
	// NFKC applies Unicode compatibility normalisation (NFKC): full-width
	// ASCII becomes ASCII, ligatures and circled or superscript forms
	// are expanded, CJK compatibility ideographs become unified ones, and
	// composed and decomposed accents agree. Default on.
	NFKC bool
	// CaseFold maps every character to its simple case folding, which for
	// almost all letters is the lowercase letter (see the package
	// documentation for the exact mapping). Default on.
	CaseFold bool
	// Whitespace replaces each run of Unicode whitespace with one ASCII
	// space and removes whitespace at both ends. Default on.
	Whitespace bool
	// KeepNewlines, with Whitespace, makes a run of whitespace that
	// contains a line break (LF, CR, VT, FF, NEL, U+2028, U+2029) fold to
	// one '\n' instead of a space, so that line-based sentence splitting
	// still works after normalisation. Default off. It requires
	// Whitespace.
	KeepNewlines bool
	// Punctuation folds punctuation (Unicode category P, which includes the
	// full-width CJK punctuation ，。！？；：「」『』《》、…—) as
	// PunctuationMode says. Symbols (category S: $ + < = > ^ ` | ~,
	// currency, emoji) are not punctuation and are kept, except the
	// box-drawing lines used as dashes (─), which fold with dashes.
	// Default on.
	Punctuation bool
	// PunctuationMode chooses what the Punctuation step does; the zero
	// value is PunctSpace.
	PunctuationMode PunctuationMode
	// Invisible removes invisible format characters (category Cf: zero
	// width space, zero width (non-)joiner, word joiner, soft hyphen, byte
	// order mark, bidirectional marks) and turns other control characters
	// (category Cc that are not whitespace, such as NUL or ESC) into
	// spaces. Default on.
	Invisible bool
	// HTML treats the input as an HTML document and extracts its main
	// content with [MainText] (or, with HTMLAll, its whole visible text
	// with [HTMLToText]) before the other steps. Block elements become
	// line breaks (kept only with KeepNewlines). Default off.
	HTML bool
	// HTMLAll, with HTML, keeps the whole page's visible text, template
	// and navigation included, instead of its main content: the HTML step
	// as it was before issue 31. Default off.
	HTMLAll bool
	// T2S converts Traditional Chinese to Simplified Chinese with OpenCC's
	// dictionaries (package [github.com/neardup/neardup/text/t2s], stable
	// variant). Default off. The dictionaries are loaded on first use.
	T2S bool
	// StopWords removes stop words. A token is a maximal run of characters
	// that are neither whitespace nor punctuation; a token that is in the
	// stop list is removed with the separator before it. Single Han
	// characters in the list are removed wherever they occur instead. The
	// list is StopWordList, or [EnglishStopWords] and [ChineseStopWords]
	// when that is nil. Default off. It requires Whitespace.
	StopWords bool
	// StopWordList replaces the built-in stop words when it is not nil.
	// Each entry is normalised with the other options when the Normalizer
	// is built, so entries may be written in any case or script; an entry
	// that normalises to nothing is ignored, and one that normalises to
	// more than one token is an error.
	StopWordList []string
}

// DefaultOptions returns the default steps: NFKC, CaseFold, Whitespace,
// Punctuation (PunctSpace) and Invisible on; KeepNewlines, HTML, T2S and
// StopWords off.
func DefaultOptions() Options {
	return Options{NFKC: true, CaseFold: true, Whitespace: true, Punctuation: true, Invisible: true}
}

// ErrOptions is wrapped by the errors of [New] for invalid Options.
var ErrOptions = errors.New("text: invalid options")

// Normalizer applies the steps chosen by its Options. It is immutable once
// built and safe for concurrent use by multiple goroutines; build one and
// share it.
type Normalizer struct {
	opts      Options
	stop      map[string]struct{} // whole-token stop words
	stopChars map[rune]struct{}   // single Han characters removed anywhere
	pool      sync.Pool           // of *scratch
	ascii     asciiTable          // what the per-character steps do to each ASCII byte
	// slow turns the ASCII fast paths off (tests compare both paths).
	slow bool
}

type scratch struct {
	html, valid, nfkcBuf, t2s, round []byte
	iter                             norm.Iter // kept here because norm's Append allocates
	slow                             bool      // Normalizer.slow: no ASCII fast paths
}

// nfkc appends the NFKC form of in, which must be valid UTF-8, to dst
// without allocating.
//
// CJK unified ideographs (U+3400-4DBF, U+4E00-9FFF) are NFKC-inert: normal,
// starters, and never composed with a neighbour, so there are normalisation
// boundaries on both sides of each (TestNFKCInert checks this). Runs of them
// are copied without table lookups, and the text between them is normalised
// piece by piece. Within a piece, text that passes NFKC's quick check is
// copied and only the segments that fail it go through norm.Iter, which is
// several times faster than normalising everything after the first failure.
func (s *scratch) nfkc(dst, in []byte) []byte {
	for len(in) > 0 {
		i := 0
		for i+3 <= len(in) && inert(in[i:]) {
			i += 3
		}
		dst = append(dst, in[:i]...)
		in = in[i:]
		j := 0
		for j < len(in) {
			if in[j] < utf8.RuneSelf && !s.slow {
				j += asciiPrefix(in[j:]) // never inert
				continue
			}
			if in[j] >= 0xE3 && j+3 <= len(in) && inert(in[j:]) {
				break
			}
			j++
		}
		dst = s.nfkcPiece(dst, in[:j])
		in = in[j:]
	}
	return dst
}

// fullwidthASCII returns the ASCII character whose full-width form (or,
// for the space, the ideographic space) b starts with, or 0.
func fullwidthASCII(b []byte) byte {
	if len(b) < 3 {
		return 0
	}
	switch {
	case b[0] == 0xEF && b[1] == 0xBC && 0x81 <= b[2] && b[2] <= 0xBF: // U+FF01-FF3F
		return b[2] - 0x81 + '!'
	case b[0] == 0xEF && b[1] == 0xBD && 0x80 <= b[2] && b[2] <= 0x9E: // U+FF40-FF5E
		return b[2] - 0x80 + '`'
	case b[0] == 0xE3 && b[1] == 0x80 && b[2] == 0x80: // U+3000
		return ' '
	}
	return 0
}

// nfkcQuick reports whether b passes NFKC's quick check, skipping ASCII
// and CJK ideographs cheaply, so that text already in NFKC is not copied.
func (s *scratch) nfkcQuick(b []byte) bool {
	p := s.quickSpan(b)
	if p == len(b) {
		return true
	}
	b = b[p:]
	for len(b) > 0 {
		i := 0
		for i+3 <= len(b) && inert(b[i:]) {
			i += 3
		}
		b = b[i:]
		j := 0
		for j < len(b) && !(b[j] >= 0xE3 && j+3 <= len(b) && inert(b[j:])) {
			j++
		}
		if s.quickSpan(b[:j]) < j {
			return false
		}
		b = b[j:]
	}
	return true
}

// inert reports whether b starts with the UTF-8 form of a CJK unified
// ideograph of the BMP.
func inert(b []byte) bool {
	if len(b) < 3 || b[0] < 0xE3 || b[0] > 0xE9 || b[1]&0xC0 != 0x80 || b[2]&0xC0 != 0x80 {
		return false
	}
	r := rune(b[0]&0x0F)<<12 | rune(b[1]&0x3F)<<6 | rune(b[2]&0x3F)
	return (0x3400 <= r && r <= 0x4DBF) || (0x4E00 <= r && r <= 0x9FFF)
}

// nfkcPiece appends the NFKC form of in to dst, segment by segment.
func (s *scratch) nfkcPiece(dst, in []byte) []byte {
	p := s.quickSpan(in)
	for {
		dst = append(dst, in[:p]...)
		in = in[p:]
		if len(in) == 0 {
			return dst
		}
		// Fast path for the commonest characters of CJK text that NFKC
		// changes: full-width ASCII (U+FF01-FF5E) and the ideographic
		// space, whose NFKC forms are one ASCII character, when what
		// follows cannot combine with that character (the end of the
		// piece, which is followed by an inert character, ASCII, or more
		// full-width ASCII).
		if c := fullwidthASCII(in); c != 0 && (len(in) == 3 || in[3] < utf8.RuneSelf || fullwidthASCII(in[3:]) != 0) {
			dst = append(dst, c)
			in = in[3:]
			p = s.quickSpan(in)
			continue
		}
		// in starts at a boundary; normalise the segment up to the next one.
		q := norm.NFKC.NextBoundary(in, true)
		if q <= 0 {
			q = len(in)
		}
		s.iter.Init(norm.NFKC, in[:q])
		for !s.iter.Done() {
			dst = append(dst, s.iter.Next()...)
		}
		in = in[q:]
		p = s.quickSpan(in)
	}
}

// quickSpanMin is the shortest text for which quickSpan skips ASCII
// itself.
const quickSpanMin = 64

// quickSpan returns a length p such that b[:p] is in NFKC and b[p:] starts
// at a normalisation boundary: norm.NFKC.QuickSpan(b), or a shorter such
// prefix. Runs of ASCII are skipped eight bytes at a time, and QuickSpan
// only sees the non-ASCII runs between them. This is sound because an
// ASCII character is a starter that is in NFKC, and no composition has
// one as its second character: there is a boundary before each, and a
// non-ASCII run that passes the quick check alone passes it after ASCII.
// A run that fails at its start may fail because its first character
// composes with the ASCII character before it (e + U+0301), so the
// boundary returned is then before that character.
func (s *scratch) quickSpan(b []byte) int {
	if s.slow || len(b) < quickSpanMin {
		// Short pieces (between CJK ideographs) gain nothing from it.
		return norm.NFKC.QuickSpan(b)
	}
	i := 0
	for {
		i += asciiPrefix(b[i:])
		if i == len(b) {
			return i
		}
		j := i + nonASCIIPrefix(b[i:])
		q := norm.NFKC.QuickSpan(b[i:j])
		switch {
		case q == j-i:
			i = j
		case q == 0 && i > 0:
			return i - 1
		default:
			return i + q
		}
	}
}

// New validates opts and returns a Normalizer for them. With T2S on it loads
// the conversion dictionaries, and reports an error if they are damaged.
func New(opts Options) (*Normalizer, error) {
	if opts.PunctuationMode > PunctCanonical {
		return nil, fmt.Errorf("%w: unknown PunctuationMode %d", ErrOptions, opts.PunctuationMode)
	}
	if opts.KeepNewlines && !opts.Whitespace {
		return nil, fmt.Errorf("%w: KeepNewlines requires Whitespace", ErrOptions)
	}
	if opts.HTMLAll && !opts.HTML {
		return nil, fmt.Errorf("%w: HTMLAll (--html-all) requires HTML (--html)", ErrOptions)
	}
	if opts.StopWords && !opts.Whitespace {
		return nil, fmt.Errorf("%w: StopWords requires Whitespace", ErrOptions)
	}
	if opts.T2S {
		if err := t2s.Load(); err != nil {
			return nil, err
		}
	}
	opts.StopWordList = append([]string(nil), opts.StopWordList...)
	n := &Normalizer{opts: opts, ascii: newASCIITable(&opts)}
	n.pool.New = func() any { return new(scratch) }
	if opts.StopWords {
		if err := n.buildStopWords(); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func (n *Normalizer) buildStopWords() error {
	custom := n.opts.StopWordList != nil
	list := n.opts.StopWordList
	if !custom {
		list = append(EnglishStopWords(), ChineseStopWords()...)
	}
	o := n.opts
	o.StopWords, o.HTML, o.HTMLAll, o.KeepNewlines = false, false, false, false
	plain, err := New(o)
	if err != nil {
		return err
	}
	n.stop = map[string]struct{}{}
	n.stopChars = map[rune]struct{}{}
	for _, w := range list {
		s := plain.String(w)
		if s == "" {
			continue
		}
		if strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) || isDashSymbol(r) }) {
			return fmt.Errorf("%w: stop word %q normalises to %q, more than one token", ErrOptions, w, s)
		}
		if r, size := utf8.DecodeRuneInString(s); size == len(s) && unicode.Is(unicode.Han, r) {
			n.stopChars[r] = struct{}{}
		} else {
			n.stop[s] = struct{}{}
		}
	}
	if len(n.stopChars) == 0 {
		n.stopChars = nil
	}
	return nil
}

// Options returns the options n was built with.
func (n *Normalizer) Options() Options {
	o := n.opts
	o.StopWordList = append([]string(nil), o.StopWordList...)
	return o
}

// maxRounds bounds the passes of Append; see the package documentation.
const maxRounds = 3

// Append appends the normalised form of src to dst and returns the extended
// buffer. The appended text is valid UTF-8 whatever src holds. Without the
// HTML step, Append does not allocate once its internal buffers have grown
// to the size of the input, provided dst has room for the result.
func (n *Normalizer) Append(dst []byte, src string) []byte {
	return n.AppendBytes(dst, unsafe.Slice(unsafe.StringData(src), len(src)))
}

// AppendBytes is like Append for a byte slice. src and dst must not overlap.
func (n *Normalizer) AppendBytes(dst, src []byte) []byte {
	dst, _ = n.appendBytes(dst, src)
	return dst
}

// AppendFound is like Append, and also reports whether the HTML step
// found the main content of src ([MainText]): false when it fell back to
// the whole visible text or found no text at all. It is true without
// the HTML step and with HTMLAll, which look for no main content.
func (n *Normalizer) AppendFound(dst []byte, src string) (out []byte, found bool) {
	return n.appendBytes(dst, unsafe.Slice(unsafe.StringData(src), len(src)))
}

func (n *Normalizer) appendBytes(dst, src []byte) ([]byte, bool) {
	s := n.pool.Get().(*scratch)
	defer n.put(s)
	s.slow = n.slow
	in := src
	ascii := false
	found := true
	if n.opts.HTML {
		// A bytes.Reader never fails, so neither does the extraction.
		s.html, found, _ = ExtractHTML(s.html[:0], bytes.NewReader(src), n.opts.HTMLAll)
		in = s.html
	} else if n.islands() {
		// runNFKC finds the ASCII and makes the islands valid itself.
	} else if ascii = !n.slow && isASCII(in); ascii {
		// ASCII is valid UTF-8 and in NFKC: neither needs checking.
	} else if !utf8.Valid(in) {
		// Before NFKC, which leaves text after an invalid byte alone.
		s.valid = appendValid(s.valid[:0], in)
		in = s.valid
	}
	start := len(dst)
	for round := 1; ; round++ {
		var changed bool
		dst, changed = n.pass(dst, in, s, ascii)
		ascii = false
		// Removing characters or case folding can leave text that NFKC
		// would change (a combining mark meets a new base character), so
		// the result would not be a fixed point. Such text goes round
		// again; this is rare and needs at most one more round in
		// practice.
		if !changed || !n.opts.NFKC || round == maxRounds {
			return dst, found
		}
		if s.nfkcQuick(dst[start:]) {
			return dst, found
		}
		s.round = s.nfkc(s.round[:0], dst[start:])
		if bytes.Equal(s.round, dst[start:]) {
			return dst, found
		}
		in = s.round
		dst = dst[:start]
	}
}

// appendValid appends b to dst with every byte that is not part of a valid
// UTF-8 sequence replaced by U+FFFD.
func appendValid(dst, b []byte) []byte {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, b[:size]...)
		}
		b = b[size:]
	}
	return dst
}

// maxPooled is the largest scratch buffer kept for reuse, so that one huge
// document does not pin its buffers for the life of the Normalizer.
const maxPooled = 1 << 20

func (n *Normalizer) put(s *scratch) {
	for _, b := range []*[]byte{&s.html, &s.valid, &s.nfkcBuf, &s.t2s, &s.round} {
		if cap(*b) > maxPooled {
			*b = nil
		}
	}
	n.pool.Put(s)
}

// String returns the normalised form of s.
func (n *Normalizer) String(s string) string {
	return string(n.Append(make([]byte, 0, len(s)+len(s)/8), s))
}

// pass runs the steps after HTML once. changed reports that characters were
// removed or case-folded outside ASCII. ascii says that in is all ASCII,
// which NFKC leaves as it is.
func (n *Normalizer) pass(dst, in []byte, s *scratch, ascii bool) (out []byte, changed bool) {
	if n.islands() {
		f := folder{n: n, o: &n.opts, dst: dst, start: len(dst)}
		f.runNFKC(in, s)
		f.endToken()
		return f.dst, f.changed
	}
	if n.opts.NFKC && !ascii {
		if !s.nfkcQuick(in) {
			s.nfkcBuf = s.nfkc(s.nfkcBuf[:0], in)
			in = s.nfkcBuf
		}
	}
	if n.opts.T2S {
		s.t2s = t2s.AppendStable(s.t2s[:0], in)
		in = s.t2s
	}
	f := folder{n: n, o: &n.opts, dst: dst, start: len(dst), ascii: ascii}
	f.run(in)
	f.endToken()
	return f.dst, f.changed
}

// islands reports whether pass uses runNFKC: with NFKC, without T2S
// (which would need the whole of NFKC's output), with the fast paths.
func (n *Normalizer) islands() bool { return n.opts.NFKC && !n.opts.T2S && !n.slow }

// runNFKC is run for NFKC's output of src, without copying src through
// NFKC: it hands the ASCII runs of src, which NFKC leaves as they are,
// to run directly, and normalises only the non-ASCII islands between
// them, each with the ASCII byte before it (which the island's first
// character may compose with: e + U+0301), into s.nfkcBuf. There is a
// normalisation boundary before every ASCII character (a starter that no
// composition takes as its second character), so the pieces are
// normalised independently and their forms concatenated are NFKC's form
// of src (TestNFKCIslands, FuzzASCIIFastPath against the per-character
// path). The one check of run that looks across two characters,
// foldedBeforeMark, is repeated where a piece meets what was handed to
// run before it. src
// need not be valid UTF-8: an island that is not has each invalid byte
// replaced with U+FFFD first, as AppendBytes does to the whole text on
// the other paths (an ASCII byte always starts a character, so the
// replacements are the same).
func (f *folder) runNFKC(src []byte, s *scratch) {
	// last is the last byte handed to run (0 if none: only a capital
	// matters).
	var last byte
	for i := 0; i < len(src); {
		j := i + asciiPrefix(src[i:])
		f.ascii = true
		if j == len(src) {
			f.run(src[i:])
			return
		}
		k := j // the island's piece starts at k
		if j > i {
			k = j - 1
			f.run(src[i:k])
		}
		if k > i {
			last = src[k-1]
		}
		f.ascii = false
		e := j + nonASCIIPrefix(src[j:])
		piece := src[k:e]
		if !utf8.Valid(src[j:e]) {
			s.valid = appendValid(append(s.valid[:0], src[k:j]...), src[j:e])
			piece = s.valid
		}
		// Copying the piece costs less than a quick check first.
		s.nfkcBuf = s.nfkc(s.nfkcBuf[:0], piece)
		piece = s.nfkcBuf
		if len(piece) > 0 {
			f.foldedBeforeMark([]byte{last, piece[0]}, 1)
			f.run(piece)
			last = piece[len(piece)-1]
		}
		i = e
	}
}

// folder is the state of the per-character steps: invisible characters,
// case folding, punctuation, whitespace and stop words.
type folder struct {
	n       *Normalizer
	o       *Options
	dst     []byte
	start   int  // len(dst) on entry
	ascii   bool // the text handed to run holds only ASCII
	pending int  // separator owed before the next visible character
	inTok   bool // inside a token
	tokSep  int  // separator written before the current token
	sepAt   int  // len(dst) before that separator
	tokAt   int  // len(dst) where the current token starts
	changed bool
}

func (f *folder) run(src []byte) {
	o := f.o
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf && !f.n.slow {
			i += f.runASCII(src[i:])
			f.foldedBeforeMark(src, i)
			continue
		}
		if c < utf8.RuneSelf {
			// The reference path for ASCII, which runASCII must equal
			// (TestASCIIFastPath, FuzzASCIIFastPath).
			if asciiClass[c] == asciiOther {
				// A run of ASCII letters, digits and symbols.
				j := i + 1
				for j < len(src) && src[j] < utf8.RuneSelf && asciiClass[src[j]] == asciiOther {
					j++
				}
				f.beginToken()
				if o.CaseFold {
					for _, b := range src[i:j] {
						if 'A' <= b && b <= 'Z' {
							b += 'a' - 'A'
						}
						f.dst = append(f.dst, b)
					}
				} else {
					f.dst = append(f.dst, src[i:j]...)
				}
				i = j
				f.foldedBeforeMark(src, i)
				continue
			}
			i++
			switch asciiClass[c] {
			case asciiSpace:
				f.space(sepSpace, rune(c))
			case asciiNewline:
				f.space(sepNewline, rune(c))
			case asciiControl:
				f.control(rune(c))
			case asciiPunct:
				f.punct(rune(c))
			}
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		i += size
		if 0x4E00 <= r && r < 0xA000 { // CJK unified ideographs: letters without case
			f.tokenRune(r)
			continue
		}
		switch {
		case unicode.IsSpace(r):
			if isNewline(r) {
				f.space(sepNewline, r)
			} else {
				f.space(sepSpace, r)
			}
		case r < 0xA0: // C1 controls
			f.control(r)
		case o.Invisible && unicode.Is(unicode.Cf, r):
			f.changed = true
		case unicode.IsPunct(r) || isDashSymbol(r):
			f.punct(r)
		default:
			if o.CaseFold {
				if fr := foldRune(r); fr != r {
					r = fr
					f.changed = true
				}
			}
			f.tokenRune(r)
		}
	}
}

// foldedBeforeMark marks the pass as changed when an ASCII capital that
// CaseFold lowered is followed by a non-ASCII character (src[i]): a
// combining mark may compose with the small letter where it did not with
// the capital (H + U+0331 is in NFKC, h + U+0331 is U+1E96), so the text
// must go round again.
func (f *folder) foldedBeforeMark(src []byte, i int) {
	if f.o.CaseFold && i > 0 && i < len(src) && src[i] >= utf8.RuneSelf && 'A' <= src[i-1] && src[i-1] <= 'Z' {
		f.changed = true
	}
}

// flush writes the pending separator, unless nothing has been written yet.
func (f *folder) flush() {
	if f.pending != sepNone {
		if len(f.dst) > f.start {
			if f.pending == sepNewline {
				f.dst = append(f.dst, '\n')
			} else {
				f.dst = append(f.dst, ' ')
			}
		}
		f.pending = sepNone
	}
}

func (f *folder) beginToken() {
	if f.inTok {
		return
	}
	f.sepAt = len(f.dst)
	f.tokSep = sepNone
	if len(f.dst) > f.start {
		f.tokSep = f.pending
	}
	f.flush()
	f.tokAt = len(f.dst)
	f.inTok = true
}

func (f *folder) endToken() {
	if !f.inTok {
		return
	}
	f.inTok = false
	if f.n.stop == nil {
		return
	}
	if _, ok := f.n.stop[string(f.dst[f.tokAt:])]; ok {
		f.dst = f.dst[:f.sepAt]
		f.pending = max(f.pending, f.tokSep)
		f.changed = true
	}
}

func (f *folder) tokenRune(r rune) {
	if f.n.stopChars != nil {
		if _, ok := f.n.stopChars[r]; ok {
			f.changed = true
			return
		}
	}
	f.beginToken()
	if r == utf8.RuneError {
		f.dst = append(f.dst, "\uFFFD"...)
		return
	}
	f.dst = utf8.AppendRune(f.dst, r)
}

// visible writes r, which ends any token and is not part of one.
func (f *folder) visible(r rune) {
	f.endToken()
	f.flush()
	f.dst = utf8.AppendRune(f.dst, r)
}

// space handles whitespace r of the given kind.
func (f *folder) space(kind int, r rune) {
	f.endToken()
	if !f.o.Whitespace {
		f.dst = utf8.AppendRune(f.dst, r)
		return
	}
	if kind == sepNewline && !f.o.KeepNewlines {
		kind = sepSpace
	}
	f.pending = max(f.pending, kind)
}

func (f *folder) control(r rune) {
	if f.o.Invisible {
		f.space(sepSpace, ' ')
		return
	}
	f.visible(r)
}

func (f *folder) punct(r rune) {
	switch {
	case !f.o.Punctuation:
		f.visible(r)
	case f.o.PunctuationMode == PunctCanonical:
		f.visible(canonicalPunct(r))
	default:
		f.space(sepSpace, ' ')
	}
}
