package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

const (
	evalTruth = `{"id":"a","cluster":"x"}
{"id":"b","cluster":"x"}
{"id":"c","cluster":"x"}
{"id":"d","cluster":"y"}
{"id":"e","cluster":"z"}
`
	// b found as a duplicate of a, c missed, e wrongly joined with d.
	evalPred = `{"id":"a","cluster":"a","kept":true}
{"id":"b","cluster":"a","kept":false}
{"id":"c","cluster":"c","kept":true}
{"id":"d","cluster":"d","kept":true}
{"id":"e","cluster":"d","kept":false}
`
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		data := []byte(content)
		if strings.HasSuffix(name, ".gz") {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write(data)
			zw.Close()
			data = b.Bytes()
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRunEvalTable(t *testing.T) {
	dir := writeFiles(t, map[string]string{"truth.jsonl": evalTruth, "pred.jsonl": evalPred})
	var out, errb bytes.Buffer
	o := &evalOpts{truth: filepath.Join(dir, "truth.jsonl"), clusters: filepath.Join(dir, "pred.jsonl"),
		positive: []string{"1"}, stderr: &errb}
	if err := runEval(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	// T=3, P=2, TP=1, N=10: ARI = (1-0.6)/(2.5-0.6) = 0.2105.
	for _, want := range []string{
		"5 documents in 3 clusters",
		"true pairs       3\n",
		"predicted pairs  2\n",
		"correct pairs    1\n",
		"precision        0.5000\n",
		"recall           0.3333\n",
		"F1               0.4000\n",
		"adjusted Rand index  0.2105\n",
		"duplicate      0.5000     0.6667  0.5714  3        4\n",
		"non-duplicate  0.0000     0.0000  0.0000  2        1\n",
		"macro F1 0.2857, accuracy 0.4000\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if errb.Len() != 0 || strings.Contains(out.String(), "problem") {
		t.Errorf("warnings on clean input: %q", errb.String())
	}
}

func TestRunEvalJSONPairsTruthAndStdin(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"pairs.tsv.gz": "id1\tid2\tlabel\tscore\na\tb\tcut\t0.9\nc\ta\tlight\t0.5\nd\te\tnon\t0.1\n",
	})
	var out, errb bytes.Buffer
	o := &evalOpts{truth: filepath.Join(dir, "pairs.tsv.gz"), clusters: "-", positive: []string{"cut", "light"},
		json: true, stdin: strings.NewReader(evalPred), stderr: &errb}
	if err := runEval(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Truth struct {
			Format    string
			Documents int
			Clusters  int
		}
		ARI    float64
		Pairs  struct{ True, Predicted, Correct int64 }
		Labels []struct {
			Label    string
			Positive bool
			Pairs    int
			Together int
		}
		Problems []string
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	// Truth {a,b,c} {d} {e}: the same partition as evalTruth.
	if rep.Truth.Format != "pairs" || rep.Truth.Documents != 5 || rep.Truth.Clusters != 3 {
		t.Errorf("truth %+v, want pairs, 5 documents, 3 clusters", rep.Truth)
	}
	if rep.Pairs.True != 3 || rep.Pairs.Predicted != 2 || rep.Pairs.Correct != 1 || rep.ARI < 0.2105 || rep.ARI > 0.2106 {
		t.Errorf("pairs %+v ARI %v", rep.Pairs, rep.ARI)
	}
	if len(rep.Labels) != 3 || rep.Labels[0].Label != "cut" || rep.Labels[0].Together != 1 ||
		rep.Labels[1].Together != 0 || rep.Labels[2].Positive || rep.Labels[2].Together != 1 {
		t.Errorf("labels %+v", rep.Labels)
	}
	if rep.Problems == nil || len(rep.Problems) != 0 {
		t.Errorf("problems %q, want []", rep.Problems)
	}
}

func TestRunEvalProblems(t *testing.T) {
	tests := []struct {
		name  string
		truth string
		pred  string
		want  []string // in the warning and the strict error
	}{
		{"extra id", evalTruth, evalPred + `{"id":"zz","cluster":"zz","kept":true}` + "\n", []string{`1 id of`, `"zz"`}},
		{"missing id", evalTruth, strings.Join(strings.SplitAfter(evalPred, "\n")[:4], ""), []string{"1 truth id missing", `"e"`}},
		{"repeated id", evalTruth + `{"id":"a","cluster":"w"}` + "\n", evalPred, []string{"truth.jsonl: 1 repeated id", `"a"`}},
		{"malformed", evalTruth, evalPred + "{oops\n", []string{"pred.jsonl:6: not a JSON object"}},
		{"empty pred", evalTruth, "", []string{"pred.jsonl: no valid record", "5 truth ids missing"}},
		// dedup's -o output given as --clusters: say which file to give.
		{"kept records as pred", evalTruth, `{"id":"a","text":"x"}` + "\n" + `{"id":"d","text":"y"}` + "\n", []string{`pred.jsonl: its records have no "cluster" field: give the file that 'neardup dedup --clusters FILE' writes (-o writes the kept documents)`}},
	}
	for _, tt := range tests {
		dir := writeFiles(t, map[string]string{"truth.jsonl": tt.truth, "pred.jsonl": tt.pred})
		o := &evalOpts{truth: filepath.Join(dir, "truth.jsonl"), clusters: filepath.Join(dir, "pred.jsonl"), positive: []string{"1"}}
		var out, errb bytes.Buffer
		o.stderr = &errb
		if err := runEval(context.Background(), o, &out); err != nil {
			t.Errorf("%s: lenient run failed: %v", tt.name, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%s: warnings %q lack %q", tt.name, errb.String(), w)
			}
		}
		if !strings.Contains(out.String(), "problem(s) with the inputs") {
			t.Errorf("%s: the table does not mention the problems", tt.name)
		}
		o.strict = true
		err := runEval(context.Background(), o, &out)
		if !errors.Is(err, errInvalidData) {
			t.Errorf("%s: --strict error = %v, want invalid data", tt.name, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: --strict error %q lacks %q", tt.name, err, w)
			}
		}
	}
}

func TestRunEvalErrors(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"truth.jsonl": evalTruth, "pred.jsonl": evalPred, "empty.jsonl": "\n",
		"bad.tsv": "a\tb\tc\n", "pairs.tsv": "id1\tid2\tlabel\na\tb\t1\n",
		"other.jsonl":  `{"id":"p","cluster":"p"}` + "\n" + `{"id":"q","cluster":"p"}` + "\n",
		"corpus.jsonl": `{"id":"a","text":"x"}` + "\n" + `{"id":"b","text":"y"}` + "\n",
	})
	p := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		name        string
		o           evalOpts
		usage, data bool
		msg         string
	}{
		{"no truth", evalOpts{clusters: p("pred.jsonl")}, true, false, "needs --truth and --clusters"},
		{"no clusters", evalOpts{truth: p("truth.jsonl")}, true, false, "needs --truth and --clusters"},
		{"both stdin", evalOpts{truth: "-", clusters: "-"}, true, false, "both be standard input"},
		{"no positive label", evalOpts{truth: p("truth.jsonl"), clusters: p("pred.jsonl"), positive: []string{}}, true, false, "--positive"},
		{"empty truth", evalOpts{truth: p("empty.jsonl"), clusters: p("pred.jsonl")}, false, true, "empty.jsonl: no valid record"},
		// The corpus given for --truth: what to give, the path once.
		{"corpus as truth", evalOpts{truth: p("corpus.jsonl"), clusters: p("pred.jsonl")}, false, true, `--truth ` + p("corpus.jsonl") + `: its records have no "cluster" field (` + p("corpus.jsonl") + `:1, 2 such lines in all): give labelled truth, {"id", "cluster"} per document or a pairs TSV (id1, id2, label), not the corpus`},
		{"bad header", evalOpts{truth: p("bad.tsv"), clusters: p("pred.jsonl")}, false, true, "bad.tsv:1: not JSONL"},
		{"pairs as prediction", evalOpts{truth: p("truth.jsonl"), clusters: p("pairs.tsv")}, false, true, "not JSONL"},
		{"no such file", evalOpts{truth: p("nope.jsonl"), clusters: p("pred.jsonl")}, true, false, "nope.jsonl"}, // exit 2, as a missing INPUT
		// Scores of an empty prediction, with exit 0, before.
		{"no id in common", evalOpts{truth: p("truth.jsonl"), clusters: p("other.jsonl")}, false, true, `no id of --clusters ` + p("other.jsonl") + ` is in --truth ` + p("truth.jsonl") + ` (the first ids of --clusters: "p", "q"; of --truth: "a", "b", "c")`},
	}
	for _, tt := range tests {
		if tt.o.positive == nil {
			tt.o.positive = []string{"1"}
		}
		var out bytes.Buffer
		err := runEval(context.Background(), &tt.o, &out)
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		if errors.Is(err, errUsage) != tt.usage || errors.Is(err, errInvalidData) != tt.data || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: error %q (usage %v, invalid data %v), want usage %v, invalid data %v, containing %q",
				tt.name, err, errors.Is(err, errUsage), errors.Is(err, errInvalidData), tt.usage, tt.data, tt.msg)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := &evalOpts{truth: p("truth.jsonl"), clusters: p("pred.jsonl"), positive: []string{"1"}}
	if err := runEval(ctx, o, &bytes.Buffer{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: error %v, want context.Canceled", err)
	}
}

