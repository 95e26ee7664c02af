package text

import (
	"io"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTMLToText appends the visible text of the HTML document read from r to dst
// and returns the extended buffer. The error is nil at the end of the input,
// otherwise the first error of r other than io.EOF, returned with the text
// extracted so far.
//
// The document is tokenized with golang.org/x/net/html, which follows the
// HTML5 tokenization rules and accepts any input, however malformed.
//
//   - Markup, comments, doctypes and processing instructions are removed;
//     character references (&amp;, &nbsp;, &#x4E2D;) are decoded.
//   - The content of elements that are not visible text is dropped:
//     script, style, noscript, template, title, textarea, select, datalist,
//     iframe, object, svg, canvas, audio, video, noembed, noframes.
//     The title is dropped on purpose: it mostly repeats the first heading or
//     carries the site's name, which would make unrelated pages of one site
//     look alike. Unclosed dropped elements end at </body>, </html> or at the
//     end of the input.
//   - Block-level elements (p, div, br, hr, li, dt, dd, h1-h6, tr, table,
//     section, article, header, footer, nav, aside, main, pre, blockquote,
//     figure, form, ...) start and end lines: their boundaries become one
//     '\n'. Table cells (td, th) are separated by a space.
//   - Runs of HTML whitespace in text collapse to one space, except that a
//     line break inside pre becomes '\n'; lines carry no leading or trailing
//     spaces, no line is empty, and the text has no leading or trailing
//     line break. Other Unicode whitespace, such as the U+00A0 of &nbsp;, is
//     kept for the normaliser to fold.
//   - Bytes that are not valid UTF-8 become U+FFFD, so the result is always
//     valid UTF-8.
//
// Boilerplate that is ordinary markup (navigation menus, cookie banners,
// footers) is kept: telling it from content needs a content extractor.
//
// HTMLToText reads r to the end; it allocates the tokenizer's buffers.
func HTMLToText(dst []byte, r io.Reader) ([]byte, error) {
	w := htmlWriter{dst: dst, start: len(dst)}
	err := walkHTML(r, &w, nil)
	return w.dst, err
}

// walkHTML tokenizes the HTML document read from r and writes its visible
// text to w. With m not nil, it also builds m's light tree of the blocks
// and records which block each piece of text belongs to (MainText).
func walkHTML(r io.Reader, w *htmlWriter, m *mainExtractor) error {
	z := html.NewTokenizer(r)
	var skip []atom.Atom // open elements whose content is dropped, innermost last
	skipped := 0         // dropped elements opened beyond the capacity of skip
	pre := 0             // depth of open pre elements
	links := 0           // depth of open a elements
	var local uint64     // bit i: the link at depth i+1 leads within the page (MainText)
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if err := z.Err(); err != io.EOF {
				return err
			}
			return nil
		case html.TextToken:
			switch {
			case len(skip) > 0:
				if m != nil && len(skip) == 1 && skip[0] == atom.Title && skipped == 0 && len(m.title) < maxTitle {
					m.title = append(m.title, z.Text()...)
				}
			case m != nil:
				m.text(z.Text(), pre > 0, links > 0, links > 0 && links <= 64 && local&(1<<(links-1)) != 0)
			default:
				w.text(z.Text(), pre > 0)
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			a := tagAtom(z.Raw())
			if dropped(a) {
				if tt == html.StartTagToken {
					if len(skip) < maxSkipDepth {
						skip = append(skip, a)
					} else {
						skipped++
					}
				}
				continue
			}
			if len(skip) > 0 {
				continue
			}
			w.boundary(a)
			if tt != html.StartTagToken {
				continue
			}
			switch a {
			case atom.Pre:
				pre++
			case atom.A:
				links++
				if m != nil && links <= 64 {
					local &^= 1 << (links - 1)
					if localLink(z) {
						local |= 1 << (links - 1)
					}
				}
			}
			if m != nil && isNode(a) {
				m.open(z, a)
			}
		case html.EndTagToken:
			a := tagAtom(z.Raw())
			if len(skip) > 0 {
				switch {
				case a == atom.Body || a == atom.Html:
					skip, skipped = skip[:0], 0
					w.sep(sepNewline)
				case dropped(a):
					if skipped > 0 {
						skipped--
						continue
					}
					for i := len(skip) - 1; i >= 0; i-- {
						if skip[i] == a {
							skip = skip[:i]
							break
						}
					}
				}
				continue
			}
			w.boundary(a)
			switch {
			case a == atom.Pre && pre > 0:
				pre--
			case a == atom.A && links > 0:
				links--
			}
			if m != nil && isNode(a) {
				m.close(a)
			}
		}
	}
}

