package dedup

import (
	"strings"
	"testing"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/sketch"
)

// capabilityNames lists what c and the finder's fc hold, in the order of
// the table in method.go.
func capabilityNames(c capabilities, fc finderCapabilities) string {
	var names []string
	add := func(name string, has bool) {
		if has {
			names = append(names, name)
		}
	}
	add("keyed", c.keyed != nil)
	add("split", c.split != nil)
	add("codec", c.codec != nil)
	add("memory", c.memory != nil)
	add("prepass", c.prePass != nil)
	add("persist", c.persist != nil)
	add("components", c.components != nil)
	add("staged", c.staged != nil)
	add("gpu", c.gpu != nil)
	add("leader", c.leader)
	add("cliques", c.cliques)
	add("hamming", c.hamming)
	add("order", c.pairOrder != nil)
	names = append(names, "|")
	add("drop", fc.drop != nil)
	add("kept", fc.keptCheck != nil)
	add("keeporder", fc.keepOrder != nil)
	add("scratch", fc.scratch != nil)
	add("closer", fc.closer != nil)
	return strings.Join(names, " ")
}

// TestCapabilities: each method's capabilities are the table's in
// method.go. An optional interface is met by a method's signature alone,
// so a method whose signature drifts loses the capability silently; this
// catches it.
func TestCapabilities(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*Options)
		want string
	}{
		{"minhash", func(c *Options) { c.Method = "minhash" },
			"keyed split codec memory components staged gpu | kept keeporder scratch closer"},
		{"minhash-verify", func(c *Options) { c.Method, c.Verify = "minhash", true },
			"keyed split codec memory components staged gpu | kept keeporder scratch closer"},
		{"minhash-leader", func(c *Options) { c.Method, c.Cluster = "minhash", cluster.Leader },
			"codec memory staged gpu leader | kept keeporder scratch closer"},
		{"minhash-all-pairs", func(c *Options) { c.Method, c.AllPairs = "minhash", true },
			"keyed split codec memory staged gpu | kept keeporder scratch closer"},
		{"simhash", func(c *Options) { c.Method = "simhash" },
			"keyed split codec memory prepass persist staged gpu hamming order | kept keeporder"},
		{"simhash-verify", func(c *Options) { c.Method, c.Verify = "simhash", true },
			"keyed split codec memory prepass persist staged gpu order | kept keeporder"},
		{"simhash-tfidf", func(c *Options) { c.Method, c.Spec.SimHash.Weights = "simhash", sketch.WeightTFIDF },
			"keyed split codec memory prepass persist staged gpu hamming order | kept keeporder"},
		{"exact", func(c *Options) { c.Method = "exact" },
			"keyed codec memory staged cliques |"},
		{"ksentence", func(c *Options) { c.Method = "ksentence" },
			"keyed codec memory staged cliques |"},
		{"jaccard", func(c *Options) { c.Method = "jaccard" },
			"memory |"},
		{"bloom", func(c *Options) { c.Method = "bloom" },
			"memory persist staged cliques | drop"},
		{"bloom-overlap", func(c *Options) { c.Method = "bloom-overlap" },
			"memory persist staged | drop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg Options
			tc.cfg(&cfg)
			m, err := NewMethod(cfg)
			if err != nil {
				t.Fatal(err)
			}
			f, err := m.NewFinder()
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := f.(interface{ Close() error }); ok {
				defer c.Close()
			}
			if got := capabilityNames(capabilitiesOf(m), finderCapabilitiesOf(f)); got != tc.want {
				t.Errorf("capabilities:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
