package text

import "unicode"

// foldRune returns the case folding of r used by the CaseFold step: r itself
// if r has no case orbit (unicode.SimpleFold(r) == r), otherwise
// unicode.ToLower(unicode.ToUpper(r)). This sends every character of a case
// orbit to one member, almost always the lowercase letter. It equals
// Unicode's simple case folding (CaseFolding.txt, status C and S) except for
// Cherokee, which Unicode folds to the uppercase letters and this folds to
// the lowercase ones. Full folding (ß -> ss) is not done: ß stays ß, and ẞ
// becomes ß; İ (U+0130) and ı (U+0131) have no orbit and stay as they are.
func foldRune(r rune) rune {
	if r < 0x80 {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}
	if caseless(r) || unicode.SimpleFold(r) == r {
		return r
	}
	return unicode.ToLower(unicode.ToUpper(r))
}

// caseless reports, for some large blocks, that r has no case, so the table
// searches can be skipped: CJK, kana, Hangul, Yi and their neighbours.
func caseless(r rune) bool {
	return (0x2E80 <= r && r < 0xA640) || (0xAC00 <= r && r < 0xD800) ||
		(0xF900 <= r && r < 0xFB00) || (0x20000 <= r && r < 0x40000)
}

// Classes of ASCII bytes.
const (
	asciiOther = iota
	asciiSpace
	asciiNewline
	asciiControl
	asciiPunct
)

var asciiClass = func() (t [128]uint8) {
	for c := range 128 {
		switch {
		case c == '\n' || c == '\r' || c == '\v' || c == '\f':
			t[c] = asciiNewline
		case c == ' ' || c == '\t':
			t[c] = asciiSpace
		case c < 0x20 || c == 0x7F:
			t[c] = asciiControl
		case unicode.IsPunct(rune(c)):
			t[c] = asciiPunct
		}
	}
	return t
}()

// isDashSymbol reports whether r is one of the box-drawing or bracket
// extension lines that Chinese texts commonly type in place of a dash
// (耶和华─你 神). They are symbols (category So/Sm), not punctuation, but the
// Punctuation step treats them as dashes.
func isDashSymbol(r rune) bool {
	switch r {
	case 0x2500, 0x2501, 0x2574, 0x2576, 0x2578, 0x257A, 0x23AF, 0x23E4:
		return true
	}
	return false
}

// isNewline reports whether the whitespace rune r breaks lines.
func isNewline(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// canonicalPunct returns the canonical form of punctuation rune r for
// PunctCanonical: one ASCII character for each family of variants, or r
// itself when r has no family.
func canonicalPunct(r rune) rune {
	switch r {
	case '"', '“', '”', '„', '‟', '«', '»', '「', '」', '『', '』', '〝', '〞', '〟',
		'《', '》', '〈', '〉', '⹂':
		return '"'
	case '\'', '‘', '’', '‚', '‛', '‹', '›':
		return '\''
	case '。', '｡':
		return '.'
	case '、', '､', '﹑':
		return ','
	case '・', '‧', '･':
		return '·'
	}
	switch {
	case unicode.Is(unicode.Pd, r) || isDashSymbol(r):
		return '-'
	case unicode.Is(unicode.Pi, r) || unicode.Is(unicode.Pf, r):
		return '"'
	case unicode.Is(unicode.Ps, r):
		return '('
	case unicode.Is(unicode.Pe, r):
		return ')'
	}
	return r
}
