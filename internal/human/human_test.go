package human

import (
	"math"
	"testing"
)

func TestNumber(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {2225, "2,225"},
		{-1, "-1"}, {-1000, "-1,000"}, {123456789, "123,456,789"},
		{math.MaxInt64, "9,223,372,036,854,775,807"}, {math.MinInt64, "-9,223,372,036,854,775,808"},
	} {
		if got := Number(c.n); got != c.want {
			t.Errorf("Number(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	if got := Number(int(24684096)); got != "24,684,096" {
		t.Errorf("Number(int) = %q", got)
	}
}

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 ids"}, {1, "1 id"}, {2, "2 ids"}, {8088, "8,088 ids"}} {
		if got := Plural(c.n, "id"); got != c.want {
			t.Errorf("Plural(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
