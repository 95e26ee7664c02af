package corpus

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

func TestLines(t *testing.T) {
	in := "first line\r\n\n  \nsecond \"quoted\" \\ line\twith tab\nlast without newline"
	got, err := readAll(NewLines(nopCloser(in), "f.txt", Options{}))
	want := []doc{
		{ID: "f.txt:1", Text: "first line", Raw: `{"id":"f.txt:1","text":"first line"}`, Record: 1},
		{ID: "f.txt:4", Text: "second \"quoted\" \\ line\twith tab", Raw: `{"id":"f.txt:4","text":"second \"quoted\" \\ line\twith tab"}`, Record: 4},
		{ID: "f.txt:5", Text: "last without newline", Raw: `{"id":"f.txt:5","text":"last without newline"}`, Record: 5},
	}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, %v\nwant %v", got, err, want)
	}
}

// TestLinesBOM: a UTF-8 byte order mark that starts a text file (Windows
// editors write one) is no part of its first document; it was kept at the
// head of the first text, and of the record -o wrote. One on a later line
// is text, and a line of a BOM alone is blank.
func TestLinesBOM(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"\ufefffirst\nsecond \ufeff\n", "[{f.txt:1 first {\"id\":\"f.txt:1\",\"text\":\"first\"} 1} {f.txt:2 second \ufeff {\"id\":\"f.txt:2\",\"text\":\"second \ufeff\"} 2}]"},
		{"\ufeff\nsecond\n", `[{f.txt:2 second {"id":"f.txt:2","text":"second"} 2}]`},
	} {
		got, err := readAll(NewLines(nopCloser(c.in), "f.txt", Options{}))
		if err != nil || fmt.Sprint(got) != c.want {
			t.Errorf("%q: got %v, %v\nwant %s", c.in, got, err, c.want)
		}
	}
}

func TestLinesInvalid(t *testing.T) {
	in := "good\nbad \xff\ngood again\n"
	_, err := readAll(NewLines(nopCloser(in), "f.txt", Options{}))
	var re *RecordError
	if !errors.As(err, &re) || !errors.Is(err, ErrInvalidUTF8) || re.Record != 2 || re.Offset != 5 || re.ID != "f.txt:2" {
		t.Errorf("err = %#v, want ErrInvalidUTF8 at f.txt:2 offset 5", err)
	}
	// The message says where the bad byte is, as the JSONL reader's does
	// (it said only "invalid UTF-8").
	if want := `f.txt:2 (offset 5) id "f.txt:2": invalid UTF-8 (byte 0xff at byte 5 of the line)`; err == nil || err.Error() != want {
		t.Errorf("message %v, want %s", err, want)
	}
	got, err := readAll(NewLines(nopCloser(in), "f.txt", Options{OnInvalid: func(*RecordError) error { return nil }}))
	if err != nil || len(got) != 2 || got[1].ID != "f.txt:3" {
		t.Errorf("skipping: got %v, %v; want lines 1 and 3", got, err)
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\", "ctl\x00\x01\x1f\x7f", "<a&b>", "日本語", "\u2028\u2029", "tab\tnl\ncr\r"} {
		b := AppendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil || back != s {
			t.Errorf("AppendJSONString(%q) = %s, decodes to %q, %v", s, b, back, err)
		}
	}
	if got := string(AppendJSONString(nil, "a\xffb")); got != `"a\ufffdb"` {
		t.Errorf("AppendJSONString(invalid) = %s, want \"a\\ufffdb\"", got)
	}
}
