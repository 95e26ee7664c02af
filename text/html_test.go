package text

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html/atom"
)

func TestHTMLToText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"plain", "just text", "just text"},
		{"paragraphs", "<p>one</p><p>two</p>", "one\ntwo"},
		{"inline", "a<b>b</b><i>c</i> <span>d</span>", "abc d"},
		{"br", "one<br>two<br/><br>three", "one\ntwo\nthree"},
		{"whitespace", "  <p>  a \n\t b  </p>\n\n  <p>c</p>  ", "a b\nc"},
		{"entities", "&lt;tag&gt; &amp; &quot;q&quot; &#x4E2D;&#25991; caf&eacute; a&nbsp;b", "<tag> & \"q\" 中文 café a\u00a0b"},
		{"bad entities", "&#0; &#xD800; &bogus; &amp", "\ufffd \ufffd &bogus; &"},
		{"script", "a<script>var s = '<p>x</p>';</script>b", "ab"},
		{"style", "<style>p { color: red }</style>text", "text"},
		{"dropped set", "<noscript>n</noscript><template><p>t</p></template><title>T</title><textarea>x</textarea><select><option>o</option></select><svg><text>s</text></svg><iframe>i</iframe>v", "v"},
		{"head", "<html><head><title>Title</title><meta charset=utf-8><link rel=x></head><body>Body</body></html>", "Body"},
		{"comments", "a<!-- hidden <p>x</p> -->b<!DOCTYPE html><?php echo 1 ?>c", "abc"},
		{"lists", "<ul><li>one<li>two</ul><ol><li>three</li></ol>", "one\ntwo\nthree"},
		{"headings", "<h1>Title</h1>text<h2>Sub</h2>", "Title\ntext\nSub"},
		{"table", "<table><tr><td>a</td><td>b</td></tr><tr><th>c</th><td>d</td></tr></table>", "a b\nc d"},
		{"pre", "<pre>line 1\n  line 2\n\nline 3</pre>after", "line 1\nline 2\nline 3\nafter"},
		{"pre lines", "x<pre>\na\nb\n</pre>", "x\na\nb"},
		{"unclosed script", "a<script>never closed <p>b", "a"},
		{"unclosed svg ends at body", "<body>a<svg><g>b</body>c", "a\nc"},
		{"nested dropped", "<svg><svg></svg>x</svg>y", "y"},
		{"stray end tags", "</p></div>a</script>b</svg>c", "abc"},
		{"self-closing script", "<script/>a", "a"},
		{"malformed", "<p <b>x</b> <<>> < p>y", "x <<>> < p>y"},
		{"attributes ignored", `<a href="http://x" title="t">link</a> <img alt="alt">`, "link"},
		{"cjk", "<p>這是一個測試，</p><div>中文。</div>", "這是一個測試，\n中文。"},
		{"invalid utf8", "<p>a\xffb</p>", "a\ufffdb"},
		{"nul", "a\x00b", "a\x00b"},
		{"cdata", "<svg><![CDATA[x]]></svg>y<![CDATA[z]]>", "y"},
		{"plaintext", "a<plaintext><p>raw</p>", "a\n<p>raw</p>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HTMLToText([]byte("pre:"), strings.NewReader(tc.in))
			if err != nil {
				t.Fatalf("HTMLToText(%q): %v", tc.in, err)
			}
			if string(got) != "pre:"+tc.want {
				t.Errorf("HTMLToText(%q) = %q, want %q", tc.in, got[len("pre:"):], tc.want)
			}
		})
	}
}

type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestHTMLToTextReaderError(t *testing.T) {
	boom := errors.New("boom")
	got, err := HTMLToText(nil, &failingReader{data: []byte("<p>partial text</p><p>more"), err: boom})
	if !errors.Is(err, boom) {
		t.Fatalf("HTMLToText(failing reader) error = %v, want %v", err, boom)
	}
	if !bytes.HasPrefix(got, []byte("partial text")) {
		t.Errorf("HTMLToText(failing reader) = %q, want the text read before the error", got)
	}
}

