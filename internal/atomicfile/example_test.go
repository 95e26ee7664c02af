package atomicfile_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/neardup/neardup/internal/atomicfile"
)

func Example() {
	dir, _ := os.MkdirTemp("", "atomicfile")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "clusters.jsonl")

	f, err := atomicfile.Create(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Abort() // removes the temporary file unless committed
	fmt.Fprintln(f, `{"id": "a", "cluster": "a", "kept": true}`)
	if err := f.Commit(); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	// Output:
	// {"id": "a", "cluster": "a", "kept": true}
}
