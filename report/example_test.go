package report_test

import (
	"fmt"

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
