package main

import (
	"bytes"
	"flag"
	"regexp"
	"strings"
	"testing"

	"github.com/neardup/neardup/beam/pipeline"
	"github.com/neardup/neardup/internal/cli"
)

// sharedDiffer lists the flags of both command lines that mean something
// else in neardup-beam, with the reason.
var sharedDiffer = map[string]string{
	"method": "beam lists only the methods it runs",
	"pairs":  "a switch here (pairs-*.jsonl in --output), a file there",
	"idf":    "beam cannot learn IDF weights: the table is required and every worker must read it",
	"quiet":  "beam has no progress bars",
	"output": "a folder of shards here, the kept records' file there",
	"format": "beam reads no standard input: it applies to files whose names give no format only",
	"then":   "beam lists only the near methods it runs after the cascade (jaccard's candidates are not bucket keys)",
}

// TestSharedFlagsReadAlike holds neardup-beam to `neardup dedup`'s names,
// defaults and help for every flag the two have, apart from those that
// mean something else here (listed with the reason).
func TestSharedFlagsReadAlike(t *testing.T) {
	differ := sharedDiffer
	fs := flag.NewFlagSet("neardup-beam", flag.ContinueOnError)
	var o options
	o.register(fs)
	dedupFlags := cli.DedupFlags()
	shared := 0
	fs.VisitAll(func(f *flag.Flag) {
		d := dedupFlags.Lookup(f.Name)
		if d == nil {
			return
		}
		if _, ok := differ[f.Name]; ok {
			return
		}
		shared++
		if f.Usage != d.Usage {
			t.Errorf("--%s: help differs:\n  neardup-beam:  %s\n  neardup dedup: %s", f.Name, f.Usage, d.Usage)
		}
		if f.DefValue != d.DefValue {
			t.Errorf("--%s: default %q in neardup-beam, %q in neardup dedup", f.Name, f.DefValue, d.DefValue)
		}
	})
	// The sketch flags (threshold, unit, ngram, num-perm, minhash-family,
	// bands, rows, seed, bits, distance, weights, k-sentences: 12), the eight
	// normalisation switches, verify, estimate-only, keep, text-field,
	// id-field and max-doc-bytes: 26.
	if shared < 26 {
		t.Errorf("only %d flags shared with neardup dedup; want at least 26", shared)
	}
	for name := range differ {
		if fs.Lookup(name) == nil || dedupFlags.Lookup(name) == nil {
			t.Errorf("--%s is listed as differing but is not on both command lines", name)
		}
	}
}

// TestSharedHelpReadsAlike holds the help texts themselves, `neardup-beam
// -help` against `neardup dedup --help`, to the same wording and default
// for every shared flag (TestSharedFlagsReadAlike compares the flags'
// values; this compares what the two print of them).
func TestSharedHelpReadsAlike(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := cli.Main([]string{"dedup", "--help"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("neardup dedup --help: exit %d: %s", code, stderr.String())
	}
	// pflag's lines: "  -x, --name type   help (default X)", the type
	// after one space, the help after two or more.
	line := regexp.MustCompile(`^\s+(?:-\S, )?--(\S+)(?: \S+)?\s{2,}(.*)$`)
	dedupHelp := map[string]string{}
	for _, l := range strings.Split(stdout.String(), "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			dedupHelp[m[1]] = m[2]
		}
	}
	fs := flag.NewFlagSet("neardup-beam", flag.ContinueOnError)
	var o options
	o.register(fs)
	var b bytes.Buffer
	printHelp(&b, fs, nil)
	// The standard library's layout: "  -name" then "    \thelp (default X)".
	beamHelp := map[string]string{}
	entry := regexp.MustCompile(`(?m)^  -(\S+)\n    \t(.*)$`)
	for _, m := range entry.FindAllStringSubmatch(b.String(), -1) {
		beamHelp[m[1]] = m[2]
	}
	shared := 0
	for name, text := range beamHelp {
		want, ok := dedupHelp[name]
		if !ok || sharedDiffer[name] != "" {
			continue
		}
		shared++
		if text != want {
			t.Errorf("--%s reads differently:\n  neardup-beam -help:   %s\n  neardup dedup --help: %s", name, text, want)
		}
	}
	if shared < 26 || len(dedupHelp) < 50 {
		t.Errorf("%d shared flags compared among %d of neardup dedup's; want at least 26 of 50", shared, len(dedupHelp))
	}
}

