package cli

import "testing"

func TestReportSource(t *testing.T) {
	tests := []struct {
		sample bool
		files  []string
		want   string
	}{
		{true, []string{"-"}, "the embedded sample corpus (sample/bible.jsonl)"},
		{false, []string{"a.jsonl", "-"}, "a.jsonl, standard input"},
		{false, []string{"1", "2", "3", "4", "5", "6", "7"}, "1, 2, 3, 4, 5 and 2 more files"},
	}
	for _, tt := range tests {
		if got := reportSource(tt.sample, tt.files); got != tt.want {
			t.Errorf("reportSource(%v, %q) = %q, want %q", tt.sample, tt.files, got, tt.want)
		}
	}
}
