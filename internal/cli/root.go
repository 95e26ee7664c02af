// Package cli is the neardup command line: one file per command, flags
// defined here and nowhere else. Each command's RunE calls a runX function
// that tests call directly.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
)

// Exit codes, documented in the README and in `neardup --help`.
const (
	ExitOK          = 0   // success
	ExitFailure     = 1   // a run failed: I/O error, resources, internal error
	ExitUsage       = 2   // bad flags or arguments
	ExitInvalidData = 3   // bad input data: a malformed record, a missing field...
	ExitInputLost   = 5   // finished, but damaged input files were not read to the end
	ExitInterrupted = 130 // interrupted by a signal; outputs left untouched
	ExitBrokenPipe  = 141 // standard output closed early (| head), as a shell reports SIGPIPE
)

// errUsage marks errors in the command line itself.
var errUsage = errors.New("usage")

// usageErr returns a usage error with a message.
func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// env is what commands read and write instead of the process globals.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

const exitHelp = `Exit codes:
  0    success
  1    the run failed (I/O error, out of resources, internal error)
  2    bad flags or arguments (an input or --truth file that does not
       exist among them); an input format neardup does not read (CSV,
       TSV); an hf://, http(s)://, gcs:// or az:// input (s3:// and gs://
       are read)
  3    bad input data (malformed record, missing text field, invalid UTF-8,
       oversized document); the message names the file, line and document
       id; or --skip-invalid skipped every record
  5    finished and wrote its outputs, but input was lost: a damaged file
       (truncated or corrupt gzip/zstd, broken Parquet, cut web archive)
       was read only up to the damage (--skip-invalid); the summary names
       it. --allow-truncated makes this exit 0
  130  interrupted (Ctrl-C, SIGTERM); no output file was replaced (a
       second Ctrl-C ends the process at once, temporary files and all)
  141  standard output closed early (| head): stopped quietly after
       removing its temporary files
`

func newRootCmd(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "neardup",
		Short: "Find and remove near-duplicate documents",
		Long: `neardup finds exact and near-duplicate documents in text corpora with
exact hashing, Bloom filters, MinHash LSH, SimHash, KSentence and exact
Jaccard similarity joins.

` + exitHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.AddCommand(
		newDedupCmd(e),
		newSignCmd(e),
		newCompareCmd(e),
		newLSHParamsCmd(),
		newEvalCmd(),
		newIndexCmd(),
		newServeCmd(),
		newTuneCmd(),
		newBenchCmd(),
		newTaskCmd(e),
	)
	refuseUnknownCommands(root)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w: %v%s", errUsage, plainFlagValueErr(err), flagSuggestion(c, err))
	})
	root.Version = binaryVersion()
	root.SetVersionTemplate("neardup {{.Version}}\n")
	return root
}

// refuseUnknownCommands makes c and each command under it that only
// groups subcommands (neardup, neardup index) refuse an unknown
// subcommand with a usage error (exit 2); cobra prints the help and exits
// 0 for all but the root. Without arguments they print their help.
func refuseUnknownCommands(c *cobra.Command) {
	if c.HasSubCommands() && !c.Runnable() {
		c.Args = cobra.ArbitraryArgs
		if c.SuggestionsMinimumDistance <= 0 {
			c.SuggestionsMinimumDistance = 2
		}
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
			}
			return usageErr("%s", msg)
		}
	}
	for _, sub := range c.Commands() {
		refuseUnknownCommands(sub)
	}
}

// Main runs the command line and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := interruptible()
	defer stop()
	// A closed standard output (`| head`) makes writes fail with EPIPE
	// instead of killing the process with SIGPIPE, so that the run
	// removes its temporary files; it then exits 141 quietly, as the
	// signal would have.
	// Stopped when the command ends, as the watch of SIGINT and SIGTERM
	// is: a program that runs Main in its own process (a test, an
	// embedding) gets its signals back.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	root := newRootCmd(&env{stdin: stdin, stdout: stdout, stderr: stderr})
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)

	if err == nil {
		return ExitOK
	}
	if errors.Is(err, syscall.EPIPE) {
		return ExitBrokenPipe
	}
	code := exitCode(ctx, err)
	if code == ExitInterrupted && errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, interruptedMessage(cmd))
		return code
	}
	fmt.Fprintf(stderr, "neardup: %v\n", err)
	// A staged task's failure relays the task's own hint already.
	if h := errorHint(err); h != "" && !strings.Contains(err.Error(), "hint: "+h) {
		fmt.Fprintf(stderr, "hint: %s%s\n", h, excludeHint(err, cmd))
	}
	if code == ExitUsage {
		if cmd == nil {
			cmd = root
		}
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

// interruptedMessage is the line an interrupted command ends with. The
// output files were left as they were; but index add has written every
// batch completed before the interruption to the index (documented in its
// help), which a rerun would find again, as index copy has to --to and
// index upgrade has the sets of its batches, and a staged job keeps its
// completed tasks in --work, where the same command resumes.
func interruptedMessage(cmd *cobra.Command) string {
	if cmd != nil && cmd.CommandPath() == "neardup index add" {
		return "neardup: interrupted; the index keeps the documents of every batch written before it (no output file was replaced): rerun with --skip-invalid to add the rest, skipping the ids already there"
	}
	if cmd != nil && cmd.CommandPath() == "neardup index copy" {
		to := ""
		if f := cmd.Flags().Lookup("to"); f != nil {
			to = " " + redactLoc(f.Value.String())
		}
		return "neardup: interrupted; --to" + to + " keeps the documents of every batch copied before it (no output file was replaced): the same command again copies the rest, skipping the ids already there"
	}
	if cmd != nil && cmd.CommandPath() == "neardup index upgrade" {
		return "neardup: interrupted; the index keeps the shingle sets of every batch written before it (no output file was replaced): the same command again gives the rest theirs"
	}
	if cmd != nil && cmd.CommandPath() == "neardup dedup" {
		if ex, work := cmd.Flags().Lookup("executor"), cmd.Flags().Lookup("work"); ex != nil && work != nil && ex.Value.String() != "" {
			return fmt.Sprintf("neardup: interrupted; no output file was replaced; the completed tasks are kept in --work %s: the same command again resumes there", work.Value.String())
		}
	}
	return "neardup: interrupted; no output file was replaced"
}

// interruptible returns a context that the first SIGINT or SIGTERM
// cancels: the run then removes its temporary files and exits 130. A
// second signal ends the process at once, killed by that signal. stop
// ends the watch.
//
// One goroutine receives both signals from one channel with room for
// both, so that the second is never lost however late that goroutine
// runs. (signal.NotifyContext, with a goroutine that restored the default
// behaviour once the context was done, lost it on a busy machine: the
// second Ctrl-C came before that goroutine ran and was swallowed, and the
// run went on with its clean-up.)
func interruptible() (ctx context.Context, stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go onSignals(sigs, done, cancel, dieBySignal)
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			cancel()
		})
	}
}

