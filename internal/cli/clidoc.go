package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

//go:generate go run ./gendoc -o ../../docs/cli.md

// ReferenceCommand is the command that writes docs/cli.md, run from the
// repository root.
const ReferenceCommand = "go run ./internal/cli/gendoc"

// WriteReference writes the command line reference, docs/cli.md: every
// command of the tree that `neardup --help` shows (cobra's help and
// completion included), in the order of its help, with its usage lines,
// short and long descriptions and every flag that its --help lists: name,
// type, default and help text. The output depends on nothing but the
// command tree (no flag default is computed from the machine: a default
// that is, such as -j's number of cores, is a 0 documented in the help
// text), so TestCLIReference can compare it with the committed file on
// any machine.
func WriteReference(w io.Writer) error {
	root := newRootCmd(&env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
	// What cobra adds when it runs: the help and completion commands, the
	// -h and --version flags. Usage lines and flag lists then read as in
	// --help.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		cmds = append(cmds, c)
		for _, sub := range c.Commands() { // sorted by name, as in --help
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
	}
	walk(root)

	var b bytes.Buffer
	fmt.Fprintf(&b, "# neardup command reference\n\n")
	fmt.Fprintf(&b, "<!-- Generated from the command tree in internal/cli by `%s`; do not edit. TestCLIReference fails when this file is out of date. -->\n\n", ReferenceCommand)
	b.WriteString("Every command and subcommand of `neardup`, with its usage, its description\n" +
		"and every flag (type, default and help text), as `neardup COMMAND --help`\n" +
		"prints them. Every command takes `-h, --help`. A flag of a list type\n" +
		"(`strings`, `ints`, `bools`, `float64Slice`) takes comma-separated values\n" +
		"and may be given again to add more; a `stringArray` flag takes one value\n" +
		"each time it is given, commas included. A `size` is bytes or a size such\n" +
		"as 64MB or 1GiB; a `duration` is Go's, such as 30s or 20m.\n" +
		"A default that depends on the machine (the number of cores, the system's\n" +
		"temporary directory) is written as the flag's help text describes it, not as\n" +
		"a value.\n\n")
	b.WriteString("## Commands\n\n")
	for _, c := range cmds {
		depth := strings.Count(c.CommandPath(), " ")
		fmt.Fprintf(&b, "%s- [%s](#%s): %s\n", strings.Repeat("  ", depth), c.CommandPath(), anchor(c.CommandPath()), c.Short)
	}
	b.WriteString("\n## Exit codes\n\n```text\n" + strings.TrimPrefix(exitHelp, "Exit codes:\n") + "```\n")
	for _, c := range cmds {
		writeCommand(&b, c)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeCommand writes one command's section.
func writeCommand(b *bytes.Buffer, c *cobra.Command) {
	fmt.Fprintf(b, "\n## %s\n\n%s.\n\n```text\n", c.CommandPath(), strings.TrimSuffix(c.Short, "."))
	if c.Runnable() {
		b.WriteString(c.UseLine() + "\n")
	}
	if c.HasAvailableSubCommands() {
		b.WriteString(c.CommandPath() + " [command]\n")
	}
	b.WriteString("```\n")
	// The long help ends with the exit codes, written once above.
	long := strings.TrimSpace(strings.TrimSuffix(c.Long, exitHelp))
	if long != "" && long != c.Short {
		f := fence(long)
		b.WriteString("\n" + f + "text\n" + long + "\n" + f + "\n")
	}
	if strings.HasSuffix(c.Long, exitHelp) {
		b.WriteString("\nExit codes: [Exit codes](#exit-codes).\n")
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\nCommands:\n\n")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				fmt.Fprintf(b, "- [%s](#%s): %s\n", sub.Name(), anchor(sub.CommandPath()), sub.Short)
			}
		}
	}
	writeFlags(b, "Flags", c.LocalFlags())
	writeFlags(b, "Inherited flags", c.InheritedFlags())
}

// writeFlags writes a table of the flags that --help lists (not hidden, not
// deprecated; -h, --help left out), in the order of --help.
func writeFlags(b *bytes.Buffer, title string, fs *pflag.FlagSet) {
	var rows []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" || f.Name == "help" {
			return
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		typ, usage := pflag.UnquoteUsage(f)
		if typ == "" {
			typ = f.Value.Type()
		}
		def := ""
		if !zeroDefault(f) {
			def = "`" + cell(f.DefValue) + "`"
			if f.DefValue == "" || strings.TrimSpace(f.DefValue) != f.DefValue {
				def = fmt.Sprintf("`%q`", f.DefValue)
			}
		}
		if f.NoOptDefVal != "" && typ != "bool" {
			usage += fmt.Sprintf(" (given without a value: %s)", f.NoOptDefVal)
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s |", name, cell(typ), def, cell(usage)))
	})
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s:\n\n| Flag | Type | Default | Description |\n| --- | --- | --- | --- |\n", title)
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
}

// zeroDefault reports whether f's default is its type's zero value, which
// --help leaves out (pflag's rule).
func zeroDefault(f *pflag.Flag) bool {
	switch f.Value.Type() {
	case "string":
		return f.DefValue == ""
	case "bool":
		return f.DefValue == "false"
	case "duration":
		return f.DefValue == "0" || f.DefValue == "0s"
	}
	switch f.DefValue {
	case "", "false", "0", "<nil>", "[]":
		return true
	}
	return false
}

// cell makes s safe in a Markdown table cell: one line, no column breaks,
// no HTML.
var cellReplacer = strings.NewReplacer("\n", " ", "|", `\|`, "<", "&lt;", ">", "&gt;")

func cell(s string) string { return cellReplacer.Replace(s) }

// anchor is the anchor GitHub gives a heading made of a command path.
func anchor(path string) string {
	return strings.ReplaceAll(strings.ToLower(path), " ", "-")
}

// fence is a Markdown code fence longer than any run of backquotes in s.
func fence(s string) string {
	f := "```"
	for strings.Contains(s, f) {
		f += "`"
	}
	return f
}
