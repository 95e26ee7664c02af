// Package human writes counts for people: 2,225 with thousands separators,
// "1 id" and "2 ids"; and document ids, quoted when they hold a control
// or invisible character (ID). The summaries, warnings, tables and the HTML report
// all write counts through it (JSON and TSV outputs keep plain numbers).
package human

import (
	"strconv"
	"unicode"
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
