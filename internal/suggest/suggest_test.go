package suggest

import "testing"

func TestNearest(t *testing.T) {
	names := []string{"threshold", "thresholds", "method", "memory", "num-perm"}
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"treshold", 2, "threshold"},
		{"threshhold", 2, "threshold"},
		{"metod", 2, "method"},
		{"memroy", 2, "memory"}, // a transposition is two edits
		{"mem", 2, ""},
		{"num-perms", 2, "num-perm"},
		{"xyz", 2, ""},
		{"", 2, ""},
		{"threshold", 0, "threshold"},
	} {
		if got := Nearest(c.in, names, c.max); got != c.want {
			t.Errorf("Nearest(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
	// Ties go to the name that sorts first, whatever the order given.
	if got := Nearest("ab", []string{"ac", "aa"}, 1); got != "aa" {
		t.Errorf("tie: %q, want aa", got)
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"same", "same", 0}} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
		if got := editDistance(c.b, c.a); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d (symmetry)", c.b, c.a, got, c.d)
		}
	}
}
