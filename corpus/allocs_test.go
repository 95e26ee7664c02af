package corpus

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// TestReadAllocs checks the allocations per document of the line readers:
// the id and text strings the Document holds, nothing else.
func TestReadAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	var jsonl, txt bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&jsonl, `{"id": "doc-%d", "text": "some text number %d", "n": [1, 2, {"x": "y"}]}`+"\n", i, i)
		fmt.Fprintf(&txt, "some text number %d\n", i)
	}
	for _, tc := range []struct {
		name string
		max  float64
		r    Reader
	}{
		{"jsonl", 2, NewJSONL(io.NopCloser(bytes.NewReader(jsonl.Bytes())), "a.jsonl", Options{})},
		{"lines", 3, NewLines(io.NopCloser(bytes.NewReader(txt.Bytes())), "a.txt", Options{})}, // text, FILE:LINE
	} {
		tc.r.Next() // warm up buffers
		got := testing.AllocsPerRun(1000, func() {
			if !tc.r.Next() {
				t.Fatal("input exhausted")
			}
		})
		if got > tc.max {
			t.Errorf("%s: %v allocations per document, want at most %v", tc.name, got, tc.max)
		}
	}
}
