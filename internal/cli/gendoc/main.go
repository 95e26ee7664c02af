// Command gendoc writes docs/cli.md, the reference of every neardup command
// and flag, from the command tree in internal/cli. Run it from the
// repository root after changing a command, a flag or its help text
// (TestCLIReference fails until then):
//
//	go run ./internal/cli/gendoc
//
// or, from internal/cli, go generate.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/neardup/neardup/internal/cli"
)

func main() {
	out := flag.String("o", "docs/cli.md", "file to write (- for standard output)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "gendoc: unexpected argument %q\nusage: gendoc [-o FILE]\n", flag.Arg(0))
		os.Exit(2)
	}
	var b bytes.Buffer
	if err := cli.WriteReference(&b); err != nil {
		fmt.Fprintf(os.Stderr, "gendoc: %v\n", err)
		os.Exit(1)
	}
	var err error
	if *out == "-" {
		_, err = os.Stdout.Write(b.Bytes())
	} else {
		err = os.WriteFile(*out, b.Bytes(), 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gendoc: %v\n", err)
		os.Exit(1)
	}
}