func TestEvalExitCodes(t *testing.T) {
	dir := writeFiles(t, map[string]string{"truth.jsonl.gz": evalTruth, "pred.jsonl": evalPred + `{"id":"q","cluster":"q"}` + "\n"})
	truth, pred := filepath.Join(dir, "truth.jsonl.gz"), filepath.Join(dir, "pred.jsonl")
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"eval", "--truth", truth, "--clusters", pred}, ExitOK},
		{[]string{"eval", "--truth", truth, "--clusters", pred, "--strict"}, ExitInvalidData},
		{[]string{"eval", "--truth", truth}, ExitUsage},
		{[]string{"eval", "--truth", truth, "--clusters", pred, "extra-arg"}, ExitUsage},
		{[]string{"eval", "--truth", truth, "--clusters", pred, "--no-such-flag"}, ExitUsage},
		{[]string{"eval", "--truth", filepath.Join(dir, "missing"), "--clusters", pred}, ExitUsage},
		{[]string{"eval", "--truth", dir, "--clusters", pred}, ExitFailure},
		// --positive reads a pairs truth only: with a partition it was
		// ignored in silence.
		{[]string{"eval", "--truth", truth, "--clusters", pred, "--positive", "cut,light"}, ExitUsage},
	} {
		var out, errb bytes.Buffer
		if code := Main(tt.args, strings.NewReader(""), &out, &errb); code != tt.code {
			t.Errorf("neardup %q: exit %d, want %d; stderr %q", tt.args, code, tt.code, errb.String())
		}
	}
}

