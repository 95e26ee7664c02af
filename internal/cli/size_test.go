package cli

import "testing"

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
