package pipeline

import (
	"testing"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/text"
)

// TestReadOptionsOf: the workers read with the corpus options `neardup
// dedup` reads with (dedup.Options.ReaderOptions): under --html the web
// archive readers keep the main content (HTMLMain), under --html-all the
// whole page, and without --html the text as it is.
func TestReadOptionsOf(t *testing.T) {
	for _, tc := range []struct {
		name      string
		html, all bool
		want      bool
	}{
		{"plain", false, false, false},
		{"html", true, false, true},
		{"html-all", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			norm := text.DefaultOptions()
			norm.HTML, norm.HTMLAll = tc.html, tc.all
			opts := Options{TextField: "body", IDField: "url", MaxDocBytes: 1 << 20}
			opts.Config.Method = "minhash"
			opts.Config.Spec.Normalize = &norm
			got, err := readOptionsOf(opts)
			if err != nil {
				t.Fatal(err)
			}
			want, err := opts.Config.ReaderOptions(corpus.Options{TextField: "body", IDField: "url", MaxDocBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			if c := got.corpus(nil); c.HTMLMain != tc.want || c.HTMLMain != want.HTMLMain || c.TextField != want.TextField || c.IDField != want.IDField || c.MaxDocBytes != want.MaxDocBytes {
				t.Errorf("reader options %+v, want %+v (HTMLMain %v)", c, want, tc.want)
			}
		})
	}
}
