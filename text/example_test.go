package text_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/neardup/neardup/text"
)

func Example() {
	n, err := text.New(text.DefaultOptions())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n.String("  Ｈｅｌｌｏ,\tWORLD!  “Quotes”  — dashes "))
	fmt.Println(n.String("這是一個測試，ＯＫ？"))

	opts := text.DefaultOptions()
	opts.T2S = true
	n, err = text.New(opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n.String("這是一個測試，ＯＫ？"))
	// Output:
	// hello world quotes dashes
	// 這是一個測試 ok
	// 这是一个测试 ok
}

func ExampleNormalizer_Append() {
	opts := text.DefaultOptions()
	opts.KeepNewlines = true
	opts.PunctuationMode = text.PunctCanonical
	n, err := text.New(opts)
	if err != nil {
		log.Fatal(err)
	}
	var buf []byte
	for _, doc := range []string{"「你好」，世界！\r\n\r\n  Second   line", "It’s “fine” — really…"} {
		buf = n.Append(buf[:0], doc) // reuses buf's memory
		fmt.Printf("%q\n", buf)
	}
	// Output:
	// "\"你好\",世界!\nsecond line"
	// "it's \"fine\" - really..."
}

func ExampleHTMLToText() {
	page := `<html><head><title>Site</title><script>track()</script></head>
<body><h1>News</h1><p>Caf&eacute; <b>opens</b>&nbsp;today.<br>More soon.</p>
<!-- comment --><ul><li>one<li>two</ul></body></html>`
	txt, err := text.HTMLToText(nil, strings.NewReader(page))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", txt)
	// Output:
	// "News\nCafé opens\u00a0today.\nMore soon.\none\ntwo"
}
