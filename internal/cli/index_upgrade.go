package cli

import (
	"github.com/spf13/cobra"
)

func newIndexUpgradeCmd() *cobra.Command {
	o := &indexOpts{upgrade: true}
	cmd := &cobra.Command{
		Use:   "upgrade --index DIR INPUT...",
		Short: "Make an estimate-only index keep shingle sets, from the indexed texts",
		Long: `An index made before shingle sets were kept (or with 'index create
--estimate-only') decides a candidate by the MinHash estimate alone, which
near the threshold accepts pairs below it and misses pairs above it.
'index upgrade' makes it keep sets: from now on every document added keeps
its set, and each document of the inputs whose id is in the index, and
whose text gives the signature stored for it, gets its set. The index does
not store texts, so give it the corpus that was indexed (the same ids and
texts). A pair with a document still without a set is decided by the
estimate, as before. It can be run again (documents that have their sets
are counted, not rewritten) and on a part of the corpus at a time.

On Redis, restart the 'neardup serve' processes of the index afterwards:
a running process keeps deciding as it did when it opened the index.

` + exitHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIndexStream(cmd, o, args, true)
		},
	}
	registerIndexDir(cmd.Flags(), o)
	o.registerStream(cmd.Flags(), "goroutines that normalise and sketch (0: all cores)", "documents per write batch")
	return cmd
}
