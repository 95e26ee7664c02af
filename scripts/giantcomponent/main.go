// Command giantcomponent writes a JSONL corpus whose candidate graph has
// one giant component, as templated web pages make: a walk of -n texts of
// -words random words, one word replaced at each step (each text a near
// duplicate of the one before, the ends of the walk far apart), a tenth
// of the steps an exact copy of one of the last 50 texts, then -m
// unrelated texts. For the staged join's measurement of a component
// larger than a task's memory in docs/scale.md. It is not part of
// neardup.
//
//	go run ./scripts/giantcomponent -n 300000 -m 50000 > giant.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
)

func main() {
	n := flag.Int("n", 300000, "texts in the walk")
	m := flag.Int("m", 50000, "unrelated texts after it")
	words := flag.Int("words", 300, "words a text")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	r := rand.New(rand.NewPCG(*seed, 2))
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	enc := json.NewEncoder(w)
	word := func() string { return fmt.Sprintf("w%d", r.IntN(200000)) }
	text := make([]string, *words)
	for i := range text {
		text[i] = word()
	}
	var recent []string
	for i := range *n {
		s := strings.Join(text, " ")
		if i > 0 && r.IntN(10) == 0 {
			s = recent[r.IntN(len(recent))]
		} else {
			text[r.IntN(len(text))] = word()
		}
		recent = append(recent, s)
		if len(recent) > 50 {
			recent = recent[1:]
		}
		if err := enc.Encode(map[string]string{"id": fmt.Sprintf("g%d", i), "text": s}); err != nil {
			fail(err)
		}
	}
	for i := range *m {
		for k := range text {
			text[k] = word()
		}
		if err := enc.Encode(map[string]string{"id": fmt.Sprintf("u%d", i), "text": strings.Join(text, " ")}); err != nil {
			fail(err)
		}
	}
	if err := w.Flush(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "giantcomponent:", err)
	os.Exit(1)
}
