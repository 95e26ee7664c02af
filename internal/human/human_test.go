package human

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNumber(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {2225, "2,225"},
		{-1, "-1"}, {-1000, "-1,000"}, {123456789, "123,456,789"},
		{math.MaxInt64, "9,223,372,036,854,775,807"}, {math.MinInt64, "-9,223,372,036,854,775,808"},
	} {
		if got := Number(c.n); got != c.want {
			t.Errorf("Number(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	if got := Number(int(24684096)); got != "24,684,096" {
		t.Errorf("Number(int) = %q", got)
	}
}

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 ids"}, {1, "1 id"}, {2, "2 ids"}, {8088, "8,088 ids"}} {
		if got := Plural(c.n, "id"); got != c.want {
			t.Errorf("Plural(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

// TestClip: a text is cut by the columns it takes on a terminal, not by its
// runes: 70 columns hold 70 Latin letters but 34 Chinese characters and the
// ellipsis (a cut at 70 runes gave Chinese 140 columns), and a mixed text
// counts each of its characters by its width. The cut is between runes and
// the result never takes more than the columns asked for.
func TestClip(t *testing.T) {
	en := strings.Repeat("abcdefghij", 10)  // 100 columns
	zh := strings.Repeat("重复文档检测工具的摘要", 10) // 100 runes, 200 columns
	for _, c := range []struct {
		s    string
		cols int
		want string
	}{
		{en, 70, en[:69] + "…"},
		{en[:70], 70, en[:70]},
		{"short", 70, "short"},
		{zh, 70, string([]rune(zh)[:34]) + "…"},
		{zh[:35*3], 70, zh[:35*3]},                     // 35 characters: 70 columns, no cut
		{zh[:36*3], 70, string([]rune(zh)[:34]) + "…"}, // 36: 34 and the ellipsis
		{"重复ab", 4, "重…"},                              // 复 does not fit in 3 columns; a is not taken past it
		{"重复ab", 5, "重复…"},
		{"ab重复文档", 5, "ab重…"},
		{"ab重复文档", 6, "ab重…"},
		{"ab重复文档", 7, "ab重复…"},
		{"ＡＢＣ", 4, "Ａ…"},                         // fullwidth Latin: 2 columns each
		{"e\u0301e\u0301e\u0301", 2, "e\u0301…"}, // a combining acute stays with its e
		{"重复", 1, "…"},
		{"abc", 0, ""},
	} {
		got := Clip(c.s, c.cols)
		if got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.s, c.cols, got, c.want)
		}
		if !utf8.ValidString(got) || Width(got) > max(c.cols, 0) {
			t.Errorf("Clip(%q, %d) = %q: %d columns or invalid UTF-8", c.s, c.cols, got, Width(got))
		}
	}
	// A Chinese, a mixed and an English snippet cut at 70 take within one
	// column of each other (a wide character does not fit the last column).
	mixed := strings.Repeat("MinHash 去重 test ", 10)
	for _, s := range []string{en, zh, mixed} {
		if w := Width(Clip(s, 70)); w < 69 || w > 70 {
			t.Errorf("Clip(%q, 70) takes %d columns, want 69 or 70", s, w)
		}
	}
	if w := Width("重复a\u0301！"); w != 2+2+1+0+2 {
		t.Errorf("Width = %d, want 7", w)
	}
}

// TestPad: an id is padded to columns, not runes: 日本語 takes 6 columns.
func TestPad(t *testing.T) {
	for _, c := range []struct {
		s    string
		cols int
		want string
	}{{"ab", 5, "ab   "}, {"日本語", 8, "日本語  "}, {"日本語", 6, "日本語"}, {"日本語", 4, "日本語"}} {
		if got := Pad(c.s, c.cols); got != c.want {
			t.Errorf("Pad(%q, %d) = %q, want %q", c.s, c.cols, got, c.want)
		}
	}
}