const maxSkipDepth = 256

// localLink reports whether the a element whose start tag z holds leads
// within the page: its href is a fragment ("#id3").
func localLink(z *html.Tokenizer) bool {
	for {
		k, v, more := z.TagAttr()
		if string(k) == "href" {
			return len(v) > 1 && v[0] == '#'
		}
		if !more {
			return false
		}
	}
}

// tagAtom returns the atom of the name of the start or end tag raw, as the
// tokenizer returned it, or 0 for names that are not atoms. It does what
// atom.Lookup(z.TagName()) does without TagName's allocation.
func tagAtom(raw []byte) atom.Atom {
	i := 1 // after '<'
	if i < len(raw) && raw[i] == '/' {
		i++
	}
	var buf [16]byte
	n := 0
	for ; i < len(raw); i++ {
		c := raw[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == '/' || c == '>' {
			break
		}
		if n == len(buf) {
			return 0 // longer than any atom of interest
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return atom.Lookup(buf[:n])
}

// dropped reports whether the content of element a is not visible text.
func dropped(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Title,
		atom.Textarea, atom.Select, atom.Datalist, atom.Iframe, atom.Object,
		atom.Svg, atom.Canvas, atom.Audio, atom.Video,
		atom.Noembed, atom.Noframes:
		return true
	}
	return false
}

// boundary returns '\n' for elements that start and end lines, ' ' for
// elements that separate words, and 0 for inline elements.
func boundary(a atom.Atom) byte {
	switch a {
	case atom.Address, atom.Article, atom.Aside, atom.Blockquote, atom.Body,
		atom.Br, atom.Caption, atom.Center, atom.Dd, atom.Details, atom.Dialog,
		atom.Dir, atom.Div, atom.Dl, atom.Dt, atom.Fieldset, atom.Figcaption,
		atom.Figure, atom.Footer, atom.Form, atom.H1, atom.H2, atom.H3, atom.H4,
		atom.H5, atom.H6, atom.Head, atom.Header, atom.Hgroup, atom.Hr, atom.Html,
		atom.Legend, atom.Li, atom.Listing, atom.Main, atom.Menu, atom.Nav,
		atom.Ol, atom.Optgroup, atom.Option, atom.P, atom.Plaintext, atom.Pre,
		atom.Section, atom.Summary, atom.Table, atom.Tbody, atom.Tfoot,
		atom.Thead, atom.Tr, atom.Ul, atom.Xmp:
		return '\n'
	case atom.Td, atom.Th, atom.Img, atom.Input, atom.Button, atom.Label:
		return ' '
	}
	return 0
}

const (
	sepNone = iota
	sepSpace
	sepNewline
)

// htmlWriter appends text with collapsed separators.
type htmlWriter struct {
	dst     []byte
	start   int // len(dst) on entry: nothing before it is ours
	pending int // separator owed before the next visible character
}

func (w *htmlWriter) sep(s int) { w.pending = max(w.pending, s) }

// boundary owes the separator that element a's tags stand for.
func (w *htmlWriter) boundary(a atom.Atom) {
	switch boundary(a) {
	case '\n':
		w.sep(sepNewline)
	case ' ':
		w.sep(sepSpace)
	}
}

func (w *htmlWriter) text(b []byte, pre bool) {
	for i := 0; i < len(b); {
		c := b[i]
		switch c {
		case ' ', '\t', '\f':
			w.sep(sepSpace)
			i++
			continue
		case '\n', '\r':
			if pre {
				w.sep(sepNewline)
			} else {
				w.sep(sepSpace)
			}
			i++
			continue
		}
		if w.pending != sepNone {
			if len(w.dst) > w.start {
				if w.pending == sepNewline {
					w.dst = append(w.dst, '\n')
				} else {
					w.dst = append(w.dst, ' ')
				}
			}
			w.pending = sepNone
		}
		if c < utf8.RuneSelf {
			w.dst = append(w.dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			w.dst = utf8.AppendRune(w.dst, utf8.RuneError)
		} else {
			w.dst = append(w.dst, b[i:i+size]...)
		}
		i += size
	}
}
