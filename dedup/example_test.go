package dedup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
)

// Deduplicate a few documents with the zero Options: minhash over word
// 5-grams at Jaccard 0.8.
func Example() {
	dir, err := os.MkdirTemp("", "dedup-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	docs := filepath.Join(dir, "docs.jsonl")
	os.WriteFile(docs, []byte(`{"id":"a","text":"The quick brown fox jumps over the lazy dog near the river bank today."}
{"id":"b","text":"A completely different sentence about the weather in the mountains."}
{"id":"c","text":"The quick brown fox jumps over the lazy dog near the river bank today!"}
{"id":"d","text":"the QUICK brown fox   jumps over the lazy dog near the river bank today"}
`), 0o644)
	clusters := filepath.Join(dir, "clusters.jsonl")
	stats, err := dedup.Run(context.Background(), dedup.Options{Workers: 1},
		dedup.Input{Files: []string{docs}}, dedup.Outputs{Clusters: clusters})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s over %s: %d documents, %d kept, %d removed\n",
		stats.Method, stats.Spec.Shingle.Unit, stats.Documents, stats.Kept, stats.Removed)
	out, _ := os.ReadFile(clusters)
	fmt.Print(string(out))
	// Output:
	// minhash over word: 4 documents, 2 kept, 2 removed
	// {"id":"a","cluster":"a","kept":true}
	// {"id":"b","cluster":"b","kept":true}
	// {"id":"c","cluster":"a","kept":false}
	// {"id":"d","cluster":"a","kept":false}
}

// Deduplicate documents that are not in a file: a Source opens a new
// reader each time the run reads its input (here JSONL in memory; any
// corpus.Reader will do).
func Example_sources() {
	const jsonl = `{"id":"x1","text":"Heavy rain is expected across the northern provinces for the rest of the week."}
{"id":"x2","text":"Heavy rain is expected across the northern provinces for the rest of the week!"}
{"id":"x3","text":"The central bank left interest rates unchanged at its meeting on Thursday."}
`
	src := dedup.Source{Name: "news", Open: func(opts corpus.Options) (corpus.Reader, error) {
		return corpus.NewStream(strings.NewReader(jsonl), "news", opts), nil
	}}
	stats, err := dedup.Run(context.Background(), dedup.Options{Workers: 1},
		dedup.Input{Sources: []dedup.Source{src}}, dedup.Outputs{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d documents, %d kept, %d removed\n", stats.Documents, stats.Kept, stats.Removed)
	// Output: 3 documents, 2 kept, 1 removed
}

// Deduplicate documents held in memory and get each one's cluster from a
// callback: no file in or out.
func Example_docs() {
	docs := []corpus.Document{
		{ID: "x1", Text: "Heavy rain is expected across the northern provinces for the rest of the week."},
		{ID: "x2", Text: "Heavy rain is expected across the northern provinces for the rest of the week!"},
		{ID: "x3", Text: "The central bank left interest rates unchanged at its meeting on Thursday."},
	}
	_, err := dedup.Run(context.Background(), dedup.Options{Workers: 1},
		dedup.Input{Sources: []dedup.Source{dedup.Docs("news", docs)}},
		dedup.Outputs{OnCluster: func(id, cluster string, kept bool) {
			fmt.Println(id, cluster, kept)
		}})
	if err != nil {
		panic(err)
	}
	// Output:
	// x1 x1 true
	// x2 x1 false
	// x3 x3 true
}
