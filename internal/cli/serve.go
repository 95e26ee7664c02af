package cli

import "github.com/spf13/cobra"

func newServeCmd() *cobra.Command {
	return notBuilt("serve", "Serve a persistent index over HTTP")
}
