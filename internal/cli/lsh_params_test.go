package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLSHParamsGolden(t *testing.T) {
	for _, tc := range []struct {
		t           float64
		k           int
		bands, rows int
	}{
		{0.5, 128, 25, 5}, {0.7, 128, 14, 9}, {0.8, 128, 9, 13}, {0.9, 128, 5, 25},
		{0.5, 256, 42, 6}, {0.7, 256, 25, 10}, {0.8, 256, 17, 15}, {0.9, 256, 9, 28},
	} {
		var out bytes.Buffer
		o := &lshParamsOpts{threshold: tc.t, numPerm: tc.k, fpWeight: 0.5, fnWeight: 0.5, json: true}
		if err := runLSHParams(context.Background(), o, &out); err != nil {
			t.Fatal(err)
		}
		var res lshParamsResult
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("JSON %s: %v", out.Bytes(), err)
		}
		if res.Bands != tc.bands || res.Rows != tc.rows {
			t.Errorf("lsh-params --threshold %v --num-perm %d = %dx%d, want %dx%d", tc.t, tc.k, res.Bands, res.Rows, tc.bands, tc.rows)
		}
		want := math.Pow(1/float64(tc.bands), 1/float64(tc.rows))
		if math.Abs(res.EffectiveThreshold-want) > 1e-12 {
			t.Errorf("effective threshold %v, want %v", res.EffectiveThreshold, want)
		}
	}
}

func TestLSHParamsTextRecallAndPlot(t *testing.T) {
	png := filepath.Join(t.TempDir(), "s.png")
	var out bytes.Buffer
	o := &lshParamsOpts{threshold: 0.9, numPerm: 128, targetRecall: 0.95, plot: png}
	if err := runLSHParams(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bands 10, rows 12", "s = 0.9   0.96", "effective threshold"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 5000 {
		t.Errorf("--plot wrote %d bytes (err %v), want a PNG", len(b), err)
	}
}

func TestLSHParamsErrors(t *testing.T) {
	for _, o := range []lshParamsOpts{
		{threshold: 0, numPerm: 128, fpWeight: 0.5, fnWeight: 0.5},
		{threshold: 1.2, numPerm: 128, fpWeight: 0.5, fnWeight: 0.5},
		{threshold: 0.8, numPerm: 0, fpWeight: 0.5, fnWeight: 0.5},
		{threshold: 0.8, numPerm: 128, fpWeight: -1, fnWeight: 0.5},
		{threshold: 0.8, numPerm: 128},
		{threshold: 0.8, numPerm: 128, targetRecall: 1.5},
	} {
		err := runLSHParams(context.Background(), &o, &bytes.Buffer{})
		if !errors.Is(err, errUsage) {
			t.Errorf("%+v: %v, want a usage error", o, err)
		}
	}
	// An unreachable recall is reported, not fatal.
	var out bytes.Buffer
	o := &lshParamsOpts{threshold: 0.01, numPerm: 4, targetRecall: 0.999999}
	if err := runLSHParams(context.Background(), o, &out); err != nil || !strings.Contains(out.String(), "warning") {
		t.Errorf("unreachable recall: %v\n%s", err, out.String())
	}
	// A plot into a missing directory is an error naming the flag.
	o = &lshParamsOpts{threshold: 0.8, numPerm: 128, fpWeight: 0.5, fnWeight: 0.5, plot: "/nonexistent/dir/s.png"}
	if err := runLSHParams(context.Background(), o, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--plot") {
		t.Errorf("bad --plot path: %v", err)
	}
}
