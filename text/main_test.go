package text

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/neardup/neardup/internal/sysinfo"
)

// sitePage is a page of a documentation site: a header menu, a sidebar of
// links, breadcrumbs and a footer around body.
func sitePage(title, body string) string {
	return `<!DOCTYPE html><html><head><title>` + title + ` - Example Docs</title><script>var x = "<p>no</p>";</script></head><body>
<div class="header"><a href="/">Example Docs</a> <ul class="menu"><li><a href="/guide">Guide</a></li><li><a href="/api">API reference</a></li><li><a href="/faq">FAQ</a></li></ul></div>
<nav class="breadcrumbs"><a href="/">Home</a> &raquo; <a href="/guide">Guide</a> &raquo; ` + title + `</nav>
<div class="sidebar"><h3>Getting started</h3><ul><li><a href="/install">Installing the tools on every platform</a></li><li><a href="/first">Your first project, step by step</a></li><li><a href="/config">Configuration files and their options</a></li></ul>
<h3>Community</h3><p>Join the mailing list, the forum and the chat to ask questions and meet the people who build this project.</p></div>
<div class="document"><div class="body" role="main"><h1>` + title + `</h1>` + body + `</div></div>
<div class="footer">&copy; Copyright 2003-2026, the Example project. Created with a site generator. <a href="/privacy">Privacy policy</a></div>
<div id="cookie-banner">We use cookies to improve your experience, accept them or read our policy before you continue.</div>
</body></html>`
}

func TestMainText(t *testing.T) {
	article := `<p>The first paragraph of the article explains, in some detail, what the page is about and why it matters.</p>
<p>A second paragraph goes on with more words, commas, and clauses, so that the scoring sees prose.</p>
<pre>code, with, commas</pre>`
	const postText = "The post itself has enough words, and commas, to be the content."
	const post = "<p>" + postText + "</p>"
	tests := []struct {
		name, in, want string
		found          bool
	}{
		{"empty", "", "", false},
		// Too short to score, and no main element: not found.
		{"plain text", "just a few words", "just a few words", false},
		{"site page", sitePage("Widgets", article),
			"Widgets\nThe first paragraph of the article explains, in some detail, what the page is about and why it matters.\n" +
				"A second paragraph goes on with more words, commas, and clauses, so that the scoring sees prose.\ncode, with, commas", true},
		// Nothing scores: the main element without the unlikely content.
		{"short page", sitePage("vsrc", "<p>Instruction input.</p><p><em>Size:</em> 2 dwords.</p>"), "vsrc\nInstruction input.\nSize: 2 dwords.", true},
		{"hidden", `<article><p>Visible paragraph with enough words to be scored as prose, surely.</p><div hidden><p>Hidden paragraph with enough words to be scored as prose, surely.</p></div><p style="display: none">Styled away, with enough words to be scored, too.</p></article>`,
			"Visible paragraph with enough words to be scored as prose, surely.", true},
		// A result of 500 characters or more: unlikely content stays out.
		{"comments dropped", `<div class="post">` + strings.Repeat(post, 8) + `<div id="comments"><p>A reader's comment, also long enough to be scored as a paragraph.</p></div></div>`,
			strings.TrimSuffix(strings.Repeat(postText+"\n", 8), "\n"), true},
		// A shorter one is tried again with it, and the longer wins.
		{"short post", `<div class="post">` + post + `<div id="comments"><p>A reader's comment, also long enough to be scored as a paragraph.</p></div></div>`,
			postText + "\nA reader's comment, also long enough to be scored as a paragraph.", true},
		{"links only", `<ul><li><a href="/a">a</a></li><li><a href="/b">b</a></li></ul>`, "a\nb", false},
		{"all hidden", `<div hidden>only hidden text</div>`, "only hidden text", false},
		// The post's title heading sits outside the post's block; the
		// title element names it, and it belongs to the content. The
		// site's heading does not match the title and stays out.
		{"title heading", `<html><head><title>Le manoir derri&egrave;re le palmier | Photos aggregator</title></head><body><h1><a href="/">Photos aggregator</a></h1>` +
			`<div class="post"><p>` + postText + `</p></div><div class="main_meta"><h2>Le manoir  derrière le palmier</h2><ul><li>February 10th, 2012</li></ul></div></body></html>`,
			postText + "\nLe manoir derrière le palmier", true},
		// Sphinx and Markdown name a section by its heading: the id
		// "community-testing" says what the section is about, not that
		// it is a community widget, and "stream-header-1" (a repeated
		// heading) is no page header. A one-word id ("comments") still
		// names a part of the page.
		{"heading slugs", `<div class="body" role="main">` + strings.Repeat(post, 8) +
			`<section id="community-testing"><h2>Community Testing<a class="headerlink" href="#community-testing">¶</a></h2><p>We ask that all developers test the release, and report back errors.</p></section>` +
			`<section id="stream-header-1"><h3>Stream Header</h3><p>The stream header holds the version, the signature, and the age.</p></section>` +
			`<section id="comments"><h2>Comments</h2><p>A reader's comment, also long enough to be scored as a paragraph.</p></section></div>`,
			strings.Repeat(postText+"\n", 8) + "Community Testing¶\nWe ask that all developers test the release, and report back errors.\n" +
				"Stream Header\nThe stream header holds the version, the signature, and the age.", true},
		// Sphinx's local table of contents links each section's heading
		// back to its entry: the heading is all link, but it is the
		// section's title, not a list of links. A heading that links to
		// another page (a teaser's title) still counts as a link.
		{"linked headings", `<div class="body" role="main">` + strings.Repeat(post, 8) +
			`<section id="release-administrative-tasks"><h2><a class="toc-backref" href="#id3" role="doc-backlink">Release Administrative Tasks</a><a class="headerlink" href="#release-administrative-tasks">¶</a></h2>` +
			`<p>This section describes a few administrative tasks, such as branching and tagging.</p>` +
			`<h3><a href="/2022/01/other.html">Another article, on another page of the site</a></h3></section></div>`,
			strings.Repeat(postText+"\n", 8) + "Release Administrative Tasks¶\nThis section describes a few administrative tasks, such as branching and tagging.", true},
		{"unclosed", "<div><p>one paragraph of text that is long enough to count<p>and another one that is long enough", "one paragraph of text that is long enough to count\nand another one that is long enough", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, found, err := MainText([]byte("prefix:"), strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "prefix:"+tc.want || found != tc.found {
				t.Errorf("MainText(%q) =\n%q, %v\nwant\n%q, %v", tc.in, got, found, "prefix:"+tc.want, tc.found)
			}
		})
	}
}

