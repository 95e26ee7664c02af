package cli

import (
	"strings"
	"testing"
)

// TestDedupConfigCascade: the Python binding's dedup() (DedupConfig)
// takes --method cascade and --then as neardup dedup does.
func TestDedupConfigCascade(t *testing.T) {
	cfg, _, err := DedupConfig([]string{"--method=cascade", "--then=simhash", "--distance=4"})
	if err != nil || !cfg.Cascade || cfg.Method != "simhash" {
		t.Fatalf("DedupConfig: cascade %v, method %q, %v; want true, simhash, nil", cfg.Cascade, cfg.Method, err)
	}
	if cfg, _, err = DedupConfig([]string{"--method=cascade"}); err != nil || !cfg.Cascade || cfg.Method != "minhash" {
		t.Fatalf("DedupConfig: cascade %v, method %q, %v; want true, minhash (the default --then), nil", cfg.Cascade, cfg.Method, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--method=minhash", "--then=simhash"}, "--then simhash applies to --method cascade"},
		{[]string{"--method=cascade", "--then=bloom"}, `--then "bloom": want one of minhash, simhash, jaccard`},
		{[]string{"--method=cascade", "--num-perm=64", "--then=simhash"}, "--num-perm applies to --method minhash, not cascade --then simhash"},
		{[]string{"--method=cascade", "--cluster=leader"}, "leader clustering"},
	} {
		if _, _, err := DedupConfig(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DedupConfig(%v): %v, want %q", c.args, err, c.want)
		}
	}
}
