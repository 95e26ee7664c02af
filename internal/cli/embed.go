package cli

import (
	"github.com/neardup/neardup/dedup"
)

// DedupConfig parses args, the flags of `neardup dedup` without INPUT
// (e.g. "--threshold=0.7", "--unit=char"), exactly as the command does,
// and returns the run's Options and its Input without files: reader
// options, --skip-invalid and --examples. It is for programs that run
// dedup.Run in-process on the command line's terms (the Python binding,
// python/capi), so that the same flags give the same clusters. The flags
// that name files or change what is read (--output, --clusters, --pairs,
// --stats, --report, --options-json, --against, --resume, --sample,
// --tmp-dir and the profiles) are refused: such a caller sets
// dedup.Outputs itself. Errors read as the command's usage errors do.
func DedupConfig(args []string) (dedup.Options, dedup.Input, error) {
	o := &dedupOpts{}
	fs := newDedupCmdOpts(&env{}, o).Flags()
	if err := fs.Parse(args); err != nil {
		return dedup.Options{}, dedup.Input{}, usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return dedup.Options{}, dedup.Input{}, usageErr("unexpected argument %q: give flags only", fs.Arg(0))
	}
	for _, name := range []string{"output", "clusters", "pairs", "stats", "report", "options-json",
		"against", "resume", "sample", "tmp-dir", "cpuprofile", "memprofile"} {
		if fs.Changed(name) {
			return dedup.Options{}, dedup.Input{}, usageErr("--%s is not an option here", name)
		}
	}
	cfg, err := o.config()
	if err != nil {
		return dedup.Options{}, dedup.Input{}, err
	}
	ropts, err := o.input.options()
	if err != nil {
		return dedup.Options{}, dedup.Input{}, err
	}
	in := dedup.Input{Options: ropts, SkipInvalid: o.input.skipInvalid, Examples: o.examples}
	if o.quiet {
		in.Examples = 0
	}
	return cfg, in, nil
}

// DedupError is the message `neardup dedup` prints for err, a failed
// dedup.Run's error: an invalid option named by its flag.
func DedupError(err error) error { return optionErr(err) }
