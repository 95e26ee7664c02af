package cli

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// The scripts in testdata/script run the real neardup binary end to end:
// flags, files, exit codes and output formats.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"neardup": func() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script"})
}