func TestHTMLToTextDeepNesting(t *testing.T) {
	in := strings.Repeat("<svg>", 1000) + "x" + strings.Repeat("</svg>", 1000) + "visible"
	got, err := HTMLToText(nil, strings.NewReader(in))
	if err != nil || string(got) != "visible" {
		t.Errorf("HTMLToText(1000 nested svg) = %q, %v, want %q", got, err, "visible")
	}
	in = strings.Repeat("<div>", 100000) + "deep" + strings.Repeat("</div>", 100000)
	got, err = HTMLToText(nil, strings.NewReader(in))
	if err != nil || string(got) != "deep" {
		t.Errorf("HTMLToText(100000 nested div) = %q, %v, want %q", got, err, "deep")
	}
}

func FuzzHTMLToText(f *testing.F) {
	for _, s := range []string{
		"", "<p>a</p>", "<script>x</script>y", "<svg><svg>x", "&amp;&#0;&#xFFFFFF;", "<pre>\n\na\n</pre>",
		"<table><tr><td>x<td>y", "a\xff<b\xfe>", "<!-- x", "<title>t", "<plaintext>x", "<p <p <p",
		"<body><svg></body>z", "<![CDATA[x]]>", "<math><mi>x</mi></math>after",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := HTMLToText(nil, bytes.NewReader(in))
		if err != nil {
			t.Fatalf("HTMLToText(%q): %v", in, err)
		}
		if !utf8.Valid(out) {
			t.Fatalf("HTMLToText(%q) = %q, not valid UTF-8", in, out)
		}
		for _, bad := range []string{"  ", "\n\n", " \n", "\n "} {
			if bytes.Contains(out, []byte(bad)) {
				t.Fatalf("HTMLToText(%q) = %q contains %q", in, out, bad)
			}
		}
		if bytes.HasPrefix(out, []byte(" ")) || bytes.HasPrefix(out, []byte("\n")) ||
			bytes.HasSuffix(out, []byte(" ")) || bytes.HasSuffix(out, []byte("\n")) {
			t.Fatalf("HTMLToText(%q) = %q has leading or trailing separators", in, out)
		}
		// Reading in small pieces must give the same text.
		pieces, err := HTMLToText(nil, io.LimitReader(&oneByteReader{in}, int64(len(in))))
		if err != nil || !bytes.Equal(pieces, out) {
			t.Fatalf("HTMLToText(%q) = %q at once but %q, %v a byte at a time", in, out, pieces, err)
		}
		// The normaliser with HTML on produces valid, stable text too.
		n := htmlNormalizer
		norm := n.AppendBytes(nil, in)
		if !utf8.Valid(norm) {
			t.Fatalf("Normalize(HTML %q) = %q, not valid UTF-8", in, norm)
		}
		if again := plainNormalizer.AppendBytes(nil, norm); !bytes.Equal(again, norm) {
			t.Fatalf("Normalize(HTML %q) = %q, not a fixed point of the same steps without HTML: %q", in, norm, again)
		}
	})
}

var (
	htmlNormalizer = func() *Normalizer {
		n, _ := New(with(func(o *Options) { o.HTML, o.KeepNewlines = true, true }))
		return n
	}()
	plainNormalizer = func() *Normalizer { n, _ := New(with(func(o *Options) { o.KeepNewlines = true })); return n }()
)

type oneByteReader struct{ b []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = r.b[0]
	r.b = r.b[1:]
	return 1, nil
}

func TestTagAtom(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want atom.Atom
	}{
		{"<p>", atom.P},
		{"</P>", atom.P},
		{"<DIV class=x>", atom.Div},
		{"<br/>", atom.Br},
		{"<script\ttype=x>", atom.Script},
		{"</script\n>", atom.Script},
		{"<svg>", atom.Svg},
		{"<my-element>", 0},
		{"<averyveryverylongtagname>", 0},
		{"<", 0},
		{"</", 0},
		{"<p\x00>", 0},
	} {
		if got := tagAtom([]byte(tc.raw)); got != tc.want {
			t.Errorf("tagAtom(%q) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}
