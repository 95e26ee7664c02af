package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/sketch"
)

func newSignCmd(e *env) *cobra.Command {
	o := &dedupOpts{}
	var json bool
	cmd := &cobra.Command{
		Use:   "sign [flags] INPUT... -o FILE",
		Short: "Write each document's signature or fingerprint",
		Long: `Write one JSON line per input document: {"id", "method", "sketch"}, where
sketch is the method's per-document value (the content hash for exact, the
MinHash signature for minhash, the hex fingerprint for simhash...). The
flags mean what they mean for dedup.

` + exitHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSign(cmd, o, args, json, e)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.method, "method", sketch.MinHash.String(), methodsHelp())
	o.sketch.register(fs, groupShingle|groupMinHash|groupSeed|groupSimHash|groupKSentence)
	// bloom's sketch is the hash of its key: with --key-field, of the
	// field's value, the key dedup --method bloom --key-field compares.
	fs.StringVar(&o.keyField, "key-field", "", "bloom: sign this JSON field's value (a URL, say) instead of the text: the key that dedup --method bloom --key-field compares (a record without the field is an invalid record)")
	fs.IntVarP(&o.workers, "workers", "j", 0, "worker goroutines (0: all cores)")
	fs.StringVarP(&o.output, "output", "o", "-", "write the signatures here (JSONL; - for stdout)")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "print no summary and draw no progress bars")
	fs.BoolVar(&json, "json", false, "print the run summary as JSON (on standard error)")
	fs.StringVar(&o.tmpDir, "tmp-dir", "", "directory for temporary files")
	registerDevice(fs, &o.device)
	fs.StringVar(&o.cpuProf, "cpuprofile", "", "write a Go CPU profile here (for performance work)")
	fs.MarkHidden("cpuprofile")
	o.input.register(fs)
	o.input.registerWalk(fs)
	return cmd
}

func runSign(cmd *cobra.Command, o *dedupOpts, args []string, jsonOut bool, e *env) error {
	// Flags sign does not have keep the dedup defaults.
	o.bloomFPP, o.join.Keep = dedup.DefaultBloomFPP, "first"
	if err := checkMethodFlags(cmd.Flags(), o.method); err != nil {
		return err
	}
	cfg, err := o.config()
	if err != nil {
		return err
	}
	ropts, err := o.input.options()
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return usageErr("no INPUT: give files, directories or - for standard input")
	}
	if err := o.input.checkFormatUse(args); err != nil {
		return err
	}
	ex, err := expandInputs(args, o.input.exclude)
	if err != nil {
		return err
	}
	if err := checkInputFormats(ex.Files, ropts); err != nil {
		return err
	}
	in := dedup.Input{Files: ex.Files, Options: ropts, SkipInvalid: o.input.skipInvalid, Stdin: e.stdin,
		FilesSkipped: ex.Skipped, FilesExcluded: ex.Excluded}
	// Said before the run, naming the flag (checkOutputPath); signatures
	// never replace their corpus.
	if err := outputsNotReads([]outputFlag{{"-o", o.output}}, inputFile{"an input file", ex.Files}); err != nil {
		return err
	}
	if err := checkOutputPath("-o", o.output); err != nil {
		return err
	}
	stopProf, err := startCPUProfile(o.cpuProf)
	if err != nil {
		return err
	}
	defer stopProf()
	in.Progress = newProgress(cmd.Context(), e.stderr, o.quiet) // last: no early return leaves it running
	stats, err := dedup.Sign(cmd.Context(), cfg, in, o.output)
	err = optionErr(err)
	if err != nil {
		return err
	}
	// -q leaves the summary out, as for dedup and index add; --json is
	// asked for.
	if !o.quiet || jsonOut {
		if err := printSignSummary(e.stderr, stats, jsonOut); err != nil {
			return err
		}
	}
	if cmd.Flags().Changed("id-field") {
		warnIDsFromPosition(e.stderr, o.input.fields.IDField, stats.IDsFromPosition, stats.Documents, stats.IDsFromPositionFirst)
	}
	if err := allSkipped(int64(stats.Documents), int64(stats.Skipped), stats.SkippedErrors); err != nil {
		return err
	}
	return inputLost(stats.Damaged, o.input.allowTruncated)
}

func printSignSummary(w io.Writer, s *dedup.Stats, jsonOut bool) error {
	if jsonOut {
		return writeJSON(w, s)
	}
	_, err := fmt.Fprintf(w, "signed %s with %s (%s skipped, %d empty)\n", plural(s.Documents, "document"), s.Method, plural(s.Skipped, "invalid record"), s.Empty)
	printInputNotes(w, s)
	printDevice(w, s.Device)
	return err
}
