// Command neardup finds and removes near-duplicate documents. See the README
// and `neardup --help`.
package main

import (
	"os"

	"github.com/neardup/neardup/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
