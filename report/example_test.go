package report_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/report"
)

func ExampleDiffText() {
	a := "And God called the light Day, and the darkness he called Night."
	b := "And Elohim called the light Day, and the darkness he called Night!"
	for _, e := range report.DiffText(a, b) {
		fmt.Printf("%-6s %q\n", e.Kind, e.Text)
	}
	// Output:
	// equal  "And "
	// delete "God"
	// insert "Elohim"
	// equal  " called the light Day, and the darkness he called Night"
	// delete "."
	// insert "!"
}

func ExampleApply() {
	a, b := "a rose is a rose", "a rose is a flower"
	edits := report.DiffText(a, b)
	got, err := report.Apply(a, edits)
	fmt.Println(got, err)
	// Output: a rose is a flower <nil>
}

func ExampleWrite() {
	cfg := dedup.Options{}
	cfg.Method = "exact"
	in := dedup.Input{
		Files:    []string{"-"},
		Stdin:    strings.NewReader(`{"id":"a","text":"Hello, world"}` + "\n" + `{"id":"b","text":"hello   WORLD!"}` + "\n"),
		Examples: 10,
	}
	stats, err := dedup.Run(context.Background(), cfg, in, dedup.Outputs{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var page strings.Builder
	run := &report.Run{Options: cfg, Stats: stats, Source: "two greetings"}
	if err := report.Write(&page, run, report.Options{}); err != nil {
		fmt.Println(err)
		return
	}
	// The first sentence of the summary.
	_, rest, _ := strings.Cut(page.String(), "<h2>What happened</h2>\n<p>")
	first, _, _ := strings.Cut(rest, "</p>")
	fmt.Println(first)
	// Output: neardup read 2 documents from two greetings and removed 1 document as near-duplicates of a document it kept; 1 document remains.
}
