package text

import (
	"bytes"
	"io"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// MainText appends the main content of the HTML document read from r to
// dst: the article or documentation body without the site's navigation,
// menus, headers, footers, sidebars, comment sections and "related" link
// lists. It returns the extended buffer and whether main content was found,
// that is whether some block of text scored as a candidate. When none did
// (a page of links only, a fragment too short to score, a page whose text
// is all hidden or empty), the text appended is the page's main element
// (role="main" or main) or else the whole page without its unlikely
// content, and when that is empty the whole visible text, exactly what
// [HTMLToText] appends. The error is that of HTMLToText.
//
// The text is produced by the same rules as HTMLToText (entities decoded,
// scripts and styles dropped, block elements on lines of their own); only
// which parts of the page are kept differs. The choice follows Mozilla
// Readability's scoring (Readability.js, Arc90's algorithm), computed in one
// pass of the x/net/html tokenizer over a light tree of the block elements,
// without building the DOM:
//
//   - Elements whose class or id names boilerplate (nav, menu, sidebar,
//     footer, comment, related, share, cookie, breadcrumbs, banner, ...)
//     and do not also name content (article, body, content, main, ...),
//     nav, aside and footer elements, and hidden elements (the hidden
//     attribute, aria-hidden="true", display:none) are unlikely content.
//     An id of two or more words that is the slug of the element's own
//     heading (Sphinx's section id="community-testing" around "Community
//     Testing", "stream-header-1") names the section's subject and is
//     not counted.
//   - Every block with at least 25 characters of its own text (inline
//     markup included, nested blocks not) scores 1 + its commas +
//     min(chars/100, 3) (commas inside pre do not count: code is not
//     prose) and gives the score to its parent, half to its
//     grandparent and a third of the level to the ancestors above, up to
//     five levels. An ancestor starts from its tag's prior (div +5; pre,
//     td, blockquote +3; lists and forms -3; headings -5) and its class
//     weight (+25 for content names, -25 for boilerplate names).
//   - A candidate's score is scaled by one minus its link density (the
//     share of its text inside links). The best candidate is kept, raised
//     to an ancestor whose score is not much lower, and joined by those of
//     its siblings that score at least a fifth of it or are paragraphs of
//     prose.
//   - Inside the kept blocks, unlikely content and link lists (blocks of
//     at least 25 characters, more than half of them in links) are
//     dropped. Paragraphs are not link lists, nor are headings whose
//     links all lead within the page (Sphinx's back-references to the
//     local table of contents).
//   - The page's title heading is kept when the chosen blocks leave it
//     out: the first h1-h3 whose text begins or ends the title element's
//     and makes at least half of it (the rest is the site's name).
//
// MainText reads r to the end. Its cost is that of HTMLToText plus work
// linear in the number of elements.
func MainText(dst []byte, r io.Reader) ([]byte, bool, error) {
	var m mainExtractor
	m.init(dst)
	err := m.run(r)
	out, found := m.extract()
	return out, found, err
}

// MainVersion is the version of [MainText]'s extraction: the main content
// it keeps of a page. It is bumped whenever MainText's output changes for
// any input (a rule of the scoring, of what is boilerplate, of the text
// appended), so that an index that sketched pages' main content
// (store: an --html index without --html-all) can tell that its pages were
// extracted by another version than the one that queries it. A change of
// the output makes TestMainTextGolden fail: bump MainVersion in the same
// change, then rewrite the golden files (go test ./text -run
// TestMainTextGolden -update). Version 1 is the extraction of neardup
// session 26 (heading-slug section ids and in-page heading links kept);
// earlier ones recorded no version.
const MainVersion = 1

// ExtractHTML appends the text of the HTML document read from r to dst: its
// main content ([MainText]), or with all its whole visible text
// ([HTMLToText], found always true). It is what the HTML step of a
// [Normalizer] with [Options.HTMLAll] = all extracts.
func ExtractHTML(dst []byte, r io.Reader, all bool) (out []byte, found bool, err error) {
	if all {
		out, err = HTMLToText(dst, r)
		return out, true, err
	}
	return MainText(dst, r)
}

// A block element of the light tree. Inline elements are not nodes: their
// text belongs to the enclosing block.
type mnode struct {
	parent   int32
	tag      atom.Atom
	weight   int16 // class and id: +25 content, -25 boilerplate
	unlikely bool  // this node or an ancestor is unlikely content
	self     bool  // this node itself is unlikely content
	hidden   bool
	main     bool  // role="main" or a main element
	own      int32 // runes of the node's own text
	ownLink  int32 // of them, in links
	ownLocal int32 // of them, in links within the page (href="#...")
	commas   int32
	total    int32 // runes of text in the subtree
	link     int32 // of them, in links
	score    float64
	scored   bool
	nchild   int32 // child nodes
	last     int32 // 1 + the index in segs of the node's last own piece of text, or 0
}

// A piece of text, as appended to the whole-page buffer.
type mseg struct {
	node       int32
	start, end int32 // in the whole-page buffer, separator excluded
	sep        uint8 // separator written before it: sepNone, sepSpace, sepNewline
}

// maxMainDepth bounds the open blocks tracked; deeper ones are not nodes.
const maxMainDepth = 512

type mainExtractor struct {
	w      htmlWriter
	dst0   int // len(dst) on entry
	nodes  []mnode
	segs   []mseg
	stack  []int32  // open nodes, innermost last
	deep   int      // blocks opened beyond maxMainDepth
	attr   []byte   // scratch for class and id
	title  []byte   // the text of the title element
	slugs  []slugID // nodes whose id may be their heading's slug
	ids    []byte   // the ids of slugs
	strip  bool     // unlikely content is out (the first attempt)
	scored bool     // choose found a candidate: a block that scored, or a main element
}

func (m *mainExtractor) init(dst []byte) {
	m.w = htmlWriter{dst: dst, start: len(dst)}
	m.dst0 = len(dst)
	m.title = m.title[:0]
	m.slugs, m.ids = m.slugs[:0], m.ids[:0]
	m.nodes = append(m.nodes[:0], mnode{parent: -1, tag: atom.Body})
	m.stack = append(m.stack[:0], 0)
}

func (m *mainExtractor) top() int32 { return m.stack[len(m.stack)-1] }

func (m *mainExtractor) run(r io.Reader) error { return walkHTML(r, &m.w, m) }

// isNode reports whether elements a are nodes of the light tree.
func isNode(a atom.Atom) bool {
	switch a {
	case atom.Body, atom.Html, atom.Head, atom.Br, atom.Hr:
		return false
	case atom.Td, atom.Th:
		return true
	}
	return boundary(a) == '\n'
}

// closesP reports whether a start tag a closes an open p (the HTML parsing
// rules, for the block elements).
func closesP(a atom.Atom) bool {
	return boundary(a) == '\n'
}

func (m *mainExtractor) open(z *html.Tokenizer, a atom.Atom) {
	// The implied end tags that matter for the tree's shape.
	for len(m.stack) > 1 {
		t := m.nodes[m.top()].tag
		if (t == atom.P && closesP(a)) || (t == a && (a == atom.Li || a == atom.Dt || a == atom.Dd || a == atom.Td || a == atom.Th || a == atom.Tr || a == atom.Option)) ||
			((t == atom.Td || t == atom.Th) && (a == atom.Td || a == atom.Th || a == atom.Tr)) || ((t == atom.Dt || t == atom.Dd) && (a == atom.Dt || a == atom.Dd)) {
			m.stack = m.stack[:len(m.stack)-1]
			continue
		}
		break
	}
	if len(m.stack) >= maxMainDepth {
		m.deep++
		return
	}
	p := m.top()
	n := mnode{parent: p, tag: a, hidden: m.nodes[p].hidden}
	m.attr = m.attr[:0]
	idStart, idEnd := -1, -1
	for {
		k, v, more := z.TagAttr()
		switch string(k) {
		case "class", "id":
			if string(k) == "id" && idStart < 0 {
				idStart = len(m.attr)
				idEnd = idStart + len(v)
			}
			m.attr = append(m.attr, v...)
			m.attr = append(m.attr, ' ')
		case "hidden":
			n.hidden = true
		case "aria-hidden":
			if string(v) == "true" {
				n.hidden = true
			}
		case "style":
			if hiddenStyle(v) {
				n.hidden = true
			}
		case "role":
			switch string(v) {
			case "navigation", "complementary", "contentinfo", "banner", "menu", "menubar", "dialog", "alertdialog":
				n.weight -= 25
				n.self = true
			case "main":
				n.weight += 25
				n.main = true
			case "article":
				n.weight += 25
			}
		}
		if !more {
			break
		}
	}
	if len(m.attr) > 0 {
		w, unlikely := classWeight(m.attr)
		if idStart >= 0 && (w != 0 || unlikely) && slugLike(m.attr[idStart:idEnd]) {
			// The id may be the slug of the element's heading
			// ("community-testing" for "Community Testing"): its names
			// then say what the section is about, not what it is for.
			// extract decides, once the heading's text is known.
			cls := append(m.attr[:idStart:idStart], m.attr[idEnd+1:]...)
			cw, cu := classWeight(cls)
			m.slugs = append(m.slugs, slugID{node: int32(len(m.nodes)), seg: int32(len(m.segs)),
				id0: int32(len(m.ids)), id1: int32(len(m.ids) + idEnd - idStart), dw: cw - w,
				unlikely: unlikely && a != atom.Body && a != atom.Html, classUnlikely: cu && a != atom.Body && a != atom.Html, role: n.self})
			m.ids = append(m.ids, m.attr[idStart:idEnd]...)
		}
		n.weight += w
		if unlikely && a != atom.Body && a != atom.Html {
			n.self = true
		}
	}
	switch a {
	case atom.Nav, atom.Aside, atom.Footer:
		n.self = true
	case atom.Main:
		n.weight += 25
		n.main = true
	case atom.Article:
		n.weight += 25
	}
	n.unlikely = n.self || m.nodes[p].unlikely
	m.nodes[p].nchild++
	m.nodes = append(m.nodes, n)
	m.stack = append(m.stack, int32(len(m.nodes)-1))
}

func (m *mainExtractor) close(a atom.Atom) {
	if m.deep > 0 {
		m.deep--
		return
	}
	for i := len(m.stack) - 1; i >= 1 && i >= len(m.stack)-64; i-- {
		if m.nodes[m.stack[i]].tag == a {
			m.stack = m.stack[:i]
			return
		}
	}
}

// hiddenStyle reports whether an inline style hides its element.
func hiddenStyle(v []byte) bool {
	var b [64]byte
	n := 0
	for _, c := range v {
		if c == ' ' || c == '\t' || c == '\n' {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if n == len(b) {
			break
		}
		b[n] = c
		n++
	}
	return bytes.Contains(b[:n], []byte("display:none")) || bytes.Contains(b[:n], []byte("visibility:hidden"))
}

// Class and id names, after Readability's unlikelyCandidates,
// okMaybeItsACandidate, positive and negative patterns (lower case).
var (
	unlikelyNames = [][]byte{
		[]byte("-ad-"), []byte("ai2html"), []byte("banner"), []byte("breadcrumb"), []byte("combx"),
		[]byte("comment"), []byte("community"), []byte("cover-wrap"), []byte("disqus"), []byte("extra"),
		[]byte("footer"), []byte("gdpr"), []byte("header"), []byte("legends"), []byte("menu"),
		[]byte("related"), []byte("remark"), []byte("replies"), []byte("rss"), []byte("shoutbox"),
		[]byte("sidebar"), []byte("skyscraper"), []byte("social"), []byte("sponsor"), []byte("supplemental"),
		[]byte("ad-break"), []byte("agegate"), []byte("pagination"), []byte("pager"), []byte("popup"),
		[]byte("yom-remote"), []byte("cookie"), []byte("consent"), []byte("navbar"), []byte("navigation"),
		[]byte("share"), []byte("subscribe"), []byte("newsletter"), []byte("toolbar"),
	}
	maybeNames = [][]byte{
		[]byte("and"), []byte("article"), []byte("body"), []byte("column"), []byte("content"),
		[]byte("main"), []byte("mathjax"), []byte("shadow"),
	}
	positiveNames = [][]byte{
		[]byte("article"), []byte("body"), []byte("content"), []byte("entry"), []byte("hentry"),
		[]byte("h-entry"), []byte("main"), []byte("page"), []byte("pagination"), []byte("post"),
		[]byte("text"), []byte("blog"), []byte("story"),
	}
	negativeNames = [][]byte{
		[]byte("-ad-"), []byte("hidden"), []byte("banner"), []byte("combx"), []byte("comment"),
		[]byte("com-"), []byte("contact"), []byte("footer"), []byte("gdpr"), []byte("masthead"),
		[]byte("media"), []byte("meta"), []byte("outbrain"), []byte("promo"), []byte("related"),
		[]byte("scroll"), []byte("share"), []byte("shoutbox"), []byte("sidebar"), []byte("skyscraper"),
		[]byte("sponsor"), []byte("shopping"), []byte("tags"), []byte("widget"), []byte("nav"),
		[]byte("menu"), []byte("cookie"),
	}
)

// classWeight returns the weight of the class and id attributes in b and
// whether they name unlikely content. b is lower-cased in place.
func classWeight(b []byte) (int16, bool) {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	var w int16
	if containsAny(b, negativeNames) {
		w -= 25
	}
	if containsAny(b, positiveNames) {
		w += 25
	}
	return w, containsAny(b, unlikelyNames) && !containsAny(b, maybeNames)
}

func containsAny(b []byte, names [][]byte) bool {
	for _, n := range names {
		if bytes.Contains(b, n) {
			return true
		}
	}
	return false
}

func (m *mainExtractor) text(b []byte, pre, link, local bool) {
	start := len(m.w.dst)
	m.w.text(b, pre)
	end := len(m.w.dst)
	if end == start {
		return
	}
	seg := mseg{node: m.top(), start: int32(start), end: int32(end)}
	switch m.w.dst[start] {
	case '\n':
		seg.sep, seg.start = sepNewline, seg.start+1
	case ' ':
		seg.sep, seg.start = sepSpace, seg.start+1
	}
	m.segs = append(m.segs, seg)
	m.nodes[seg.node].last = int32(len(m.segs))
	piece := m.w.dst[seg.start:end]
	runes := int32(utf8.RuneCount(piece))
	n := &m.nodes[seg.node]
	n.own += runes
	if link {
		n.ownLink += runes
		if local {
			n.ownLocal += runes
		}
	}
	if !pre { // commas measure prose; in code they are syntax
		n.commas += int32(bytes.Count(piece, []byte(",")) + bytes.Count(piece, []byte("，")))
	}
}

// prior is Readability's initial score of a candidate's tag.
func prior(a atom.Atom) float64 {
	switch a {
	case atom.Div:
		return 5
	case atom.Pre, atom.Td, atom.Blockquote:
		return 3
	case atom.Address, atom.Ol, atom.Ul, atom.Dl, atom.Dd, atom.Dt, atom.Li, atom.Form:
		return -3
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Th:
		return -5
	}
	return 0
}

func (m *mainExtractor) linkDensity(i int) float64 {
	n := &m.nodes[i]
	if n.total == 0 {
		return 0
	}
	return float64(n.link) / float64(n.total)
}

// extract chooses the main content and appends its text at m.dst0.
func (m *mainExtractor) extract() ([]byte, bool) {
	m.resolveSlugs()
	nodes := m.nodes
	// Subtree totals: a parent precedes its children.
	for i := len(nodes) - 1; i >= 0; i-- {
		n := &nodes[i]
		n.total += n.own
		n.link += n.ownLink
		if n.parent >= 0 {
			nodes[n.parent].total += n.total
			nodes[n.parent].link += n.link
		}
	}
	// As Readability does, a short result is tried again without
	// stripping unlikely content (a page wrapper named "has-header"), and
	// the longer result wins.
	m.strip = true
	out, ok := m.choose()
	scored := m.scored
	if ok && utf8.RuneCount(out[m.dst0:]) >= minMainRunes {
		return out, scored
	}
	m.strip = false
	out2, ok2 := m.choose()
	if ok2 && (!ok || len(out2) > len(out)) {
		return out2, m.scored
	}
	return out, ok && scored
}

// minMainRunes is the length below which a result is tried again without
// stripping unlikely content (Readability's charThreshold).
const minMainRunes = 500

// gone reports whether node n is out of the content: hidden, or unlikely
// while unlikely content is stripped.
func (m *mainExtractor) gone(n *mnode) bool { return n.hidden || (m.strip && n.unlikely) }

// choose scores the nodes and appends the text of the best candidate.
func (m *mainExtractor) choose() ([]byte, bool) {
	nodes := m.nodes
	for i := range nodes {
		nodes[i].scored, nodes[i].score = false, 0
	}
	// Score the paragraphs into their ancestors.
	for i := 1; i < len(nodes); i++ {
		n := &nodes[i]
		if m.gone(n) || n.own < 25 {
			continue
		}
		s := 1 + float64(n.commas) + min(float64(n.own/100), 3)
		for level, a := 0, n.parent; a >= 0 && level < 5; level, a = level+1, nodes[a].parent {
			an := &nodes[a]
			if m.gone(an) {
				break
			}
			if !an.scored {
				an.scored = true
				an.score = prior(an.tag) + float64(an.weight)
			}
			switch level {
			case 0:
				an.score += s
			case 1:
				an.score += s / 2
			default:
				an.score += s / float64(level*3)
			}
		}
	}
	top, best := -1, 0.0
	m.scored = false
	for i := range nodes {
		n := &nodes[i]
		if !n.scored {
			continue
		}
		n.score *= 1 - m.linkDensity(i)
		if top < 0 || n.score > best {
			top, best = i, n.score
		}
	}
	if top <= 0 {
		// Nothing scores (pages of a few short lines): keep the page's
		// main element, or the whole page, without its unlikely content.
		top = 0
		for i := 1; i < len(nodes); i++ {
			if nodes[i].main && !nodes[i].hidden && nodes[i].total > 0 {
				top = i
				break
			}
		}
		m.scored = top > 0 // the page names its main content
		return m.keep(top, false)
	}
	m.scored = true
	// Raise the candidate while an ancestor scores well, or holds only it.
	last, threshold := best, best/3
	for p := nodes[top].parent; p > 0; p = nodes[p].parent {
		if !nodes[p].scored {
			if nodes[p].nchild == 1 && nodes[p].own == 0 {
				top = int(p)
			}
			continue
		}
		if nodes[p].score < threshold {
			break
		}
		if nodes[p].score > last {
			top = int(p)
			break
		}
		last = nodes[p].score
	}
	for top > 0 && nodes[nodes[top].parent].nchild == 1 && nodes[nodes[top].parent].own == 0 && nodes[top].parent > 0 {
		top = int(nodes[top].parent)
	}
	return m.keep(top, true)
}

// keep appends the text of node top as keepFrom does; when that leaves
// nothing (a table of links, say), it keeps the link lists, then the whole
// page without its unlikely content, then the whole page (found false).
func (m *mainExtractor) keep(top int, siblings bool) ([]byte, bool) {
	if out, ok := m.keepFrom(top, siblings, true); ok {
		return out, true
	}
	if out, ok := m.keepFrom(top, siblings, false); ok {
		return out, true
	}
	if top != 0 {
		return m.keepFrom(0, false, false)
	}
	return m.w.dst, false
}

// keepFrom appends the text of node top, with its good siblings if
// siblings is set, without the unlikely content inside and, if noLinks is
// set, without link lists. It returns false, and the whole page's text,
// when that leaves nothing.
func (m *mainExtractor) keepFrom(top int, siblings, noLinks bool) ([]byte, bool) {
	nodes := m.nodes
	keep := make([]bool, len(nodes))
	keep[top] = true
	if p := nodes[top].parent; siblings && p >= 0 {
		min := max(10, nodes[top].score*0.2)
		for i := top + 1; i < len(nodes); i++ {
			m.keepSibling(keep, i, p, min)
		}
		for i := top - 1; i > int(p); i-- {
			m.keepSibling(keep, i, p, min)
		}
	}
	for i := 1; i < len(nodes); i++ {
		n := &nodes[i]
		if keep[i] || n.parent < 0 || !keep[n.parent] || n.hidden {
			continue
		}
		if m.strip && n.unlikely && !nodes[n.parent].unlikely {
			continue
		}
		if noLinks && n.total >= 25 && n.link*2 > n.total && n.tag != atom.P && !localHeading(n) {
			continue // a list of links
		}
		keep[i] = true
	}
	m.keepTitle(keep)
	out := m.w.dst[:m.dst0:m.dst0]
	out = m.appendKept(out, keep)
	if len(out) == m.dst0 {
		return m.w.dst, false
	}
	return out, true
}

// localHeading reports whether n is a heading whose links all lead within
// the page, as Sphinx's headings link back to the local table of contents
// (<h2><a class="toc-backref" href="#id3">Release Administrative
// Tasks</a><a class="headerlink" href="#release-administrative-tasks">¶</a></h2>)
// and many sites' headings to their own anchor: the heading is the
// section's title, not a list of links, and Readability never removes a
// heading for its links. A heading that links to other pages (a teaser's
// title, "Related articles") remains a link.
func localHeading(n *mnode) bool {
	return isHeading(n.tag) && n.link == n.ownLink && n.ownLocal == n.ownLink
}

func (m *mainExtractor) keepSibling(keep []bool, i int, p int32, min float64) {
	n := &m.nodes[i]
	if n.parent != p || m.gone(n) {
		return
	}
	switch {
	case n.scored && n.score >= min:
		keep[i] = true
	case n.tag == atom.P && n.own > 80 && m.linkDensity(i) < 0.25:
		keep[i] = true
	case n.tag == atom.P && n.own > 0 && n.own <= 80 && n.link == 0 && bytes.HasSuffix(m.lastText(i), []byte(".")):
		keep[i] = true
	}
}

// lastText returns the last piece of node i's own text, or nil.
func (m *mainExtractor) lastText(i int) []byte {
	if k := m.nodes[i].last; k > 0 {
		s := m.segs[k-1]
		return m.w.dst[s.start:s.end]
	}
	return nil
}

// appendKept appends the pieces of text of the kept nodes to out, which
// must not share its array with the whole-page text (keepFrom gives it
// no spare capacity, so the first append copies).
func (m *mainExtractor) appendKept(out []byte, keep []bool) []byte {
	prev := -1
	for k, s := range m.segs {
		if !keep[s.node] {
			continue
		}
		if len(out) > m.dst0 {
			switch {
			case prev != k-1 || s.sep == sepNewline:
				out = append(out, '\n')
			case s.sep == sepSpace:
				out = append(out, ' ')
			}
		}
		out = append(out, m.w.dst[s.start:s.end]...)
		prev = k
	}
	return out
}

// maxTitle bounds the title text kept for matching headings.
const maxTitle = 1024

// keepTitle adds to the kept nodes the page's title heading when the
// content chosen leaves it out: the first h1, h2 or h3 whose text begins
// or ends the title element's text ("Heading - Site", "Site | Heading")
// and is at least half of it, as a blog's post title above or below its
// body, in a block of its own. The heading names what the page is about,
// as the title does for the reader; the site's name, which makes the rest
// of the title and is often a heading too, is shorter than half of it
// and stays out, and so does the title element itself.
func (m *mainExtractor) keepTitle(keep []bool) {
	title := bytes.Join(bytes.Fields(m.title), []byte(" "))
	if len(title) == 0 {
		return
	}
	var h []byte
	for i := 1; i < len(m.nodes); i++ {
		n := &m.nodes[i]
		if n.tag != atom.H1 && n.tag != atom.H2 && n.tag != atom.H3 || n.own == 0 || n.hidden {
			continue
		}
		h = h[:0]
		for _, s := range m.segs[:n.last] {
			if int(s.node) == i {
				if len(h) > 0 {
					h = append(h, ' ')
				}
				h = append(h, m.w.dst[s.start:s.end]...)
			}
		}
		h = bytes.Join(bytes.Fields(h), []byte(" "))
		if 2*len(h) < len(title) || !bytes.HasPrefix(title, h) && !bytes.HasSuffix(title, h) {
			continue
		}
		keep[i] = true // already kept, or kept now
		return
	}
}

// A node whose class and id name boilerplate or content only because of
// an id that may be the slug of its heading.
type slugID struct {
	node, seg     int32 // the node; len(segs) when it opened
	id0, id1      int32 // its id in ids
	dw            int16 // the weight of its class alone minus that of class and id
	unlikely      bool  // class and id name unlikely content
	classUnlikely bool  // the class alone does
	role          bool  // the role names unlikely content
}

// slugLike reports whether an id has two or more runs of letters and
// digits, as the slug of a heading of two or more words has
// ("community-testing", "stream_header"). A one-word id ("comments",
// "header", "sidebar") names a part of the page even when a heading
// reads the same, and keeps its weight.
func slugLike(id []byte) bool {
	runs, in := 0, false
	for _, r := range string(id) {
		word := unicode.IsLetter(r) || unicode.IsDigit(r)
		if word && !in {
			runs++
		}
		in = word
	}
	return runs >= 2
}

// resolveSlugs takes back the names of the ids that are the slug of their
// element's heading (the element itself or its first block, an h1-h6),
// as documentation generators (Sphinx, Markdown) and many sites write
// them: Readability's name patterns would otherwise drop a section called
// "Community Testing", "Stream Header" or "extractelement Instruction".
// The id matches when its letters and digits, lower-cased, are those of
// the heading's text, with a number added after (a repeated heading) or
// the heading's leading section number left out. It then recomputes the
// unlikely flags that the nodes inherit.
func (m *mainExtractor) resolveSlugs() {
	if len(m.slugs) == 0 {
		return
	}
	nodes := m.nodes
	var id, h []byte
	changed := false
	for _, s := range m.slugs {
		hd := int(s.node)
		if !isHeading(nodes[hd].tag) {
			hd++
			if hd >= len(nodes) || int(nodes[hd].parent) != int(s.node) || !isHeading(nodes[hd].tag) {
				continue
			}
		}
		if nodes[hd].last <= s.seg {
			continue // an empty heading
		}
		h = h[:0]
		for _, g := range m.segs[s.seg:nodes[hd].last] {
			if int(g.node) == hd {
				h = appendAlnum(h, m.w.dst[g.start:g.end])
			}
		}
		id = appendAlnum(id[:0], m.ids[s.id0:s.id1])
		if !slugOf(id, h) {
			continue
		}
		n := &nodes[s.node]
		n.weight += s.dw
		if s.unlikely && !s.classUnlikely {
			// The role or the tag may still make it unlikely.
			n.self = s.role || n.tag == atom.Nav || n.tag == atom.Aside || n.tag == atom.Footer
			changed = true
		}
	}
	if changed {
		for i := 1; i < len(nodes); i++ {
			nodes[i].unlikely = nodes[i].self || nodes[nodes[i].parent].unlikely
		}
	}
}

func isHeading(a atom.Atom) bool {
	switch a {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		return true
	}
	return false
}

// appendAlnum appends the letters and digits of b, lower-cased.
func appendAlnum(dst, b []byte) []byte {
	for _, r := range string(b) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			dst = utf8.AppendRune(dst, unicode.ToLower(r))
		}
	}
	return dst
}

// slugOf reports whether id (letters and digits) is the slug of heading h:
// the same, h followed by digits, or h without its leading digits.
func slugOf(id, h []byte) bool {
	if len(id) == 0 || len(h) == 0 {
		return false
	}
	if rest, ok := bytes.CutPrefix(id, h); ok && allDigits(rest) {
		return true
	}
	if lead, ok := bytes.CutSuffix(h, id); ok && allDigits(lead) {
		return true
	}
	return false
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
