package dedup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neardup/neardup/corpus"
)

// TestDocs: documents in memory, one without an id, deduplicated with
// the kept documents written and every document's cluster called back as
// the clusters file has it.
func TestDocs(t *testing.T) {
	text := "the same words in the same order make the same document here"
	docs := []corpus.Document{{ID: "a", Text: text}, {Text: text + "!"}, {ID: "c", Text: "something else entirely, with other words"}}
	dir := t.TempDir()
	kept, clusters := filepath.Join(dir, "kept.jsonl"), filepath.Join(dir, "c.jsonl")
	var got string
	_, err := Run(context.Background(), Options{Workers: 2}, Input{Sources: []Source{Docs("mem", docs)}},
		Outputs{Kept: kept, Clusters: clusters, OnCluster: func(id, cluster string, k bool) {
			got += `{"id":"` + id + `","cluster":"` + cluster + `","kept":` + map[bool]string{true: "true", false: "false"}[k] + "}\n"
		}})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(clusters)
	if got != string(want) || got == "" {
		t.Errorf("OnCluster said:\n%s\nthe clusters file:\n%s", got, want)
	}
	if w := `{"id":"mem:2","cluster":"a","kept":false}`; !strings.Contains(got, w) {
		t.Errorf("no %s in:\n%s", w, got)
	}
	b, _ := os.ReadFile(kept)
	if w := "{\"id\":\"a\",\"text\":\"" + text + "\"}\n{\"id\":\"c\",\"text\":\"something else entirely, with other words\"}\n"; string(b) != w {
		t.Errorf("kept:\n%s\nwant:\n%s", b, w)
	}
}
