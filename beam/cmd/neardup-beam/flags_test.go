package main

import (
	"flag"
	"testing"

	"github.com/neardup/neardup/internal/cli"
)

// TestSharedFlagsReadAlike holds neardup-beam to `neardup dedup`'s names,
// defaults and help for every flag the two have, apart from those that
// mean something else here (listed with the reason).
func TestSharedFlagsReadAlike(t *testing.T) {
	differ := map[string]string{
		"method": "beam lists only the methods it runs",
		"pairs":  "a switch here (pairs-*.jsonl in --output), a file there",
		"idf":    "beam cannot learn IDF weights: the table is required and every worker must read it",
		"quiet":  "beam has no progress bars",
		"output": "a folder of shards here, the kept records' file there",
	}
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
