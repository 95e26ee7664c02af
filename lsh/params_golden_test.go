package lsh

import "testing"

func TestOptimalGolden(t *testing.T) {
	for _, tc := range []struct {
		t    float64
		k    int
		want Params
	}{
		{0.5, 128, Params{25, 5}}, {0.7, 128, Params{14, 9}}, {0.8, 128, Params{9, 13}}, {0.9, 128, Params{5, 25}},
		{0.5, 256, Params{42, 6}}, {0.7, 256, Params{25, 10}}, {0.8, 256, Params{17, 15}}, {0.9, 256, Params{9, 28}},
	} {
		got, err := Optimal(tc.t, tc.k, Weights{})
		if err != nil || got != tc.want {
			t.Errorf("Optimal(%v, %d) = %v, %v; want %v", tc.t, tc.k, got, err, tc.want)
		}
	}
}
