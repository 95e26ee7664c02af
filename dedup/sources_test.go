package dedup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neardup/neardup/corpus"
)

// sliceReader is a corpus.Reader over documents in memory: a format of
// the caller's own.
type sliceReader struct {
	docs []corpus.Document
	i    int
}

func (r *sliceReader) Next() bool            { r.i++; return r.i <= len(r.docs) }
func (r *sliceReader) Doc() *corpus.Document { return &r.docs[r.i-1] }
func (r *sliceReader) Err() error            { return nil }
func (r *sliceReader) Close() error          { return nil }

// TestSources: documents from Sources give the clusters and kept records
// of the same documents read from a file, with the pass that writes the
// kept documents reopening each source; Sources after Files keep input
// order; a nil Open and Resume are refused.
func TestSources(t *testing.T) {
	dir := t.TempDir()
	var all bytes.Buffer
	var docs []corpus.Document
	for i := range 60 {
		txt := fmt.Sprintf("document number %d talks about topic %d in a sentence long enough to shingle well", i%20, i%20)
		raw := fmt.Sprintf(`{"id":"d%d","text":%q}`, i, txt)
		all.WriteString(raw + "\n")
		docs = append(docs, corpus.Document{ID: fmt.Sprintf("d%d", i), Text: txt, Raw: []byte(raw), Source: "mem", Record: int64(i + 1)})
	}
	file := filepath.Join(dir, "all.jsonl")
	if err := os.WriteFile(file, all.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(in Input, name string) (clusters, kept []byte) {
		c, k := filepath.Join(dir, name+".clusters"), filepath.Join(dir, name+".kept.jsonl")
		if _, err := Run(context.Background(), Options{Workers: 2}, in, Outputs{Clusters: c, Kept: k}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cb, _ := os.ReadFile(c)
		kb, _ := os.ReadFile(k)
		return cb, kb
	}
	wantC, wantK := run(Input{Files: []string{file}}, "file")
	opened := 0
	mem := Source{Name: "mem", Open: func(corpus.Options) (corpus.Reader, error) {
		opened++
		return &sliceReader{docs: docs}, nil
	}}
	gotC, gotK := run(Input{Sources: []Source{mem}}, "mem")
	if !bytes.Equal(gotC, wantC) || !bytes.Equal(gotK, wantK) {
		t.Errorf("a source in memory gives other clusters or kept records than the file:\n%s\nwant\n%s", gotC, wantC)
	}
	if opened < 2 {
		t.Errorf("the source was opened %d times; writing the kept documents reads it again", opened)
	}
	// Half from a file, half from a stream source: the same order.
	lines := strings.SplitAfter(all.String(), "\n")
	head := filepath.Join(dir, "head.jsonl")
	os.WriteFile(head, []byte(strings.Join(lines[:30], "")), 0o644)
	tail := strings.Join(lines[30:], "")
	stream := Source{Name: "tail", Open: func(opts corpus.Options) (corpus.Reader, error) {
		return corpus.NewStream(strings.NewReader(tail), "tail", opts), nil
	}}
	gotC, gotK = run(Input{Files: []string{head}, Sources: []Source{stream}}, "mixed")
	if !bytes.Equal(gotC, wantC) || !bytes.Equal(gotK, wantK) {
		t.Errorf("a file then a source: other clusters or kept records than one file")
	}
	if _, err := Run(context.Background(), Options{}, Input{Sources: []Source{{Name: "x"}}}, Outputs{}); !errors.Is(err, ErrOptions) {
		t.Errorf("a source without Open: %v", err)
	}
	if _, err := Run(context.Background(), Options{}, Input{Sources: []Source{mem}, Resume: true}, Outputs{TmpDir: dir}); !errors.Is(err, ErrConflict) {
		t.Errorf("Resume with a source: %v", err)
	}
	failing := Source{Name: "broken", Open: func(corpus.Options) (corpus.Reader, error) { return nil, errors.New("cursor closed") }}
	if _, err := Run(context.Background(), Options{}, Input{Sources: []Source{failing}}, Outputs{}); err == nil || !strings.Contains(err.Error(), "source broken: cursor closed") {
		t.Errorf("a source that cannot open: %v", err)
	}
}
