package corpus_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/neardup/neardup/corpus"
)

func Example() {
	dir, _ := os.MkdirTemp("", "corpus")
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "quotes.txt")
	os.WriteFile(in, []byte("To be, or not to be\n\nAll the world's a stage\n"), 0o644)

	// Read plain text (one document per line) and write JSONL.
	r, err := corpus.Open(in, corpus.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	w, err := corpus.Create(filepath.Join(dir, "kept.jsonl.gz"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Abort() // no-op after Commit
	for r.Next() {
		d := r.Doc()
		fmt.Printf("%s %q\n", filepath.Base(d.ID), d.Text)
		w.Write(d)
	}
	if err := r.Err(); err != nil {
		fmt.Println(err)
		return
	}
	if err := w.Commit(); err != nil {
		fmt.Println(err)
		return
	}

	// Read the output back: Raw keeps every field.
	back, _ := corpus.Open(filepath.Join(dir, "kept.jsonl.gz"), corpus.Options{})
	defer back.Close()
	for back.Next() {
		fmt.Println(string(back.Doc().Raw) == fmt.Sprintf(`{"id":%q,"text":%q}`, back.Doc().ID, back.Doc().Text))
	}
	// Output:
	// quotes.txt:1 "To be, or not to be"
	// quotes.txt:3 "All the world's a stage"
	// true
	// true
}