// TestLabelFilesCut: a truncated gzip --truth or --clusters is bad input
// (exit 3) for eval and tune alike, its message naming the flag, the file
// and line, and what is wrong (it said "FILE:LINE: unexpected EOF", and
// tune exited 1).
func TestLabelFilesCut(t *testing.T) {
	dir := writeFiles(t, map[string]string{"truth.jsonl.gz": strings.Repeat(evalTruth, 200), "pred.jsonl.gz": strings.Repeat(evalPred, 200),
		"docs.jsonl": `{"id":"a","text":"one two three four five six"}` + "\n"})
	for _, name := range []string{"truth.jsonl.gz", "pred.jsonl.gz"} {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cut-"+name), b[:len(b)-12], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	truth, pred := filepath.Join(dir, "truth.jsonl.gz"), filepath.Join(dir, "pred.jsonl.gz")
	cutTruth, cutPred := filepath.Join(dir, "cut-truth.jsonl.gz"), filepath.Join(dir, "cut-pred.jsonl.gz")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--truth", cutTruth, "--clusters", pred}, "--truth " + cutTruth + ":"},
		{[]string{"eval", "--truth", truth, "--clusters", cutPred}, "--clusters " + cutPred + ":"},
		{[]string{"tune", filepath.Join(dir, "docs.jsonl"), "--truth", cutTruth}, "--truth " + cutTruth + ":"},
	} {
		var out, errb bytes.Buffer
		code := Main(tt.args, strings.NewReader(""), &out, &errb)
		if msg := errb.String(); code != ExitInvalidData || !strings.Contains(msg, tt.want) || !strings.Contains(msg, "truncated") {
			t.Errorf("neardup %q: exit %d, want %d naming %q and truncated; stderr %q", tt.args, code, ExitInvalidData, tt.want, msg)
		}
	}
}

// TestLabelFileDirectory: a --truth or --clusters that is a directory
// said "DIR:1: read DIR: is a directory", as if the directory had a
// first line; it says the truth (or the clusters) must be a file, with
// exit 1 as docs/eval.md's problems table gives for a file that cannot
// be read, in eval and tune alike.
func TestLabelFileDirectory(t *testing.T) {
	dir := t.TempDir()
	pred := filepath.Join(dir, "pred.jsonl")
	if err := os.WriteFile(pred, []byte(`{"id":"a","cluster":0}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--truth", dir, "--clusters", pred}, "neardup: --truth " + dir + ": is a directory; the truth must be a file: JSONL clusters or a TSV of pairs (docs/eval.md)\n"},
		{[]string{"eval", "--truth", pred, "--clusters", dir}, "neardup: --clusters " + dir + ": is a directory; the clusters must be a file: the JSONL that neardup dedup --clusters writes\n"},
		{[]string{"tune", "--truth", dir, "--method", "minhash", pred}, "neardup: --truth " + dir + ": is a directory; the truth must be a file: JSONL clusters or a TSV of pairs (docs/eval.md)\n"},
	} {
		code, _, errs := runCLI(c.args...)
		if code != ExitFailure || errs != c.want {
			t.Errorf("%q: exit %d, said:\n%s\nwant exit %d:\n%s", c.args, code, errs, ExitFailure, c.want)
		}
	}
}
