package report

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/neardup/neardup/internal/human"
)

// EditKind says what an Edit does.
type EditKind uint8

// The kinds of edit.
const (
	Equal  EditKind = iota // text in both A and B
	Delete                 // text only in A
	Insert                 // text only in B
)

// String returns "equal", "delete" or "insert".
func (k EditKind) String() string {
	switch k {
	case Equal:
		return "equal"
	case Delete:
		return "delete"
	case Insert:
		return "insert"
	}
	return fmt.Sprintf("EditKind(%d)", uint8(k))
}

// Edit is one step of a diff: a piece of text kept, deleted from A or
// inserted from B.
type Edit struct {
	Kind EditKind
	Text string
}

// ErrDiff is returned by Apply when the edits do not fit the text.
var ErrDiff = errors.New("report: edits do not apply to the text")

// Tokenize splits s into the tokens the diff works on: maximal runs of
// letters, marks and digits (except that every Han, kana and Hangul
// character stands alone, as in package shingle), maximal runs of
// whitespace, and every other character on its own. The tokens
// concatenated give s back, byte for byte (invalid UTF-8 included).
func Tokenize(s string) []string {
	var toks []string
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		j := i + n
		switch {
		case isWordRune(r) && !isIdeograph(r):
			for j < len(s) {
				r, n := utf8.DecodeRuneInString(s[j:])
				if !isWordRune(r) || isIdeograph(r) {
					break
				}
				j += n
			}
		case unicode.IsSpace(r):
			for j < len(s) {
				r, n := utf8.DecodeRuneInString(s[j:])
				if !unicode.IsSpace(r) {
					break
				}
				j += n
			}
		}
		toks = append(toks, s[i:j])
		i = j
	}
	return toks
}

func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r))
}