// TestMainTextTemplate checks issue 31's generated pages: one site's
// template of 500 words and bodies of 20 words; the extracted text must be
// the body alone, so that pages with different bodies share nothing.
func TestMainTextTemplate(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 31))
	words := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = fmt.Sprintf("w%d", rng.IntN(5000))
		}
		return strings.Join(w, " ")
	}
	// The template: 500 words of menus, sidebar prose and footer.
	menu := ""
	for i := range 40 {
		menu += fmt.Sprintf(`<li><a href="/p%d">%s</a></li>`, i, words(5))
	}
	side := fmt.Sprintf(`<p>%s, %s, %s.</p>`, words(60), words(60), words(60))
	foot := words(80)
	for i := range 50 {
		body := words(20)
		page := `<html><body><div id="top-menu"><ul>` + menu + `</ul></div><div class="document"><div class="content"><p>` + body +
			`</p></div></div><aside>` + side + `</aside><footer>` + foot + `</footer></body></html>`
		got, found, err := MainText(nil, strings.NewReader(page))
		if err != nil || !found || string(got) != body {
			t.Fatalf("page %d: MainText = %q, %v, %v, want the body %q", i, got, found, err, body)
		}
	}
}

// TestMainTextHTMLPages scores MainText against the reference text of
// Mozilla Readability's test pages (token-level F1, averaged over pages),
// beside the whole-page text of HTMLToText, when the data is present.
func TestMainTextHTMLPages(t *testing.T) {
	var mainF1, allF1 float64
	pages := 0
	sharedData(t, "html-pages", func(doc map[string]any) bool {
		src, _ := doc["text"].(string)
		want, _ := doc["expected_text"].(string)
		main, _, err := MainText(nil, strings.NewReader(src))
		if err != nil {
			t.Fatalf("%v: %v", doc["id"], err)
		}
		all, _ := HTMLToText(nil, strings.NewReader(src))
		mainF1 += tokenF1(string(main), want)
		allF1 += tokenF1(string(all), want)
		pages++
		return true
	})
	mainF1 /= float64(pages)
	allF1 /= float64(pages)
	t.Logf("%d pages: token F1 %.4f main content, %.4f whole page", pages, mainF1, allF1)
	if mainF1 < 0.90 {
		t.Errorf("mean token F1 of MainText = %.4f, want at least 0.90 (whole page: %.4f)", mainF1, allF1)
	}
}

// tokenF1 is the F1 of the bags of lower-cased letter-and-digit tokens of
// got and want.
func tokenF1(got, want string) float64 {
	bag := func(s string) map[string]int {
		m := map[string]int{}
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
			m[w]++
		}
		return m
	}
	g, w := bag(got), bag(want)
	var ng, nw, common int
	for k, c := range g {
		ng += c
		common += min(c, w[k])
	}
	for _, c := range w {
		nw += c
	}
	switch {
	case ng == 0 && nw == 0:
		return 1
	case common == 0:
		return 0
	}
	p, r := float64(common)/float64(ng), float64(common)/float64(nw)
	return 2 * p * r / (p + r)
}

