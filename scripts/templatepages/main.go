// Command templatepages writes issue 31's generated web pages: every page
// wears one site's template of about 500 words (a header menu, breadcrumbs,
// a sidebar of links and prose, a footer, a cookie banner) around its body,
// for the main-content measurements in docs/benchmarks.md. It is not part
// of neardup.
//
// With -body 20 (the default) every page has its own body of that many
// random words: no two pages are duplicates. With -copies 2 each body is
// written that many times, each copy after the first with light edits (1%
// of its words replaced), so that the pages come in groups of duplicates.
// The output is JSONL ({"id","text","html":true}); -truth writes the
// groups as {"id","cluster"} lines for neardup eval.
//
//	go run ./scripts/templatepages -n 2000 -o /tmp/tp-distinct.jsonl
//	go run ./scripts/templatepages -n 2000 -body 200 -copies 2 -o /tmp/tp-copied.jsonl -truth /tmp/tp-copied.truth.jsonl
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

// vocabulary: common English words, enough that random bodies share no
// 5-word shingle by chance.
var vocabulary = strings.Fields(`time year people way day man thing woman life child world school state family
student group country problem hand part place case week company system program question work government
number night point home water room mother area money story fact month lot right study book eye job word
business issue side kind head house service friend father power hour game line end member law car city
community name president team minute idea kid body information back parent face others level office door
health person art war history party result change morning reason research girl guy moment air teacher force
education foot boy age policy everything process music market sense nation plan college interest death
experience effect use class control care field development role effort rate heart drug show leader light
voice wife police mind price report decision son view relationship town road arm difference value building
action model season society tax director position player record paper space ground form event official
matter center couple site project activity star table need court oil situation cost industry figure street
image phone data picture practice piece land product doctor wall patient worker news test movie north love
support technology step baby computer type attention film tree source organization hair window evidence
population truth song radio river garden bridge engine signal winter summer letter island machine memory`)

func main() {
	n := flag.Int("n", 2000, "pages to write")
	body := flag.Int("body", 20, "words in each page's body")
	copies := flag.Int("copies", 1, "pages per body: the first as written, the others with light edits")
	seed := flag.Uint64("seed", 31, "random seed")
	out := flag.String("o", "pages.jsonl", "output JSONL file")
	truth := flag.String("truth", "", "also write the groups of copies here as neardup eval truth")
	flag.Parse()
	if *n < 1 || *body < 1 || *copies < 1 {
		fmt.Fprintln(os.Stderr, "templatepages: -n, -body and -copies must be at least 1")
		os.Exit(2)
	}
	if err := run(*n, *body, *copies, *seed, *out, *truth); err != nil {
		fmt.Fprintln(os.Stderr, "templatepages:", err)
		os.Exit(1)
	}
}

func run(n, bodyWords, copies int, seed uint64, out, truth string) error {
	rng := rand.New(rand.NewPCG(seed, seed))
	words := func(k int) []string {
		w := make([]string, k)
		for i := range w {
			w[i] = vocabulary[rng.IntN(len(vocabulary))]
		}
		return w
	}
	prose := func(k int) string { return strings.Join(words(k), " ") }
	var menu strings.Builder
	for i := range 30 {
		fmt.Fprintf(&menu, `<li><a href="/section/%d.html">%s</a></li>`, i, prose(4))
	}
	template := func(title, body string) string {
		return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>` + title + ` | Example News</title><script>window.dataLayer = [];</script></head><body>
<header class="site-header"><a class="logo" href="/">Example News</a><nav class="main-menu"><ul>` + menu.String() + `</ul></nav></header>
<div class="breadcrumbs"><a href="/">Home</a> &raquo; <a href="/world/">World</a> &raquo; ` + title + `</div>
<div class="wrapper"><main class="content"><article><h1>` + title + `</h1><p>` + body + `</p></article></main>
<aside class="sidebar"><h3>About this site</h3><p>` + sidebar + `</p><h3>Most read</h3><ul>` + mostRead + `</ul></aside></div>
<footer class="site-footer"><p>` + footer + `</p></footer>
<div id="cookie-consent">We use cookies to give you the best experience on our site. Accept them or read our cookie policy first.</div>
</body></html>`
	}
	sidebar, footer = prose(185), prose(60)
	var mr strings.Builder
	for i := range 10 {
		fmt.Fprintf(&mr, `<li><a href="/story/%d.html">%s</a></li>`, i, prose(8))
	}
	mostRead = mr.String()

	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	var tw *bufio.Writer
	if truth != "" {
		tf, err := os.Create(truth)
		if err != nil {
			return err
		}
		defer tf.Close()
		tw = bufio.NewWriter(tf)
		defer tw.Flush()
	}
	for i := 0; i < n; {
		b := words(bodyWords)
		title := prose(3)
		group := fmt.Sprintf("page-%06d", i)
		for c := 0; c < copies && i < n; c, i = c+1, i+1 {
			if c > 0 {
				for range max(1, bodyWords/100) {
					b[rng.IntN(len(b))] = vocabulary[rng.IntN(len(vocabulary))]
				}
			}
			id := fmt.Sprintf("page-%06d", i)
			line, _ := json.Marshal(map[string]any{"id": id, "text": template(title, strings.Join(b, " ")), "html": true})
			w.Write(append(line, '\n'))
			if tw != nil {
				line, _ := json.Marshal(map[string]string{"id": id, "cluster": group})
				tw.Write(append(line, '\n'))
			}
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

var sidebar, footer, mostRead string
