package mix

import "testing"

// TestSplitMix64 pins values: signatures, band keys and spill keys are
// computed with it, so a change would silently change them.
func TestSplitMix64(t *testing.T) {
	for _, c := range []struct{ in, want uint64 }{
		{0, 0},
		{1, 0x5692161d100b05e5},
		{0x9e3779b97f4a7c15, 0xe220a8397b1dcdaf},
	} {
		if got := SplitMix64(c.in); got != c.want {
			t.Errorf("SplitMix64(%#x) = %#x, want %#x", c.in, got, c.want)
		}
	}
}

// TestFmix64 pins values (murmur3's reference finaliser).
func TestFmix64(t *testing.T) {
	for _, c := range []struct{ in, want uint64 }{
		{0, 0},
		{1, 0xb456bcfc34c2cb2c},
		{0x9e3779b97f4a7c15, 0x9ca066f1a4ab2eea},
	} {
		if got := Fmix64(c.in); got != c.want {
			t.Errorf("Fmix64(%#x) = %#x, want %#x", c.in, got, c.want)
		}
	}
}
