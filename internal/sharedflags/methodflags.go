package sharedflags

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/dedup"
)

// MethodFlag is a flag that only some methods read, with the --method
// names of those methods.
type MethodFlag struct {
	Flag    string
	Methods []string
}

// MethodFlags lists the flags that only some methods read (dedup's
// --method names), for every command line that has them: neardup dedup,
// sign and index create, the staged job, the Python binding and
// neardup-beam. A flag of another method given explicitly would be
// ignored without a word, so CheckMethodFlags refuses it. A flag that
// every method reads is not listed.
//
// --seed seeds the shingle hash (minhash, simhash, jaccard,
// bloom-overlap), the MinHash and SimHash hashes and the Bloom filter's
// key hash (bloom, bloom-overlap); exact hashes the text with a fixed
// seed and ksentence hashes its sentences with MD5, so neither reads it.
// --verify is the exact Jaccard check of minhash's and simhash's
// candidates; jaccard is exact already, and the others compare hashes or
// filters.
var MethodFlags = func() []MethodFlag {
	var uses []MethodFlag
	for _, g := range []struct {
		flags   []string
		methods []string
	}{
		{[]string{"num-perm", "minhash-family", "bands", "rows", "estimate-only"}, []string{"minhash"}},
		{[]string{"bits", "distance", "weights", "idf", "save-idf", "blocks"}, []string{"simhash"}},
		{[]string{"k-sentences"}, []string{"ksentence"}},
		{[]string{"key-field"}, []string{"bloom"}},
		{[]string{"bloom-n", "bloom-fpp", "bloom-filter"}, []string{"bloom", "bloom-overlap"}},
		{[]string{"unit", "ngram"}, []string{"minhash", "simhash", "jaccard", "bloom-overlap"}},
		{[]string{"threshold"}, []string{"minhash", "jaccard", "bloom-overlap", "simhash"}},
		{[]string{"verify"}, []string{"minhash", "simhash"}},
		{[]string{"seed"}, []string{"minhash", "simhash", "jaccard", "bloom", "bloom-overlap"}},
		{[]string{"spill"}, []string{"minhash", "simhash", "exact", "ksentence"}},
	} {
		for _, f := range g.flags {
			uses = append(uses, MethodFlag{f, g.methods})
		}
	}
	return uses
}()

// Cascade is the --method name of the cascade (dedup.Options.Cascade):
// exact copies first, then --then, one of CascadeMethods (DefaultThen
// when not given), on the rest. CheckMethodFlags treats it as its --then
// method.
const (
	Cascade     = "cascade"
	DefaultThen = "minhash"
)

// CascadeMethods are the --then methods of --method cascade.
var CascadeMethods = []string{"minhash", "simhash", "jaccard"}

// ThenMethod is the --then method of cl's command line: its value, or
// DefaultThen.
func ThenMethod(cl Given) string {
	if v, ok := cl.Value("then"); ok {
		return v
	}
	return DefaultThen
}

// Given is what CheckMethodFlags needs of a parsed command line: whether
// it declares a flag, and the value of a flag given explicitly (Pflags
// and StdFlags make one of a flag set).
type Given interface {
	// Declared reports whether the command line has the flag name.
	Declared(name string) bool
	// Value returns the value of the flag name and whether it was given
	// on the command line (a flag left at its default was not).
	Value(name string) (string, bool)
}

// Pflags is the Given of a parsed pflag.FlagSet (neardup's commands).
func Pflags(fs *pflag.FlagSet) Given { return pflagGiven{fs} }

type pflagGiven struct{ fs *pflag.FlagSet }

func (g pflagGiven) Declared(name string) bool { return g.fs.Lookup(name) != nil }

func (g pflagGiven) Value(name string) (string, bool) {
	f := g.fs.Lookup(name)
	if f == nil || !f.Changed {
		return "", false
	}
	return f.Value.String(), true
}

// StdFlags is the Given of a parsed flag.FlagSet of the standard library
// (neardup-beam).
func StdFlags(fs *flag.FlagSet) Given {
	g := stdGiven{fs: fs, set: map[string]bool{}}
	fs.Visit(func(f *flag.Flag) { g.set[f.Name] = true })
	return g
}

type stdGiven struct {
	fs  *flag.FlagSet
	set map[string]bool
}

func (g stdGiven) Declared(name string) bool { return g.fs.Lookup(name) != nil }

func (g stdGiven) Value(name string) (string, bool) {
	if !g.set[name] {
		return "", false
	}
	return g.fs.Lookup(name).Value.String(), true
}

// CheckMethodFlags refuses a flag of cl that was given on the command
// line but that method does not read (MethodFlags), naming the flag and
// the methods that read it: `--method simhash --num-perm 256` would
// otherwise run simhash as if --num-perm had not been given. Flags cl
// lacks are not checked (index create has no --verify: its simhash index
// never reads --threshold), nor is a method that is not one of
// dedup.Methods() (the caller says what is wrong with it). Two more that
// depend on other flags: simhash reads --threshold only with --verify
// (its exact Jaccard check), and a --cluster leader run stays in memory,
// so --spill does not apply to it. The errors are a command's usage
// errors (exit code 2).
func CheckMethodFlags(cl Given, method string) error {
	if then, ok := cl.Value("then"); ok && method != Cascade {
		return fmt.Errorf("--then %s applies to --method cascade (the near-duplicate method after its exact stage), not %s: leave it out", then, method)
	}
	shown := method // in the errors
	if method == Cascade {
		// The cascade reads the flags of its near-duplicate method.
		method = ThenMethod(cl)
		shown = "cascade --then " + method
		if !slices.Contains(CascadeMethods, method) {
			return fmt.Errorf("--then %q: want one of %s (exact alone is --method exact)", method, strings.Join(CascadeMethods, ", "))
		}
	}
	if !slices.Contains(dedup.Methods(), method) {
		return nil
	}
	changed := func(name string) bool {
		_, ok := cl.Value(name)
		return ok
	}
	for _, mf := range MethodFlags {
		if !changed(mf.Flag) || slices.Contains(mf.Methods, method) {
			continue
		}
		which := strings.Join(mf.Methods, ", ")
		if mf.Flag == "threshold" {
			which += " (with --verify)"
		}
		return fmt.Errorf("--%s applies to --method %s, not %s: leave it out", mf.Flag, which, shown)
	}
	if method == "simhash" && changed("threshold") && !cl.Declared("verify") {
		// index create: a simhash index matches by --distance alone.
		return errors.New("--threshold: a simhash index matches by --distance and does not read it: leave it out")
	}
	if v, _ := cl.Value("verify"); method == "simhash" && changed("threshold") && v != "true" {
		return errors.New("--threshold: simhash reads it only with --verify (the exact Jaccard check of its pairs); without it --distance decides: leave --threshold out or add --verify")
	}
	if v, ok := cl.Value("cluster"); ok && changed("spill") && v == cluster.Leader.String() {
		return errors.New("--spill: a --cluster leader run stays in memory (leaders are chosen in --keep order, which the spill path cannot follow); leave one out")
	}
	return nil
}
