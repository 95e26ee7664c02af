package text

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateMain = flag.Bool("update", false, "rewrite the golden files of TestMainTextGolden (text/testdata/main/*.main.txt)")

// TestMainTextGolden pins MainText's output over the pages of
// testdata/main: an index of --html pages holds sketches of this output,
// and records MainVersion with them. When this test fails because the
// extraction was changed on purpose, bump MainVersion (text/main.go) in
// the same change and rewrite the golden files with -update; an index
// made before then warns that its pages were extracted by another version.
func TestMainTextGolden(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("testdata", "main", "*.html"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages in testdata/main (%v)", err)
	}
	for _, p := range pages {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out, found, err := MainText(nil, bytes.NewReader(src))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		got := fmt.Sprintf("found: %v\n%s", found, out)
		gp := strings.TrimSuffix(p, ".html") + ".main.txt"
		if *updateMain {
			if err := os.WriteFile(gp, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(gp)
		if err != nil {
			t.Fatalf("%s: %v (write it with -update)", p, err)
		}
		if got != string(want) {
			t.Errorf("MainText's output of %s changed (MainVersion %d):\n--- want (%s)\n%s\n--- got\n%s\n"+
				"If the change is intended, bump text.MainVersion in text/main.go in the same change (indexes of --html pages record it and warn when it differs), then rewrite the golden files: go test ./text -run TestMainTextGolden -update",
				p, MainVersion, gp, want, got)
		}
	}
}
