package cli

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestIndexParamFlagsCompared gives an existing index every flag of its
// parameters (those `index add`, `index query` and the Python binding's
// neardup.Index take) with a value other than the stored one, through
// IndexAt, the binding's way in: each must be refused as a usage error
// naming the flag. A parameter flag added later without a case in
// checkAgainst would be taken and ignored, and sketch the documents
// differently from the index; the test fails until it has one.
func TestIndexParamFlagsCompared(t *testing.T) {
	// Values other than the ones the indexes below were made with; the
	// boolean flags are given the opposite of their default.
	other := map[string]string{
		"method": "simhash", "unit": "char", "ngram": "3", "seed": "7",
		"num-perm": "64", "bands": "4", "rows": "4", "threshold": "0.5",
		"minhash-family": "multiply-shift", "family": "multiply-shift",
		"bits": "32", "distance": "5", "blocks": "6", "weights": "count",
	}
	var names []string
	var p indexParamFlags
	fs := pflag.NewFlagSet("params", pflag.ContinueOnError)
	p.register(fs)
	fs.VisitAll(func(fl *pflag.Flag) { names = append(names, fl.Name) })

	for _, method := range []string{"minhash", "simhash"} {
		loc := filepath.Join(t.TempDir(), method)
		s, err := IndexAt(loc, []string{"--method=" + method, "--seed=1"})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		for _, name := range names {
			v, ok := other[name]
			fl := fs.Lookup(name)
			if fl.Value.Type() == "bool" {
				def, _ := strconv.ParseBool(fl.DefValue)
				v, ok = strconv.FormatBool(!def), true
			}
			if !ok {
				t.Errorf("--%s: no other value in this test's table; give one (and a case in checkAgainst if it changes sketches)", name)
				continue
			}
			if method == "simhash" && name == "method" {
				v = "minhash"
			}
			arg := "--" + name + "=" + v
			s, err := IndexAt(loc, []string{arg})
			if err == nil {
				s.Close()
				t.Errorf("%s index: %s taken; want it refused (the index has another value)", method, arg)
				continue
			}
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--"+name+" ") {
				t.Errorf("%s index: %s: %v; want a usage error naming --%s", method, arg, err, name)
			}
		}
		// The stored seed, given, is taken; another is refused naming both.
		if s, err := IndexAt(loc, []string{"--seed=1"}); err != nil {
			t.Errorf("%s index: --seed=1 (its own): %v", method, err)
		} else {
			s.Close()
		}
		// 0 asks create to choose --bands, --rows and --blocks: given to an
		// existing index it is the index's own choice, as leaving the flag
		// out is (they were refused as "--bands 0 but the index has 13").
		// The flags of the other method are still refused.
		zeros := map[string][]string{"minhash": {"--bands=0", "--rows=0"}, "simhash": {"--blocks=0"}}
		for m, args := range zeros {
			s, err := IndexAt(loc, args)
			if err == nil {
				s.Close()
			}
			if m == method && err != nil {
				t.Errorf("%s index: %v: %v; want them taken as the index's own", method, args, err)
			}
			if m != method && (err == nil || !strings.Contains(err.Error(), "applies to "+m)) {
				t.Errorf("%s index: %v: %v; want them refused as flags of %s", method, args, err, m)
			}
		}
		// --seed 0 is a value, the fixed default seeds, not a choice: on
		// an index made with seed 1 it is refused.
		for _, seed := range []string{"7", "0"} {
			s, err := IndexAt(loc, []string{"--seed=" + seed})
			if err == nil {
				s.Close()
			}
			if want := "--seed " + seed + " but the index was made with seed 1"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s index: --seed=%s: %v; want %q", method, seed, err, want)
			}
		}
	}
}
