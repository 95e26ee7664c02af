package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/store"
	"github.com/neardup/neardup/text"
)

// TestExtractionWarning: serve, index query, index add, dedup --against
// and index copy of an index of pages' main content (--html) whose recorded
// extraction version is not this build's, or absent (made before
// versions were recorded), warn once, naming the index and both
// versions; they still run. The current version, --html-all and plain
// indexes give no warning.
func TestExtractionWarning(t *testing.T) {
	in := filepath.Join(t.TempDir(), "pages.jsonl")
	var sb strings.Builder
	for i := range 3 {
		fmt.Fprintf(&sb, "{\"id\":\"p%d\",\"text\":%q}\n", i, fmt.Sprintf("<html><body><nav>Home</nav><p>Page %d says something about rivers, lakes and the sea, at length, in prose.</p></body></html>", i))
	}
	if err := os.WriteFile(in, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	html := text.DefaultOptions()
	html.HTML = true
	const marker = "neardup: warning: --"
	for _, c := range []struct {
		name   string
		create func(dir string) // makes the index in dir
		warn   string           // what the warning says; "" for none
		stats  string           // what index stats says of the extraction
	}{
		{"absent", func(dir string) { storeCreate(t, dir, html, store.NoExtraction) }, "extracted by an older neardup, which recorded no version, and this neardup extracts by version " + fmt.Sprint(text.MainVersion), "by no version recorded"},
		{"other", func(dir string) { storeCreate(t, dir, html, text.MainVersion+1) }, fmt.Sprintf("extracted by version %d, and this neardup extracts by version %d", text.MainVersion+1, text.MainVersion), fmt.Sprintf("by version %d;", text.MainVersion+1)},
		{"current", func(dir string) { cliCreate(t, dir, "--html") }, "", fmt.Sprintf("by version %d;", text.MainVersion)},
		{"html-all", func(dir string) { cliCreate(t, dir, "--html", "--html-all") }, "", ""},
		{"plain", func(dir string) { cliCreate(t, dir) }, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			ix := filepath.Join(tmp, "ix")
			c.create(ix)
			check := func(what string, args ...string) {
				t.Helper()
				code, _, errs := runCLI(args...)
				if code != 0 {
					t.Fatalf("%s: exit %d: %s", what, code, errs)
				}
				n := strings.Count(errs, marker)
				switch {
				case c.warn == "" && n != 0:
					t.Errorf("%s: a warning for an index of the current extraction:\n%s", what, errs)
				case c.warn != "" && (n != 1 || !strings.Contains(errs, c.warn) || !strings.Contains(errs, ix+": the main content") || !strings.Contains(errs, "add the pages again")):
					t.Errorf("%s: stderr has %d warnings, want one saying %q about %s:\n%s", what, n, c.warn, ix, errs)
				}
			}
			code, out, errs := runCLI("index", "stats", "--index", ix)
			if line := "extraction:   main content " + c.stats; code != 0 || strings.Contains(out, "extraction:") != (c.stats != "") || c.stats != "" && !strings.Contains(out, line) || errs != "" {
				t.Errorf("index stats: exit %d, want a line %q (none for no main content):\n%s%s", code, line, out, errs)
			}
			// serve says it once it listens, before the address file.
			ctx, stop := context.WithCancel(context.Background())
			var stderr lockedBuffer
			_, end := serveInProcess(t, ctx, ix, &stderr)
			stop()
			if err := <-end; err != nil {
				t.Fatalf("serve: %v\n%s", err, stderr.String())
			}
			if got := strings.Count(stderr.String(), marker); got != min(len(c.warn), 1) || !strings.Contains(stderr.String(), c.warn) {
				t.Errorf("serve: %d warnings, want %d saying %q:\n%s", got, min(len(c.warn), 1), c.warn, stderr.String())
			}
			check("index query", "index", "query", "--index", ix, "-o", os.DevNull, in)
			check("dedup --against", "dedup", "--against", ix, "-o", os.DevNull, in)
			check("index add", "index", "add", "-q", "--index", ix, in)
			// A copy records the source's version: it warns as its source.
			cp := filepath.Join(tmp, "copy")
			if code, _, errs := runCLI("index", "copy", "-q", "--from", ix, "--to", cp); code != 0 {
				t.Fatalf("copy: exit %d: %s", code, errs)
			}
			ix = cp
			check("index query of the copy", "index", "query", "--index", cp, "-o", os.DevNull, in)
		})
	}
}

// storeCreate makes an empty MinHash index in dir normalising by norm,
// recording the extraction version ext (store.Options.Extraction).
func storeCreate(t *testing.T, dir string, norm text.Options, ext int) {
	t.Helper()
	s, err := store.Create(dir, sketch.Spec{Method: sketch.MinHash, Normalize: &norm}, store.Options{Extraction: ext})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func cliCreate(t *testing.T, dir string, flags ...string) {
	t.Helper()
	if code, _, errs := runCLI(append([]string{"index", "create", "--index", dir}, flags...)...); code != 0 {
		t.Fatalf("index create %v: exit %d: %s", flags, code, errs)
	}
}