func TestTokenF1(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want float64
	}{{"", "", 1}, {"a b", "", 0}, {"A, b!", "a b", 1}, {"a b c d", "a b", 2 * 0.5 / 1.5}} {
		if got := tokenF1(tc.a, tc.b); got != tc.want {
			t.Errorf("tokenF1(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestMainTextDeep(t *testing.T) {
	in := strings.Repeat("<div>", 100000) + "deep" + strings.Repeat("</div>", 100000)
	got, _, err := MainText(nil, strings.NewReader(in))
	if err != nil || string(got) != "deep" {
		t.Errorf("MainText(100000 nested div) = %q, %v, want %q", got, err, "deep")
	}
}

func FuzzMainText(f *testing.F) {
	for _, s := range []string{
		"", "<p>a</p>", "<script>x</script>y", "<svg><svg>x", "&amp;&#0;&#xFFFFFF;", "<pre>\n\na\n</pre>",
		"<table><tr><td>x<td>y", "a\xff<b\xfe>", "<!-- x", "<p <p <p", "<div class=sidebar>menu</div><p>text, text</p>",
		sitePage("t", "<p>Some words, and more words, in a paragraph long enough.</p>"),
		"<li><li><dt><dd><td><th><tr></div></div></li>", "<div hidden><a>x</a></div><main>m</main>",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, found, err := MainText([]byte("x"), bytes.NewReader(in))
		if err != nil {
			t.Fatalf("MainText(%q): %v", in, err)
		}
		if !bytes.HasPrefix(out, []byte("x")) {
			t.Fatalf("MainText(%q) = %q lost the prefix of dst", in, out)
		}
		out = out[1:]
		if !utf8.Valid(out) {
			t.Fatalf("MainText(%q) = %q, not valid UTF-8", in, out)
		}
		all, _ := HTMLToText(nil, bytes.NewReader(in))
		if len(out) == 0 && len(all) > 0 {
			t.Fatalf("MainText(%q) kept nothing of the page's text %q", in, all)
		}
		if found && len(out) == 0 {
			t.Fatalf("MainText(%q) found main content, but no text", in)
		}
		// The main content is a part of the whole text: every word of it
		// is a word of the page, no more often.
		count := map[string]int{}
		for _, w := range strings.Fields(string(all)) {
			count[w]++
		}
		for _, w := range strings.Fields(string(out)) {
			if count[w]--; count[w] < 0 {
				t.Fatalf("MainText(%q) = %q has %q more often than the page's text %q", in, out, w, all)
			}
		}
		// A byte at a time gives the same result.
		pieces, found2, err := MainText(nil, io.LimitReader(&oneByteReader{in}, int64(len(in))))
		if err != nil || !bytes.Equal(pieces, out) || found2 != found {
			t.Fatalf("MainText(%q) = %q, %v at once but %q, %v, %v a byte at a time", in, out, found, pieces, found2, err)
		}
	})
}

// BenchmarkHTMLData extracts the text of real pages, the whole visible text
// (HTMLToText) beside the main content (MainText), when the evaluation data
// is present. It reports the CPU time of the process per page (CPU-ns/page;
// compare these on a busy machine) and pages per CPU second:
//
//	go test -run '^$' -bench HTMLData -benchtime 5x -cpu 1 ./text
func BenchmarkHTMLData(b *testing.B) {
	for _, c := range []struct {
		name, set string
		n         int
	}{{"html-pages", "html-pages", 200}, {"llvm-docs", "llvm-docs", 4000}} {
		b.Run(c.name, func(b *testing.B) {
			pages := dataTexts(b, c.set, c.n)
			size := 0
			for _, s := range pages {
				size += len(s)
			}
			for _, main := range []bool{false, true} {
				name := "whole-page"
				if main {
					name = "main"
				}
				b.Run(name, func(b *testing.B) {
					var dst []byte
					b.SetBytes(int64(size))
					b.ReportAllocs()
					c0 := sysinfo.CPUSeconds()
					for b.Loop() {
						for _, s := range pages {
							dst, _, _ = ExtractHTML(dst[:0], strings.NewReader(s), !main)
						}
					}
					if c0 != 0 {
						cpu := (sysinfo.CPUSeconds() - c0) / float64(b.N) / float64(len(pages))
						b.ReportMetric(cpu*1e9, "CPU-ns/page")
						b.ReportMetric(1/cpu, "pages/CPU-s")
					}
				})
			}
		})
	}
}

// TestMainTextManySiblings: a page of many short sibling paragraphs is
// linear work, not quadratic (keepSibling looks at each one's last text).
func TestMainTextManySiblings(t *testing.T) {
	in := "<div><p>" + strings.Repeat("A paragraph long enough to be scored, with a comma.</p><p>Short one.</p><p>", 20000) + "end</p></div>"
	got, found, err := MainText(nil, strings.NewReader(in))
	if err != nil || !found || !bytes.HasSuffix(got, []byte("end")) {
		t.Errorf("MainText(20000 paragraphs) ends %q, %v, %v", got[max(0, len(got)-20):], found, err)
	}
}
