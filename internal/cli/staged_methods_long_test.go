//go:build long

package cli

import (
	"strings"
	"testing"
)

// TestStagedMethodsSharedData: TestStagedMethodsMatchDedup's check on
// the first documents of bbc-news (English news) and tang-editions
// (classical Chinese poems in several editions), when the evaluation data
// is beside the project.
func TestStagedMethodsSharedData(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	for _, set := range []struct {
		name, flags string
	}{
		{"bbc-news", "--method simhash"},
		{"bbc-news", "--method ksentence"},
		{"tang-editions", "--method simhash --cluster leader"},
		{"bbc-news", "--method exact --pairs-mode all"},
		{"tang-editions", "--cluster leader --keep longest"},
		{"bbc-news", "--method cascade"},
		{"bbc-news", "--method cascade --then simhash --keep longest"},
	} {
		in := sharedHead(t, dir, set.name, 3000)
		if in == "" {
			t.Logf("%s: evaluation data not present", set.name)
			continue
		}
		name := set.name + strings.ReplaceAll(set.flags, " ", "")
		checkStagedMatches(t, dir, name, strings.Fields(set.flags), []string{in}, 3)
	}
}
