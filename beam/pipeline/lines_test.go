package pipeline

import (
	"strings"
	"testing"
)

// FuzzMetaLine: a metadata line written by metaLineFn reads back to the
// same document, whatever bytes its id holds.
func FuzzMetaLine(f *testing.F) {
	f.Add(int64(0), int64(0), "")
	f.Add(rankOf(3, 17), int64(1<<20), "doc \"7\"\n\t\xff é")
	f.Fuzz(func(t *testing.T, rank, n int64, id string) {
		var l line
		metaLineFn(docMeta{Rank: rank, Len: n, ID: id}, func(_ int64, x line) { l = x })
		var got docMeta
		err := parseMetaFn(strings.TrimSuffix(string(l.Text), "\n"), func(_ int64, m docMeta) { got = m })
		if err != nil || got != (docMeta{Rank: rank, Len: n, ID: id}) {
			t.Fatalf("%q: read back %+v, %v", l.Text, got, err)
		}
	})
}

func TestParseLinesRejectGarbage(t *testing.T) {
	for _, s := range []string{"", "1 2", "x 2 \"a\"", "1 2 a", "1 2 \"a"} {
		if err := parseMetaFn(s, func(int64, docMeta) {}); err == nil {
			t.Errorf("metadata line %q accepted", s)
		}
	}
	for _, s := range []string{"", "1", "a b"} {
		if err := parseEdgeFn(s, func(int64, int64) {}); err == nil {
			t.Errorf("edge line %q accepted", s)
		}
	}
}
