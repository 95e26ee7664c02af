package cli

import "testing"

// TestCountNounGroupsThousands: counts in messages group their digits as
// the summary does ("2,225 ids are used by more than one document", not
// "2225").
func TestCountNounGroupsThousands(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{1, "1 id"}, {2, "2 ids"}, {2225, "2,225 ids"}, {1234567, "1,234,567 ids"}} {
		if got := countNoun(c.n, "id", "ids"); got != c.want {
			t.Errorf("countNoun(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
