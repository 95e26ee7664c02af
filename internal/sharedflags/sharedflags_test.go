package sharedflags

import (
	"flag"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/neardup/neardup/sketch"
)

// TestBothFlagSetsAlike registers everything on a standard library flag
// set and on a pflag set: the same names, defaults and help.
func TestBothFlagSetsAlike(t *testing.T) {
	std := flag.NewFlagSet("std", flag.ContinueOnError)
	pf := pflag.NewFlagSet("pf", pflag.ContinueOnError)
	var s1, s2 Sketch
	var j1, j2 Join
	var f1, f2 Fields
	s1.Register(std, All)
	j1.Register(std)
	f1.Register(std)
	std.Var(&f1.MaxDocBytes, "max-doc-bytes", MaxDocBytesUsage)
	s2.Register(pf, All)
	j2.Register(pf)
	f2.Register(pf)
	pf.Var(&f2.MaxDocBytes, "max-doc-bytes", MaxDocBytesUsage)
	n := 0
	std.VisitAll(func(a *flag.Flag) {
		n++
		b := pf.Lookup(a.Name)
		if b == nil {
			t.Errorf("--%s missing from the pflag set", a.Name)
			return
		}
		if a.Usage != b.Usage || a.DefValue != b.DefValue {
			t.Errorf("--%s: %q (default %q) against %q (default %q)", a.Name, a.Usage, a.DefValue, b.Usage, b.DefValue)
		}
	})
	if n != 26 {
		t.Errorf("%d flags; want 26", n)
	}
}

// TestSpecDefaults: the flags at their defaults give sketch's default Spec
// of each method, and --max-doc-bytes takes sizes.
func TestSpecDefaults(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var s Sketch
	var f Fields
	s.Register(fs, All)
	f.Register(fs)
	fs.Var(&f.MaxDocBytes, "max-doc-bytes", MaxDocBytesUsage)
	if err := fs.Parse([]string{"--max-doc-bytes", "64MiB"}); err != nil {
		t.Fatal(err)
	}
	if f.MaxDocBytes != 64<<20 || f.Check() != nil {
		t.Errorf("--max-doc-bytes 64MiB: %d, %v", f.MaxDocBytes, f.Check())
	}
	for _, m := range []sketch.Method{sketch.MinHash, sketch.SimHash, sketch.KSentence, sketch.Exact, sketch.Jaccard} {
		got, err := s.Spec(m)
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		want := sketch.Default(m)
		gr, err1 := got.Resolve()
		wr, err2 := want.Resolve()
		if err1 != nil || err2 != nil || !reflect.DeepEqual(gr, wr) {
			t.Errorf("%v: flags at their defaults give %+v, sketch.Default %+v", m, gr, wr)
		}
	}
}

// TestSpecErrorsNameTheFlag: each bad value is refused naming its flag.
func TestSpecErrorsNameTheFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		m    sketch.Method
		flag string
	}{
		{[]string{"--threshold", "1.5"}, sketch.MinHash, "--threshold"},
		{[]string{"--threshold", "0"}, sketch.Jaccard, "--threshold"},
		{[]string{"--unit", "syllable"}, sketch.MinHash, "--unit"},
		{[]string{"--ngram", "0"}, sketch.SimHash, "--ngram"},
		{[]string{"--num-perm", "0"}, sketch.MinHash, "--num-perm"},
		{[]string{"--minhash-family", "x"}, sketch.MinHash, "--minhash-family"},
		{[]string{"--bands", "-1"}, sketch.MinHash, "--bands"},
		{[]string{"--bands", "20", "--rows", "20"}, sketch.MinHash, "--bands"},
		{[]string{"--bits", "200"}, sketch.SimHash, "--bits"},
		{[]string{"--distance", "64"}, sketch.SimHash, "--distance"},
		{[]string{"--weights", "idf"}, sketch.SimHash, "--weights"},
		{[]string{"--k-sentences", "0"}, sketch.KSentence, "--k-sentences"},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		var s Sketch
		s.Register(fs, All)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		_, err := s.Spec(tt.m)
		if err == nil || !strings.Contains(err.Error(), tt.flag) {
			t.Errorf("%v %v: error %v; want one naming %s", tt.m, tt.args, err, tt.flag)
		}
	}
}

// TestCheckMethodFlagsBothFlagSets: the method check reads a standard
// library flag set (neardup-beam) as it reads a pflag set (neardup): the
// same flags given, the same refusal; a flag left at its default, or one
// the method reads, passes.
func TestCheckMethodFlagsBothFlagSets(t *testing.T) {
	for _, c := range []struct {
		method string
		args   []string
		want   string // "" when accepted
	}{
		{"simhash", []string{"--num-perm=64"}, "--num-perm applies to --method minhash, not simhash: leave it out"},
		{"exact", []string{"--verify"}, "--verify applies to --method minhash, simhash, not exact: leave it out"},
		{"ksentence", []string{"--seed=3"}, "--seed applies to --method minhash, simhash, jaccard, bloom, bloom-overlap, not ksentence: leave it out"},
		{"exact", []string{"--threshold=0.5"}, "--threshold applies to --method minhash, jaccard, bloom-overlap, simhash (with --verify), not exact: leave it out"},
		{"simhash", []string{"--threshold=0.5"}, "--threshold: simhash reads it only with --verify"},
		{"simhash", []string{"--threshold=0.5", "--verify"}, ""},
		{"minhash", []string{"--verify", "--seed=3", "--num-perm=64"}, ""},
		{"jaccard", []string{"--seed=3", "--ngram=3"}, ""},
		{"exact", nil, ""},
		{"no-such-method", []string{"--bits=32"}, ""},
	} {
		std := flag.NewFlagSet("std", flag.ContinueOnError)
		pf := pflag.NewFlagSet("pf", pflag.ContinueOnError)
		var s1, s2 Sketch
		var j1, j2 Join
		s1.Register(std, All)
		j1.Register(std)
		s2.Register(pf, All)
		j2.Register(pf)
		if err := std.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if err := pf.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		for name, err := range map[string]error{"flag": CheckMethodFlags(StdFlags(std), c.method), "pflag": CheckMethodFlags(Pflags(pf), c.method)} {
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%s %s %v: %v", name, c.method, c.args, err)
			case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
				t.Errorf("%s %s %v: %v, want %q", name, c.method, c.args, err, c.want)
			}
		}
	}
}