// onSignals calls cancel at the first signal from sigs and die with the
// second, until done is closed.
func onSignals(sigs <-chan os.Signal, done <-chan struct{}, cancel func(), die func(os.Signal)) {
	select {
	case <-sigs:
		cancel()
	case <-done:
		return
	}
	select {
	case s := <-sigs:
		die(s)
	case <-done:
	}
}

// dieBySignal ends the process with the default action of s: killed by
// it, as the shell expects of a second Ctrl-C.
func dieBySignal(s os.Signal) {
	signal.Reset(s)
	if n, ok := s.(syscall.Signal); ok {
		if p, err := os.FindProcess(os.Getpid()); err == nil && p.Signal(s) == nil { // portable: no syscall.Kill on windows
			time.Sleep(time.Second) // the signal is delivered meanwhile
		}
		os.Exit(128 + int(n))
	}
	os.Exit(ExitInterrupted)
}

func exitCode(ctx context.Context, err error) int {
	var rec *corpus.RecordError
	var fas failedAfterSignal
	switch {
	case errors.As(err, &fas):
		return ExitFailure
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.Is(err, errUsage):
		return ExitUsage
	case errors.Is(err, dedup.ErrUnknownMethod), errors.Is(err, corpus.ErrUnknownFormat):
		return ExitUsage
	case errors.Is(err, errInputLost):
		return ExitInputLost
	case errors.As(err, &rec), errors.Is(err, errInvalidData):
		return ExitInvalidData
	}
	return ExitFailure
}

// errInputLost marks a run that finished although damaged input files
// were read only up to the damage.
var errInputLost = errors.New("input was lost")

// inputLost returns the error of a run that read damaged files, nil when
// there were none or the user allowed it.
func inputLost(damaged []dedup.DamagedFile, allow bool) error {
	if len(damaged) == 0 || allow {
		return nil
	}
	// Named here too: with -q there is no summary to see.
	names := make([]string, 0, 3)
	for _, d := range damaged[:min(len(damaged), 3)] {
		at := ""
		if d.Record > 0 && !d.Resumed {
			at = fmt.Sprintf(" (from record %s on)", number(int(d.Record)))
		}
		names = append(names, d.File+at)
	}
	if len(damaged) > len(names) {
		names = append(names, fmt.Sprintf("and %s more", number(len(damaged)-len(names))))
	}
	return fmt.Errorf("%w: %s read only up to the damage: %s; --allow-truncated accepts this (exit 0)", errInputLost,
		countNoun(len(damaged), "damaged input file was", "damaged input files were"), strings.Join(names, ", "))
}

// allSkipped returns the error of a run whose every record was invalid
// and skipped (--skip-invalid): its outputs are empty, which is not a
// success to report with exit 0. first is the first record's error.
func allSkipped(documents, skipped int64, first []string) error {
	if documents > 0 || skipped == 0 {
		return nil
	}
	msg := fmt.Sprintf("every record (%s) was invalid and skipped by --skip-invalid: no document was read", number(skipped))
	if len(first) > 0 {
		msg += "; the first: " + first[0]
	}
	return fmt.Errorf("%w: %s", errInvalidData, msg)
}

// errInvalidData marks bad input data found outside a corpus reader.
var errInvalidData = errors.New("invalid input")

// noArgs refuses positional arguments as a usage error (exit 2), where
// cobra.NoArgs reports them as an unknown command (exit 1).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErr("%s takes no arguments (got %q)", cmd.CommandPath(), args)
	}
	return nil
}

// rangeArgs is cobra.RangeArgs(lo, hi) with its error a usage error.
func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.RangeArgs(lo, hi)(cmd, args); err != nil {
			return usageErr("%s: %v", cmd.CommandPath(), err)
		}
		return nil
	}
}
