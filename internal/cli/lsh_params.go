package cli

import "github.com/spf13/cobra"

func newLSHParamsCmd() *cobra.Command {
	return notBuilt("lsh-params", "Choose LSH bands and rows for a threshold")
}
