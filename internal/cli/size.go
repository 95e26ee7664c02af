package cli

import (
	"fmt"
	"github.com/neardup/neardup/internal/sharedflags"
)

// parseSize parses a byte size such as 256MB, 1.5GiB, 512k or 1000000
// (sharedflags.ParseSize).
func parseSize(s string) (int64, error) { return sharedflags.ParseSize(s) }

// formatSize renders a byte count with a binary unit.
func formatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// sizeText is a flag that takes a size (256MB, 4GiB) and keeps the text
// given, which the command parses (parseSize) and quotes in its messages;
// its Type names it "size" in --help and docs/cli.md, as --max-doc-bytes'
// is named.
type sizeText string

func (s *sizeText) String() string     { return string(*s) }
func (s *sizeText) Set(v string) error { *s = sizeText(v); return nil }
func (s *sizeText) Type() string       { return "size" }
