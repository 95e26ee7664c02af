package corpus

import (
	"errors"
	"strings"
	"testing"
)

// TestMissingTextNamesFields: a record without the text field says which
// fields it has, so that the right --text-field is one look away.
func TestMissingTextNamesFields(t *testing.T) {
	r := NewStream(strings.NewReader(`{"id":"a","body":"hello","meta":{"x":1}}`+"\n"), "in.jsonl", Options{})
	if r.Next() {
		t.Fatalf("a record without text was read: %+v", r.Doc())
	}
	err := r.Err()
	if !errors.Is(err, ErrMissingText) {
		t.Fatalf("err = %v, want ErrMissingText", err)
	}
	for _, want := range []string{`in.jsonl:1`, `id "a"`, `the record has: "id", "body", "meta"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want it to contain %q", err, want)
		}
	}
}

// TestStreamFormatText: with StreamFormat "txt" a stream is read as one
// document per line, not as JSON.
func TestStreamFormatText(t *testing.T) {
	r := NewStream(strings.NewReader("hello world\nsecond line\n"), "-", Options{StreamFormat: StreamText})
	var got []string
	for r.Next() {
		got = append(got, r.Doc().ID+"="+r.Doc().Text)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if want := "-:1=hello world,-:2=second line"; strings.Join(got, ",") != want {
		t.Errorf("read %q, want %q", strings.Join(got, ","), want)
	}
}
