package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/neardup/neardup/dedup"
	"github.com/vbauerster/mpb/v8/decor"
)

// TestDocsRate: a rate is given with the precision it has, never rounded
// or truncated to 0 (1 document in 1.5 s was "0 docs/s"), and not at all
// with no document or over less than a millisecond (a rate made of the
// 1 ms the time was raised to).
func TestDocsRate(t *testing.T) {
	for _, c := range []struct {
		n    int64
		d    time.Duration
		want string
	}{
		{1, 1500 * time.Millisecond, "0.67 docs/s"},
		{3, 1000 * time.Second, "0.0030 docs/s"},
		{5, 2 * time.Second, "2.5 docs/s"},
		{150, 3 * time.Second, "50 docs/s"},
		{123456, time.Second, "123,456 docs/s"},
		{2, 2 * time.Millisecond, "1,000 docs/s"},
		{0, time.Second, ""},
		{2, 200 * time.Microsecond, ""},
		{2, 0, ""},
	} {
		if got := docsRate(c.n, c.d); got != c.want {
			t.Errorf("docsRate(%d, %v) = %q, want %q", c.n, c.d, got, c.want)
		}
	}
	if got := rateNumber(0.0086); got != "0.0086" {
		t.Errorf("rateNumber(0.0086) = %q", got)
	}
}

// TestProgressLineRate: a progress line gives no rate before its first
// document ("0 docs/s") and a slow one to two digits.
func TestProgressLineRate(t *testing.T) {
	if got, want := progressLine("sign", 0, 0, 5*time.Second, 5*time.Second), "sign: 0 docs; 5s elapsed"; got != want {
		t.Errorf("progressLine = %q, want %q", got, want)
	}
	if got, want := progressLine("sign", 2, 0, 3*time.Second, 5*time.Second), "sign: 2 docs, 0.67 docs/s; 5s elapsed"; got != want {
		t.Errorf("progressLine = %q, want %q", got, want)
	}
}

// TestBarRate: a bar ends without a rate when its stage had none to give
// ("0 docs/s  done" before).
func TestBarRate(t *testing.T) {
	if got := rateDecor(decor.Statistics{Completed: true}, "", 0, time.Second); got != "  done" {
		t.Errorf("rateDecor = %q, want %q", got, "  done")
	}
	if got := rateDecor(decor.Statistics{Aborted: true, Current: 3}, " 3.0 docs/s", 0, time.Second); got != " 3.0 docs/s  interrupted" {
		t.Errorf("rateDecor = %q", got)
	}
}

// TestSummaryTimesTinyStage: the summary gives a stage of a tiny input no
// rate when it took under a millisecond ("write 0.000 s (8,668 docs/s,
// 0.4 MB/s)"), and a slow or small stage its rate to two digits, not
// "0 docs/s" and "0.0 MB/s".
func TestSummaryTimesTinyStage(t *testing.T) {
	s := &dedup.Stats{Workers: 2, Stages: []dedup.Stage{
		{Name: "read", Seconds: 1.5, Documents: 1, Bytes: 13000, CPUSeconds: 0.01, DocsPerSecond: 1 / 1.5, MBPerSecond: 0.013 / 1.5},
		{Name: "write", Seconds: 0.0002, Documents: 2, Bytes: 80, DocsPerSecond: 10000, MBPerSecond: 0.4},
	}}
	var buf bytes.Buffer
	summaryWriter{&buf}.times(s)
	got := buf.String()
	for _, want := range []string{"read 1.500 s (0.67 docs/s, 0.0087 MB/s, 0.0 CPU-s)", "write 0.000 s (0.0 CPU-s)"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, " 0 docs/s") || strings.Contains(got, " 0.0 MB/s") {
		t.Errorf("summary %q gives a rate of 0", got)
	}
}
