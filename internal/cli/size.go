package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parseSize parses a byte size such as 256MB, 1.5GiB, 512k or 1000000.
// Decimal (KB, MB, GB, TB) and binary (KiB, MiB, GiB, TiB) units are
// accepted; a bare K, M, G or T is binary.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("invalid size %q (want e.g. 256MB or 2GiB)", s)
	}
	mult := map[string]float64{
		"": 1, "b": 1,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("invalid size unit in %q (want B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", s)
	}
	if v*mult > 1<<62 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v * mult), nil
}

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

// sizeFlag is an int flag that takes a size with a unit (64MB, 1GiB) as
// well as a plain number of bytes.
type sizeFlag int

func (f *sizeFlag) String() string { return strconv.Itoa(int(*f)) }

func (f *sizeFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	if n > math.MaxInt32 {
		return fmt.Errorf("size %q is above the 2 GiB a record may take", s)
	}
	*f = sizeFlag(n)
	return nil
}

func (f *sizeFlag) Type() string { return "size" }
