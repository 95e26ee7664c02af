package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/ksentence"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/report"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/sketch"
)

type compareOpts struct {
	json    bool
	explain bool
	corpus  string
	ids     string
	limit   int
	sketch  sketchFlags
	input   inputFlags
}

func newCompareCmd(e *env) *cobra.Command {
	o := &compareOpts{}
	cmd := &cobra.Command{
		Use:   "compare [flags] TEXT_A TEXT_B",
		Short: "Every similarity measure for one pair of texts",
		Long: `Compare two texts with every measure neardup has. An argument that starts
with @ names a file to read (@- reads standard input). With --corpus FILE
--ids ID1,ID2 the two texts are the documents with those ids in FILE (any
format dedup reads; see --text-field and --id-field). An id may hold
commas: the comma that splits --ids into two ids of FILE is taken.

Measures, all on the normalised texts (see the normalisation flags):
  jaccard      exact Jaccard of the shingle sets (--unit, --ngram)
  jaccard_bag  multiset Jaccard: sum of minimum counts over sum of maximum
               counts
  minhash      MinHash estimate of jaccard: the fraction of equal slots of
               the signatures (--num-perm, --minhash-family, --seed), as
               dedup --method minhash computes them with the same flags
  simhash      Hamming distance of the SimHash fingerprints (--bits,
               --weights: set, count or sublinear; --seed), as dedup
               --method simhash computes them with the same flags
  ksentence    whether the --k-sentences longest sentences are identical
               (MD5 of them); sentences are split on the text normalised
               with punctuation folding off and newlines kept

--explain adds the shingles both texts share and those only one has (as
their tokens, in text order), the longest sentences, and a word-level diff
of the two normalised texts: [-text-] is only in A, {+text+} only in B.
--json prints everything as JSON, with every shingle.

` + exitHelp,
		Args: func(_ *cobra.Command, args []string) error {
			if o.ids != "" && o.corpus == "" && len(args) == 1 {
				// compare --ids A,B FILE: the file given as a text.
				return usageErr("--ids needs --corpus FILE: give the file as --corpus %s, not as a text", args[0])
			}
			if o.corpus != "" || o.ids != "" {
				if len(args) != 0 {
					return usageErr("compare --corpus FILE --ids ID1,ID2 takes no texts, got %d", len(args))
				}
				return nil
			}
			if len(args) != 2 {
				return usageErr("compare takes two texts, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(o, args, e)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.BoolVar(&o.explain, "explain", false, "show the shared and unshared shingles and a word diff of the normalised texts")
	fs.StringVar(&o.corpus, "corpus", "", "read the two texts from this corpus file, by --ids")
	fs.StringVar(&o.ids, "ids", "", "with --corpus: the ids of the two documents, ID1,ID2")
	fs.IntVar(&o.limit, "limit", 50, "with --explain: most shingles listed per group in text output (0: all)")
	o.sketch.register(fs, groupShingle|groupMinHash|groupSimHash|groupKSentence|groupSeed)
	o.input.register(fs)
	return cmd
}

// comparison is what compare prints. The names of the exact measures
// (unit ... jaccard_bag) are a stable interface and stay last, in their
// order, so that jaccard_bag ends the object.
type comparison struct {
	A string `json:"a,omitempty"` // ids, with --corpus
	B string `json:"b,omitempty"`

	Explain *explanation `json:"explain,omitempty"`

	MinHash        float64 `json:"minhash"`
	MinHashEqual   int     `json:"minhash_equal_slots"`
	MinHashNumPerm int     `json:"minhash_num_perm"`
	MinHashFamily  string  `json:"minhash_family"`

	SimHashDistance int    `json:"simhash_distance"`
	SimHashBits     int    `json:"simhash_bits"`
	SimHashA        string `json:"simhash_a"`
	SimHashB        string `json:"simhash_b"`

	KSentenceMatch bool   `json:"ksentence_match"`
	KSentenceK     int    `json:"ksentence_k"`
	KSentenceA     string `json:"ksentence_a"`
	KSentenceB     string `json:"ksentence_b"`

	Unit       string  `json:"unit"`
	Ngram      int     `json:"ngram"`
	ShinglesA  int     `json:"shingles_a"`
	ShinglesB  int     `json:"shingles_b"`
	Shared     int     `json:"shared"`
	Jaccard    float64 `json:"jaccard"`
	BagA       int     `json:"bag_a"`
	BagB       int     `json:"bag_b"`
	JaccardBag float64 `json:"jaccard_bag"`
}

// explanation is what --explain adds.
type explanation struct {
	NormalizedA string     `json:"normalized_a"`
	NormalizedB string     `json:"normalized_b"`
	SharedList  []string   `json:"shared_shingles"`
	OnlyA       []string   `json:"only_a_shingles"`
	OnlyB       []string   `json:"only_b_shingles"`
	SentencesA  []string   `json:"longest_sentences_a"`
	SentencesB  []string   `json:"longest_sentences_b"`
	Diff        []diffEdit `json:"diff"`
}

type diffEdit struct {
	Op   string `json:"op"` // equal, delete (only in A), insert (only in B)
	Text string `json:"text"`
}

func runCompare(o *compareOpts, args []string, e *env) error {
	var a, b, idA, idB string
	var err error
	if o.corpus != "" || o.ids != "" {
		pairs, err := o.parseIDs()
		if err != nil {
			return err
		}
		ropts, err := o.input.options()
		if err != nil {
			return err
		}
		var p idPair
		if p, a, b, err = findPair(o.corpus, ropts, o.input.skipInvalid, pairs); err != nil {
			return err
		}
		idA, idB = p.a, p.b
	} else {
		if a, err = readArg(args[0], e.stdin); err != nil {
			return err
		}
		if b, err = readArg(args[1], e.stdin); err != nil {
			return err
		}
	}
	if o.limit < 0 {
		return usageErr("--limit %d: must not be negative", o.limit)
	}
	c, err := compareTexts(&o.sketch, a, b, o.explain)
	if err != nil {
		return err
	}
	c.A, c.B = idA, idB
	if o.json {
		return writeJSON(e.stdout, c)
	}
	return printComparison(e.stdout, c, o.limit)
}

// idPair is one reading of --ids: the two ids on either side of a comma.
type idPair struct{ a, b string }

// parseIDs gives the readings of --ids: one for each comma that leaves two
// non-empty ids. Ids may contain commas (URLs, "Genesis 1:1, KJV"): the
// corpus decides which reading names two of its documents (findPair).
func (o *compareOpts) parseIDs() ([]idPair, error) {
	if o.corpus == "" {
		return nil, usageErr("--ids needs --corpus FILE")
	}
	if o.ids == "" {
		return nil, usageErr("--corpus needs --ids ID1,ID2")
	}
	var pairs []idPair
	for i := range len(o.ids) {
		if o.ids[i] == ',' && i > 0 && i < len(o.ids)-1 {
			pairs = append(pairs, idPair{o.ids[:i], o.ids[i+1:]})
		}
	}
	if len(pairs) == 0 {
		return nil, usageErr("--ids %q: want two ids separated by a comma", o.ids)
	}
	return pairs, nil
}

// findPair reads the corpus file until it has seen both ids of a reading
// of --ids and returns it with their texts. With more than one reading it
// reads the whole file, and exactly one of them must name two documents.
func findPair(path string, opts corpus.Options, skipInvalid bool, pairs []idPair) (idPair, string, string, error) {
	if path == "-" {
		return idPair{}, "", "", usageErr("--corpus cannot read standard input")
	}
	if skipInvalid {
		opts.OnInvalid = func(*corpus.RecordError) error { return nil }
	}
	rd, err := corpus.Open(path, opts)
	if err != nil {
		return idPair{}, "", "", err
	}
	defer rd.Close()
	texts := make(map[string]string, 2*len(pairs))
	want := make(map[string]bool, 2*len(pairs))
	for _, p := range pairs {
		want[p.a], want[p.b] = true, true
	}
	for rd.Next() {
		d := rd.Doc()
		if _, seen := texts[d.ID]; want[d.ID] && !seen {
			texts[d.ID] = strings.Clone(d.Text)
			if p := pairs[0]; len(pairs) == 1 && hasBoth(texts, p) {
				return p, texts[p.a], texts[p.b], nil
			}
		}
	}
	if err := rd.Err(); err != nil {
		return idPair{}, "", "", err
	}
	var found []idPair
	for _, p := range pairs {
		if hasBoth(texts, p) {
			found = append(found, p)
		}
	}
	switch {
	case len(found) == 1:
		p := found[0]
		return p, texts[p.a], texts[p.b], nil
	case len(found) > 1:
		var ways []string
		for _, p := range found {
			ways = append(ways, fmt.Sprintf("%q and %q", p.a, p.b))
		}
		return idPair{}, "", "", usageErr("--ids: its commas name two documents of %s in more than one way: %s; compare the texts themselves (@FILE)", path, strings.Join(ways, ", or "))
	case len(pairs) > 1:
		return idPair{}, "", "", usageErr("--ids %q: no comma splits it into two ids of documents in %s", pairs[0].a+","+pairs[0].b, path)
	}
	p := pairs[0]
	var missing []string
	if _, ok := texts[p.a]; !ok {
		missing = append(missing, fmt.Sprintf("%q", p.a))
	}
	if _, ok := texts[p.b]; !ok && p.b != p.a {
		missing = append(missing, fmt.Sprintf("%q", p.b))
	}
	return idPair{}, "", "", usageErr("--ids: no document with id %s in %s", strings.Join(missing, " or "), path)
}

// hasBoth reports whether texts holds both ids of p.
func hasBoth(texts map[string]string, p idPair) bool {
	_, okA := texts[p.a]
	_, okB := texts[p.b]
	return okA && okB
}

// compareTexts computes every measure with the Specs of the flags: the
// sketches are those dedup computes with the same flags.
func compareTexts(f *sketchFlags, a, b string, explain bool) (*comparison, error) {
	if f.Weights == sketch.WeightTFIDF.String() {
		return nil, usageErr("--weights tfidf: compare has no corpus to learn IDF weights from (use set, count or sublinear)")
	}
	sketcher := func(m sketch.Method) (*sketch.Sketcher, error) {
		spec, err := f.spec(m)
		if err != nil {
			return nil, err
		}
		return spec.NewSketcher()
	}
	js, err := sketcher(sketch.Jaccard)
	if err != nil {
		return nil, err
	}
	sopts := js.Spec().Shingle
	sh, err := shingle.New(sopts)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	na, nb := string(js.Normalize(nil, a)), string(js.Normalize(nil, b))
	var skA, skB sketch.Sketch
	js.SketchNormalized(&skA, []byte(na))
	js.SketchNormalized(&skB, []byte(nb))
	setA, setB := skA.Set, skB.Set
	bagA, bagB := sh.AppendBag(nil, na), sh.AppendBag(nil, nb)
	c := &comparison{
		Unit: sopts.Unit.String(), Ngram: sopts.N,
		ShinglesA: len(setA), ShinglesB: len(setB), Shared: jaccard.Intersection(setA, setB),
		Jaccard: jaccard.Set(setA, setB),
		BagA:    len(bagA), BagB: len(bagB), JaccardBag: jaccard.Bag(bagA, bagB),
	}

	mh, err := sketcher(sketch.MinHash)
	if err != nil {
		return nil, err
	}
	var mA, mB sketch.Sketch
	mh.SketchNormalized(&mA, []byte(na))
	mh.SketchNormalized(&mB, []byte(nb))
	ms := mh.Spec()
	c.MinHash, _ = ms.Similarity(&mA, &mB)
	if !mA.Empty && !mB.Empty {
		c.MinHashEqual = minhash.Matches(mA.Sig, mB.Sig)
	}
	c.MinHashNumPerm, c.MinHashFamily = ms.MinHash.NumPerm, ms.MinHash.Family.String()

	sim, err := sketcher(sketch.SimHash)
	if err != nil {
		return nil, err
	}
	var fA, fB sketch.Sketch
	sim.SketchNormalized(&fA, []byte(na))
	sim.SketchNormalized(&fB, []byte(nb))
	bits := sim.Spec().SimHash.Bits
	c.SimHashDistance, c.SimHashBits = fA.FP.Distance(fB.FP), bits
	c.SimHashA, c.SimHashB = string(fA.FP.AppendHex(nil, bits)), string(fB.FP.AppendHex(nil, bits))

	// KSentence's Spec keeps sentence punctuation and line breaks.
	ksk, err := sketcher(sketch.KSentence)
	if err != nil {
		return nil, err
	}
	k := ksk.Spec().KSentence.K
	ks, err := ksentence.New(ksentence.Options{K: k})
	if err != nil {
		return nil, err
	}
	ka, kb := ksk.Normalize(nil, a), ksk.Normalize(nil, b)
	var hA, hB sketch.Sketch
	ksk.SketchNormalized(&hA, ka)
	ksk.SketchNormalized(&hB, kb)
	fa, fb := ksentence.Fingerprint(hA.Hash), ksentence.Fingerprint(hB.Hash)
	c.KSentenceMatch, c.KSentenceK, c.KSentenceA, c.KSentenceB = fa == fb, k, fa.String(), fb.String()

	if explain {
		x := &explanation{NormalizedA: na, NormalizedB: nb}
		x.SharedList, x.OnlyA, x.OnlyB = shingleLists(sh, na, nb)
		x.SentencesA = strings.Split(string(ks.AppendLongest(nil, ka)), "\n")
		x.SentencesB = strings.Split(string(ks.AppendLongest(nil, kb)), "\n")
		x.Diff = []diffEdit{}
		for _, ed := range report.DiffText(na, nb) {
			x.Diff = append(x.Diff, diffEdit{Op: ed.Kind.String(), Text: ed.Text})
		}
		c.Explain = x
	}
	return c, nil
}

// shingleLists returns the shingles of a and b as text: those in both (in
// the order of a), those only in a, those only in b, each once.
func shingleLists(sh *shingle.Shingler, a, b string) (shared, onlyA, onlyB []string) {
	ga, ha := grams(sh, a)
	gb, hb := grams(sh, b)
	inA := make(map[uint64]bool, len(ha))
	for _, h := range ha {
		inA[h] = true
	}
	inB := make(map[uint64]bool, len(hb))
	for _, h := range hb {
		inB[h] = true
	}
	seen := map[uint64]bool{}
	shared, onlyA, onlyB = []string{}, []string{}, []string{}
	for i, h := range ha {
		if seen[h] {
			continue
		}
		seen[h] = true
		if inB[h] {
			shared = append(shared, ga[i])
		} else {
			onlyA = append(onlyA, ga[i])
		}
	}
	for i, h := range hb {
		if !seen[h] {
			seen[h] = true
			onlyB = append(onlyB, gb[i])
		}
	}
	return shared, onlyA, onlyB
}

// grams returns the shingles of s as text and as their hashes, in text
// order with repeats. The shingle package only hashes; the text is rebuilt
// from its tokens the way it hashes them (joined by one space for words,
// concatenated for characters; a text shorter than n tokens is one
// shingle).
func grams(sh *shingle.Shingler, s string) ([]string, []uint64) {
	hashes := sh.AppendHashes(nil, s)
	toks := sh.Tokens(nil, s)
	sep := " "
	if sh.Unit() == shingle.Char {
		sep = ""
	}
	n := min(sh.N(), len(toks))
	var gs []string
	for i := 0; n > 0 && i+n <= len(toks); i++ {
		gs = append(gs, strings.Join(toks[i:i+n], sep))
	}
	if len(gs) != len(hashes) {
		// Not expected; fall back to the hashes themselves.
		gs = gs[:0]
		for _, h := range hashes {
			gs = append(gs, fmt.Sprintf("#%016x", h))
		}
	}
	return gs, hashes
}

func printComparison(w io.Writer, c *comparison, limit int) error {
	var b strings.Builder
	if c.A != "" {
		fmt.Fprintf(&b, "A: %s\nB: %s\n", c.A, c.B)
	}
	match := "no match"
	if c.KSentenceMatch {
		match = "match"
	}
	fmt.Fprintf(&b, `shingles: %s %d-grams, %d in A, %d in B, %d shared
jaccard      %.6f  (sets)
jaccard_bag  %.6f  (bags: %d and %d shingles with repeats)
minhash      %.6f  (estimate: %d of %d slots equal, %s)
simhash      %-8d  (Hamming distance of %d-bit fingerprints %s and %s)
ksentence    %-8s  (%d longest sentences)
`, c.Unit, c.Ngram, c.ShinglesA, c.ShinglesB, c.Shared, c.Jaccard, c.JaccardBag, c.BagA, c.BagB,
		c.MinHash, c.MinHashEqual, c.MinHashNumPerm, c.MinHashFamily,
		c.SimHashDistance, c.SimHashBits, c.SimHashA, c.SimHashB, match, c.KSentenceK)
	if x := c.Explain; x != nil {
		list := func(title string, items []string) {
			fmt.Fprintf(&b, "\n%s (%d):\n", title, len(items))
			shown := items
			if limit > 0 && len(items) > limit {
				shown = items[:limit]
			}
			for _, s := range shown {
				q, _ := json.Marshal(s)
				fmt.Fprintf(&b, "  %s\n", q)
			}
			if len(shown) < len(items) {
				fmt.Fprintf(&b, "  … and %d more (--limit 0 or --json lists all)\n", len(items)-len(shown))
			}
		}
		list("shared shingles", x.SharedList)
		list("shingles only in A", x.OnlyA)
		list("shingles only in B", x.OnlyB)
		list("longest sentences of A", x.SentencesA)
		list("longest sentences of B", x.SentencesB)
		b.WriteString("\ndiff of the normalised texts ([-only in A-] {+only in B+}):\n")
		var d strings.Builder
		for _, ed := range x.Diff {
			switch ed.Op {
			case "delete":
				d.WriteString("[-" + ed.Text + "-]")
			case "insert":
				d.WriteString("{+" + ed.Text + "+}")
			default:
				d.WriteString(ed.Text)
			}
		}
		for _, line := range strings.Split(d.String(), "\n") {
			b.WriteString("  " + line + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// readArg returns the text of a compare argument: @path reads a file, @-
// standard input, anything else is the text itself.
func readArg(arg string, stdin io.Reader) (string, error) {
	path, ok := strings.CutPrefix(arg, "@")
	if !ok {
		return arg, nil
	}
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return "", usageErr("%s: no such file or directory", arg)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", arg, err)
	}
	if !utf8.Valid(b) {
		return "", invalidUTF8Arg(path, b)
	}
	return string(b), nil
}

// invalidUTF8Arg is the error of a compare file that is not valid UTF-8,
// in dedup's words (exit 3): the file, the line and its offset, and the
// first bad byte by its place in the line (corpus.UTF8Error).
func invalidUTF8Arg(path string, b []byte) error {
	start := 0
	for line := int64(1); start < len(b); line++ {
		l, _, _ := bytes.Cut(b[start:], []byte{'\n'})
		if !utf8.Valid(l) {
			return &corpus.RecordError{File: path, Record: line, Offset: int64(start), Err: corpus.UTF8Error(l)}
		}
		start += len(l) + 1
	}
	return &corpus.RecordError{File: path, Record: 1, Err: corpus.UTF8Error(b)} // not reached: a bad byte is on a line
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
