package text

// FlagSet is what RegisterFlags needs of a command line's flag set: the
// BoolVar of the standard library's flag.FlagSet and of
// github.com/spf13/pflag's FlagSet alike.
type FlagSet interface {
	BoolVar(p *bool, name string, value bool, usage string)
}

// RegisterFlags defines the normalisation switches on fs, each defaulting
// to o's current value and writing to o: --nfkc, --case-fold,
// --fold-whitespace, --fold-punct, --html, --html-all, --t2s and
// --stop-words. Every
// command that normalises text (neardup dedup, sign, compare, tune and
// neardup-beam) takes them with the same names, defaults and help.
func RegisterFlags(fs FlagSet, o *Options) {
	fs.BoolVar(&o.NFKC, "nfkc", o.NFKC, "apply Unicode NFKC (full-width forms become ASCII, ligatures split)")
	fs.BoolVar(&o.CaseFold, "case-fold", o.CaseFold, "fold case")
	fs.BoolVar(&o.Whitespace, "fold-whitespace", o.Whitespace, "collapse runs of whitespace to one space")
	fs.BoolVar(&o.Punctuation, "fold-punct", o.Punctuation, "fold punctuation, including full-width CJK punctuation")
	fs.BoolVar(&o.HTML, "html", o.HTML, "treat the text as HTML: compare its main content (navigation, menus, sidebars, footers, scripts and markup dropped); web archives give their pages' main content too")
	fs.BoolVar(&o.HTMLAll, "html-all", o.HTMLAll, "with --html, compare the whole page's visible text, template included, instead of its main content")
	fs.BoolVar(&o.T2S, "t2s", o.T2S, "convert Traditional Chinese to Simplified (OpenCC dictionaries)")
	fs.BoolVar(&o.StopWords, "stop-words", o.StopWords, "remove English and Chinese stop words")
}
