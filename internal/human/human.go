// Package human writes counts for people: 2,225 with thousands separators,
// "1 id" and "2 ids"; and document ids, quoted when they hold a control
// or invisible character (ID); and texts cut to a number of terminal
// columns (Clip). The summaries, warnings, tables and the HTML report
// all write counts through it (JSON and TSV outputs keep plain numbers).
package human

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"
)

// Number writes n with thousands separators: 1,234,567.
func Number[T int | int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	b := make([]byte, 0, len(s)+len(s)/3+1)
	if neg {
		b = append(b, '-')
	}
	for i := 0; i < len(s); i++ {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return string(b)
}

// Plural writes n and the noun, with an s unless n is 1: "1 id", "2,225
// ids". Nouns whose plural is not noun+"s" are written by the caller.
func Plural[T int | int64](n T, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return Number(n) + " " + noun + "s"
}

// ID is a document id as the summaries and the HTML report show it: as it
// is when every rune of it is graphic, else quoted (Go syntax, as the
// warnings and errors quote ids), so that a tab, a newline, an escape
// sequence or an invisible character in an id neither breaks a line nor
// reaches the terminal (or hides in a page).
func ID(id string) string {
	for _, r := range id {
		if !unicode.IsGraphic(r) || (unicode.IsSpace(r) && r != ' ') {
			return strconv.Quote(id)
		}
	}
	return id
}

// RuneWidth is the columns r takes on a terminal: 2 for an East Asian Wide
// or Fullwidth rune (a Chinese character, a fullwidth comma), 0 for a
// combining mark or a format character (a zero-width joiner), 1 otherwise
// (East Asian Ambiguous runes included, as most terminals draw them).
func RuneWidth(r rune) int {
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	if unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf) {
		return 0
	}
	return 1
}

// Width is the columns s takes on a terminal: the sum of its runes'
// RuneWidth.
func Width(s string) int {
	n := 0
	for _, r := range s {
		n += RuneWidth(r)
	}
	return n
}

// Clip shortens s to at most cols terminal columns, ending it with "…"
// (one column) when it cut, so that a Chinese text takes the columns an
// English one does: 70 columns are 70 Latin letters, or 34 Chinese
// characters and the ellipsis. The cut falls between runes, and a combining
// mark stays with the rune before it. cols < 1 gives "".
func Clip(s string, cols int) string {
	if cols < 1 {
		return ""
	}
	if Width(s) <= cols {
		return s
	}
	used, end := 0, 0
	for i, r := range s {
		w := RuneWidth(r)
		if used+w > cols-1 {
			break
		}
		used += w
		end = i + utf8.RuneLen(r)
	}
	return s[:end] + "…"
}

// Pad appends spaces to s up to cols terminal columns (fmt's %-22s pads to
// 22 runes, which is 44 columns of Chinese); s already as wide is left as
// it is.
func Pad(s string, cols int) string {
	if n := cols - Width(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}
