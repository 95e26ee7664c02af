package cli

import (
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"256MB", 256e6, true},
		{"256MiB", 256 << 20, true},
		{"1.5GiB", 3 << 29, true},
		{"512k", 512 << 10, true},
		{"1000", 1000, true},
		{" 2 GB ", 2e9, true},
		{"", 0, false},
		{"MB", 0, false},
		{"12XB", 0, false},
		{"-5MB", 0, false},
		{"9999999TB", 0, false},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	if got := formatSize(3 << 29); got != "1.5 GiB" {
		t.Errorf("formatSize(1.5GiB) = %q", got)
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"256MB", "1.5GiB", "", "x", "1e400GB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := parseSize(s); err == nil && n < 0 {
			t.Fatalf("parseSize(%q) = %d", s, n)
		}
	})
}

// TestSizeFlagsTyped: a flag whose help gives a size as an example (256MB,
// 4GiB) or whose default is one is shown as a size in --help and
// docs/cli.md, not as a string (--memory was a string).
func TestSizeFlagsTyped(t *testing.T) {
	example := regexp.MustCompile(`\b\d+(\.\d+)?[KMGT]i?B\b`)
	root := newRootCmd(&env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
	var walk func(c *cobra.Command)
	seen := 0
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			sizeDefault := f.DefValue != "" && example.MatchString(f.DefValue)
			if !example.MatchString(f.Usage) && !sizeDefault {
				return
			}
			seen++
			if typ := f.Value.Type(); typ != "size" {
				t.Errorf("%s --%s takes a size (%q) but --help shows it as %s", c.CommandPath(), f.Name, f.Usage, typ)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if seen < 3 {
		t.Errorf("%d size flags found: the test no longer finds --memory, --task-memory, --max-doc-bytes", seen)
	}
}