func isIdeograph(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// DiffText returns a readable word-level diff of a and b: the Myers diff of
// their tokens (see Tokenize and Diff), with runs of changes that are
// separated only by whitespace joined into one deletion and one insertion,
// so that a changed phrase reads as a phrase. Applying the result to a
// gives b (see Apply).
func DiffText(a, b string) []Edit {
	return readable(Diff(Tokenize(a), Tokenize(b)))
}

// Diff returns a shortest edit script turning the token list a into b
// (Myers, "An O(ND) difference algorithm and its variations",
// Algorithmica 1986, with the linear-space bisection), as edits whose Text
// is the concatenation of their tokens; consecutive edits have different
// kinds, and a deletion comes before the insertion it sits beside. It takes
// O((N+M)·D) time for N and M tokens and D differences, and O(N+M) space.
// The work is bounded by about 10^6 + 500·(N+M) token comparisons, enough
// for a shortest script up to a few hundred differences at any size; past
// it the parts still to be compared are reported as one deletion and one
// insertion each, which is still a correct script, if not a shortest one.
func Diff(a, b []string) []Edit {
	return diffBudgeted(a, b, diffBudgetBase+diffBudgetPerToken*(len(a)+len(b)))
}

func diffBudgeted(a, b []string, budget int) []Edit {
	// Intern the tokens so that comparisons are integer compares.
	ids := make(map[string]int32, len(a)+len(b))
	intern := func(toks []string) []int32 {
		out := make([]int32, len(toks))
		for i, t := range toks {
			id, ok := ids[t]
			if !ok {
				id = int32(len(ids))
				ids[t] = id
			}
			out[i] = id
		}
		return out
	}
	d := &differ{a: intern(a), b: intern(b), budget: budget}
	d.diff(0, len(a), 0, len(b))
	return d.edits(a, b)
}

// The token comparisons of one Diff are bounded by diffBudgetBase +
// diffBudgetPerToken·(N+M).
const (
	diffBudgetBase     = 1_000_000
	diffBudgetPerToken = 500
)

// step is one token-level operation of the script.
type step struct {
	kind EditKind
	n    int // tokens
}

type differ struct {
	a, b   []int32
	steps  []step
	budget int
}

func (d *differ) emit(k EditKind, n int) {
	if n == 0 {
		return
	}
	if l := len(d.steps); l > 0 && d.steps[l-1].kind == k {
		d.steps[l-1].n += n
		return
	}
	d.steps = append(d.steps, step{k, n})
}

// diff emits the script for a[aLo:aHi] against b[bLo:bHi].
func (d *differ) diff(aLo, aHi, bLo, bHi int) {
	pre := 0
	for aLo+pre < aHi && bLo+pre < bHi && d.a[aLo+pre] == d.b[bLo+pre] {
		pre++
	}
	d.emit(Equal, pre)
	aLo, bLo = aLo+pre, bLo+pre
	suf := 0
	for aLo < aHi-suf && bLo < bHi-suf && d.a[aHi-suf-1] == d.b[bHi-suf-1] {
		suf++
	}
	aHi, bHi = aHi-suf, bHi-suf
	switch {
	case aLo == aHi:
		d.emit(Insert, bHi-bLo)
	case bLo == bHi:
		d.emit(Delete, aHi-aLo)
	default:
		x, y, ok := d.bisect(d.a[aLo:aHi], d.b[bLo:bHi])
		if ok && (x > 0 || y > 0) && (x < aHi-aLo || y < bHi-bLo) {
			d.diff(aLo, aLo+x, bLo, bLo+y)
			d.diff(aLo+x, aHi, bLo+y, bHi)
		} else {
			d.emit(Delete, aHi-aLo)
			d.emit(Insert, bHi-bLo)
		}
	}
	d.emit(Equal, suf)
}

// bisect finds a point (x, y) on a shortest path from (0, 0) to (n, m)
// where the forward and the reverse searches meet. It reports false when
// the budget runs out.
func (d *differ) bisect(a, b []int32) (x, y int, ok bool) {
	n, m := len(a), len(b)
	maxD := (n + m + 1) / 2
	off := maxD
	vlen := 2*maxD + 2
	v1 := make([]int, 2*vlen)
	v2 := v1[vlen:]
	v1 = v1[:vlen]
	for i := range v1 {
		v1[i], v2[i] = -1, -1
	}
	v1[off+1], v2[off+1] = 0, 0
	delta := n - m
	front := delta%2 != 0
	var k1start, k1end, k2start, k2end int
	for dd := 0; dd < maxD; dd++ {
		if d.budget -= 2*dd + 2; d.budget < 0 {
			return 0, 0, false
		}
		for k1 := -dd + k1start; k1 <= dd-k1end; k1 += 2 {
			i := off + k1
			var x1 int
			if k1 == -dd || (k1 != dd && v1[i-1] < v1[i+1]) {
				x1 = v1[i+1]
			} else {
				x1 = v1[i-1] + 1
			}
			y1 := x1 - k1
			x0 := x1
			for x1 < n && y1 < m && a[x1] == b[y1] {
				x1++
				y1++
			}
			d.budget -= x1 - x0
			v1[i] = x1
			switch {
			case x1 > n:
				k1end += 2
			case y1 > m:
				k1start += 2
			case front:
				j := off + delta - k1
				if j >= 0 && j < vlen && v2[j] != -1 && x1 >= n-v2[j] {
					return x1, y1, true
				}
			}
		}
		for k2 := -dd + k2start; k2 <= dd-k2end; k2 += 2 {
			i := off + k2
			var x2 int
			if k2 == -dd || (k2 != dd && v2[i-1] < v2[i+1]) {
				x2 = v2[i+1]
			} else {
				x2 = v2[i-1] + 1
			}
			y2 := x2 - k2
			x0 := x2
			for x2 < n && y2 < m && a[n-x2-1] == b[m-y2-1] {
				x2++
				y2++
			}
			d.budget -= x2 - x0
			v2[i] = x2
			switch {
			case x2 > n:
				k2end += 2
			case y2 > m:
				k2start += 2
			case !front:
				j := off + delta - k2
				if j >= 0 && j < vlen && v1[j] != -1 {
					x1 := v1[j]
					y1 := x1 - (j - off)
					if x1 >= n-x2 {
						return x1, y1, true
					}
				}
			}
		}
	}
	return 0, 0, false
}

// edits turns the steps into Edits, deletions before insertions in every
// run of changes.
func (d *differ) edits(a, b []string) []Edit {
	var out []Edit
	i, j := 0, 0
	var del, ins strings.Builder
	flush := func() {
		if del.Len() > 0 {
			out = append(out, Edit{Delete, del.String()})
			del.Reset()
		}
		if ins.Len() > 0 {
			out = append(out, Edit{Insert, ins.String()})
			ins.Reset()
		}
	}
	for _, s := range d.steps {
		switch s.kind {
		case Equal:
			flush()
			out = append(out, Edit{Equal, strings.Join(a[i:i+s.n], "")})
			i += s.n
			j += s.n
		case Delete:
			del.WriteString(strings.Join(a[i:i+s.n], ""))
			i += s.n
		case Insert:
			ins.WriteString(strings.Join(b[j:j+s.n], ""))
			j += s.n
		}
	}
	flush()
	return dropEmpty(out)
}

func dropEmpty(es []Edit) []Edit {
	out := es[:0]
	for _, e := range es {
		if e.Text != "" {
			out = append(out, e)
		}
	}
	return out
}

// readable joins changes separated only by whitespace: the whitespace
// joins both the deletion and the insertion.
func readable(es []Edit) []Edit {
	var out []Edit
	var del, ins strings.Builder
	changed := false // del/ins hold a pending change
	flush := func() {
		if del.Len() > 0 {
			out = append(out, Edit{Delete, del.String()})
		}
		if ins.Len() > 0 {
			out = append(out, Edit{Insert, ins.String()})
		}
		del.Reset()
		ins.Reset()
		changed = false
	}
	for i, e := range es {
		switch e.Kind {
		case Delete:
			del.WriteString(e.Text)
			changed = true
		case Insert:
			ins.WriteString(e.Text)
			changed = true
		case Equal:
			if changed && i+1 < len(es) && strings.TrimSpace(e.Text) == "" {
				del.WriteString(e.Text)
				ins.WriteString(e.Text)
				continue
			}
			flush()
			out = append(out, e)
		}
	}
	flush()
	return out
}

// Apply applies edits to a: it checks that the Equal and Delete texts
// spell a, in order, and returns the Equal and Insert texts, which spell
// the other side of the diff. It returns ErrDiff when they do not fit.
func Apply(a string, edits []Edit) (string, error) {
	var b strings.Builder
	rest := a
	for i, e := range edits {
		switch e.Kind {
		case Equal, Delete:
			var ok bool
			if rest, ok = strings.CutPrefix(rest, e.Text); !ok {
				return "", fmt.Errorf("%w: edit %d (%s %q) does not match %q", ErrDiff, i, e.Kind, e.Text, clip(rest, 40))
			}
			if e.Kind == Equal {
				b.WriteString(e.Text)
			}
		case Insert:
			b.WriteString(e.Text)
		default:
			return "", fmt.Errorf("%w: edit %d has kind %v", ErrDiff, i, e.Kind)
		}
	}
	if rest != "" {
		return "", fmt.Errorf("%w: %d bytes of the text left over", ErrDiff, len(rest))
	}
	return b.String(), nil
}

// clip shortens s to at most n terminal columns (human.Clip: a Chinese
// character takes two), adding "…" when it cut.
func clip(s string, n int) string { return human.Clip(s, n) }
