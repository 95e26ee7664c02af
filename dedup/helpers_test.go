package dedup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neardup/neardup/sketch"
)

// writeTexts writes texts as a JSONL corpus docs.jsonl in dir, document i
// with the id fmt.Sprintf(idFormat, i), and returns its path.
func writeTexts(t testing.TB, dir string, texts []string, idFormat string) string {
	t.Helper()
	var buf bytes.Buffer
	for i, s := range texts {
		line, err := json.Marshal(map[string]string{"id": fmt.Sprintf(idFormat, i), "text": s})
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	path := filepath.Join(dir, "docs.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// weighting parses a SimHash weighting name, panicking on a bad one.
func weighting(s string) sketch.Weighting {
	w, err := sketch.ParseWeighting(s)
	if err != nil {
		panic(err)
	}
	return w
}

// hamming returns the sketch.SimHashSpec.Distance of the largest Hamming
// distance k (0 is sketch.ExactDistance).
func hamming(k int) int {
	if k == 0 {
		return sketch.ExactDistance
	}
	return k
}

// joinWords makes each document's words one text.
func joinWords(docs [][]string) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = strings.Join(d, " ")
	}
	return out
}

// readOutputs reads a run's clusters, pairs and kept documents.
func readOutputs(t testing.TB, o Outputs) [3][]byte {
	t.Helper()
	var res [3][]byte
	for x, p := range []string{o.Clusters, o.Pairs, o.Kept} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		res[x] = b
	}
	return res
}