// TestMethodFlagsRefused: a flag that only other methods read, given
// explicitly, is refused with neardup dedup's words (exit code 2 in
// run, TestExitCodes); left at its default, or given to a method that
// reads it, it is fine.
func TestMethodFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" when accepted
	}{
		{[]string{"-method", "simhash", "-num-perm", "256"}, "--num-perm applies to --method minhash, not simhash: leave it out"},
		{[]string{"-method", "minhash", "-bits", "128"}, "--bits applies to --method simhash, not minhash: leave it out"},
		{[]string{"-method", "exact", "-threshold", "0.9"}, "--threshold applies to --method minhash, jaccard, bloom-overlap, simhash (with --verify), not exact: leave it out"},
		{[]string{"-method", "simhash", "-threshold", "0.5"}, "--threshold: simhash reads it only with --verify"},
		{[]string{"-method", "ksentence", "-verify"}, "--verify applies to --method minhash, simhash, not ksentence: leave it out"},
		{[]string{"-method", "exact", "-seed", "7"}, "--seed applies to --method minhash, simhash, jaccard, bloom, bloom-overlap, not exact: leave it out"},
		{[]string{"-method", "minhash", "-idf", "x.idf"}, "--idf applies to --method simhash, not minhash: leave it out"},
		{[]string{"-method", "exact", "-estimate-only"}, "--estimate-only applies to --method minhash, not exact: leave it out"},
		{[]string{"-method", "simhash", "-threshold", "0.5", "-verify", "-bits", "128", "-seed", "7"}, ""},
		{[]string{"-num-perm", "64", "-threshold", "0.7", "-verify"}, ""},
		{[]string{"-method", "ksentence", "-k-sentences", "3"}, ""},
		{[]string{"-method", "cascade"}, ""},
		{[]string{"-method", "cascade", "-then", "simhash", "-bits", "128"}, ""},
		{[]string{"-method", "cascade", "-bits", "128"}, "--bits applies to --method simhash, not cascade --then minhash: leave it out"},
		{[]string{"-method", "cascade", "-then", "jaccard"}, "--method cascade --then jaccard: the Beam pipeline runs the cascade before minhash or simhash only"},
		{[]string{"-method", "cascade", "-then", "exact"}, "--then \"exact\": want one of minhash, simhash, jaccard"},
		{[]string{"-method", "minhash", "-then", "simhash"}, "--then simhash applies to --method cascade"},
	} {
		fs := flag.NewFlagSet("neardup-beam", flag.ContinueOnError)
		var o options
		o.register(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		_, err := o.parsed(fs)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestDuplicateIDsWarningNumber: the count of shared ids is written as
// neardup dedup writes it, with thousands separators (it wrote 1234 with
// %d where dedup writes 1,234), and the rest in dedup's words.
func TestDuplicateIDsWarningNumber(t *testing.T) {
	st := &pipeline.Stats{DuplicateIDs: 1234, DuplicateIDsFirst: []string{"a", "b"}}
	var b strings.Builder
	warnDuplicateIDs(&b, st, "id")
	want := `neardup-beam: warning: 1,234 ids are used by more than one document ("a", "b", ...): the outputs (clusters-*.jsonl, pairs-*.jsonl) name documents by id and cannot tell them apart; make the ids unique, or pass --id-field with a field that is (the "id" field now; without one a document's id is FILE:LINE, FILE:ROW in Parquet)` + "\n"
	if b.String() != want {
		t.Errorf("warning:\n%s\nwant:\n%s", b.String(), want)
	}
}
