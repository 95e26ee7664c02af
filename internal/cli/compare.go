package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/text"
)

type compareOpts struct {
	json    bool
	text    textFlags
	shingle shingleFlags
}

func newCompareCmd(e *env) *cobra.Command {
	o := &compareOpts{}
	cmd := &cobra.Command{
		Use:   "compare [flags] TEXT_A TEXT_B",
		Short: "Every similarity measure for one pair of texts",
		Long: `Compare two texts with every measure neardup has. An argument that starts
with @ names a file to read (@- reads standard input).

Measures: jaccard (exact Jaccard of the shingle sets) and jaccard_bag
(multiset Jaccard, sum of minimum counts over sum of maximum counts), with
the shingle counts behind them.

` + exitHelp,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErr("compare takes two texts, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(o, args[0], args[1], e)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.json, "json", false, "print JSON")
	o.shingle.register(fs, 5)
	o.text.register(fs)
	return cmd
}

// comparison is what compare prints.
type comparison struct {
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

func runCompare(o *compareOpts, argA, argB string, e *env) error {
	a, err := readArg(argA, e.stdin)
	if err != nil {
		return err
	}
	b, err := readArg(argB, e.stdin)
	if err != nil {
		return err
	}
	sopts, err := o.shingle.options()
	if err != nil {
		return err
	}
	norm, err := text.New(o.text.opts)
	if err != nil {
		return usageErr("%v", err)
	}
	c, err := compare(norm, sopts, a, b)
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(e.stdout, c)
	}
	_, err = fmt.Fprintf(e.stdout, `shingles: %s %d-grams, %d in A, %d in B, %d shared
jaccard      %.6f  (sets)
jaccard_bag  %.6f  (bags: %d and %d shingles with repeats)
`, c.Unit, c.Ngram, c.ShinglesA, c.ShinglesB, c.Shared, c.Jaccard, c.JaccardBag, c.BagA, c.BagB)
	return err
}

func compare(norm *text.Normalizer, sopts shingle.Options, a, b string) (*comparison, error) {
	sh, err := shingle.New(sopts)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	na, nb := norm.String(a), norm.String(b)
	setA, setB := sh.AppendSet(nil, na), sh.AppendSet(nil, nb)
	bagA, bagB := sh.AppendBag(nil, na), sh.AppendBag(nil, nb)
	return &comparison{
		Unit: sopts.Unit.String(), Ngram: sh.N(),
		ShinglesA: len(setA), ShinglesB: len(setB), Shared: jaccard.Intersection(setA, setB),
		Jaccard: jaccard.Set(setA, setB),
		BagA:    len(bagA), BagB: len(bagB), JaccardBag: jaccard.Bag(bagA, bagB),
	}, nil
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
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
