package text

import (
	"flag"
	"io"
	"reflect"
	"testing"
)

func TestRegisterFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := DefaultOptions()
	RegisterFlags(fs, &o)
	if !reflect.DeepEqual(o, DefaultOptions()) {
		t.Fatalf("registering changed the options: %+v", o)
	}
	if err := fs.Parse([]string{"--t2s", "--nfkc=false", "--html", "--stop-words", "--case-fold=false", "--fold-punct=false", "--fold-whitespace=false", "--html-all"}); err != nil {
		t.Fatal(err)
	}
	want := DefaultOptions()
	want.HTMLAll = true
	want.T2S, want.NFKC, want.HTML, want.StopWords, want.CaseFold, want.Punctuation, want.Whitespace = true, false, true, true, false, false, false
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("after parsing: %+v, want %+v", o, want)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n != 8 {
		t.Fatalf("%d flags, want 8", n)
	}
}
