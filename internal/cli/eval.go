package cli

import "github.com/spf13/cobra"

func newEvalCmd() *cobra.Command {
	return notBuilt("eval", "Score predicted clusters against labelled truth")
}
