package cli

import "github.com/spf13/cobra"

func newIndexCmd() *cobra.Command {
	return notBuilt("index", "Create, add to and query a persistent index")
}
