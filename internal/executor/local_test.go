package executor

import "testing"

// TestLastLineKeepsErrorBeforeHint: a task's error is followed by the
// CLI's "hint: " line; a failure reports the error (file, line, id) with
// the hint, not the hint alone.
func TestLastLineKeepsErrorBeforeHint(t *testing.T) {
	for _, c := range []struct{ out, want string }{
		{"neardup: a.jsonl:3: missing text field\n", "neardup: a.jsonl:3: missing text field"},
		{"progress\nneardup: a.jsonl:3: missing text field\nhint: --text-field NAME\n", "neardup: a.jsonl:3: missing text field\n  hint: --text-field NAME"},
		{"hint: alone\n", "hint: alone"},
		{"", ""},
	} {
		w := &tailWriter{}
		w.tail = append(w.tail, c.out...)
		if got := w.lastLine(); got != c.want {
			t.Errorf("lastLine of %q = %q, want %q", c.out, got, c.want)
		}
	}
}
