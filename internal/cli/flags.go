package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/objstore"
	"github.com/neardup/neardup/internal/sharedflags"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/text"
)

// textFlags are the normalisation switches shared by dedup, sign and
// compare.
type textFlags struct {
	opts text.Options
}

func (f *textFlags) register(fs *pflag.FlagSet) {
	f.opts = text.DefaultOptions()
	text.RegisterFlags(fs, &f.opts)
}

// sketchGroup is a set of the flag groups of sketchFlags.
type sketchGroup = sharedflags.Group

const (
	groupThreshold = sharedflags.Threshold
	groupShingle   = sharedflags.Shingles
	groupMinHash   = sharedflags.MinHash
	groupSimHash   = sharedflags.SimHash
	groupKSentence = sharedflags.KSentence
	groupSeed      = sharedflags.Seed
)

// sketchFlags are the flags that make a sketch.Spec (package sharedflags
// declares them once, for neardup-beam too), with their errors as usage
// errors.
type sketchFlags struct{ sharedflags.Sketch }

// register declares the flags of groups (and always the normalisation
// flags) on fs, with sketch's defaults.
func (f *sketchFlags) register(fs *pflag.FlagSet, groups sketchGroup) {
	f.Register(fs, groups)
}

// spec returns the checked sketch.Spec of method m (sharedflags.Sketch.Spec);
// a bad value is a usage error naming the flag.
func (f *sketchFlags) spec(m sketch.Method) (sketch.Spec, error) {
	s, err := f.Spec(m)
	if err != nil {
		return s, usageErr("%v", err)
	}
	return s, nil
}

// inputFlags say how records are read.
type inputFlags struct {
	fields      sharedflags.Fields
	skipInvalid bool
	format      string // of standard input and nameless files: "", "jsonl" or "txt"
	// Registered by registerWalk, for the commands that walk input
	// directories and report damaged files.
	exclude        []string
	allowTruncated bool
}

func (f *inputFlags) register(fs *pflag.FlagSet) {
	f.fields.Register(fs)
	fs.Var(&f.fields.MaxDocBytes, "max-doc-bytes", sharedflags.MaxDocBytesUsage)
	fs.StringVar(&f.format, "format", "", "format of standard input (-) and of the input files whose names give none (data.zst, corpus.data): jsonl (the default for -) or txt (one document per line); other files go by their names")
	fs.BoolVar(&f.skipInvalid, "skip-invalid", false, "skip bad records (counted and reported) instead of stopping with exit code 3")
}

// registerWalk adds --exclude and --allow-truncated.
func (f *inputFlags) registerWalk(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.exclude, "exclude", nil, "leave out files and directories of input directories whose relative path or base name matches this glob (repeatable)")
	fs.BoolVar(&f.allowTruncated, "allow-truncated", false, "with --skip-invalid, exit 0 even when a damaged input file (truncated or corrupt stream) could be read only up to the damage (default: exit 5)")
}

func (f *inputFlags) options() (corpus.Options, error) {
	if err := f.fields.Check(); err != nil {
		return corpus.Options{}, usageErr("%v", err)
	}
	if f.allowTruncated && !f.skipInvalid {
		// Without --skip-invalid a damaged file stops the run (exit 3)
		// whatever --allow-truncated says.
		return corpus.Options{}, usageErr("--allow-truncated applies with --skip-invalid: without it a damaged input file stops the run (exit 3); add --skip-invalid to use the documents before the damage")
	}
	switch f.format {
	case "", corpus.StreamJSONL, corpus.StreamText:
	default:
		return corpus.Options{}, usageErr("--format %q: want jsonl or txt (it applies to standard input and to files whose names give no format; other files go by their names)", f.format)
	}
	return corpus.Options{TextField: f.fields.TextField, IDField: f.fields.IDField, MaxDocBytes: int(f.fields.MaxDocBytes), StreamFormat: f.format}, nil
}

// checkFormatUse refuses --format when no input is read in it: it
// applies to standard input and to the files named among args whose
// names give no format (data.zst, corpus.data); files whose names give a
// format keep it, and directories are walked for such files only.
func (f *inputFlags) checkFormatUse(args []string) error {
	if f.format == "" {
		return nil
	}
	for _, a := range args {
		if a == "-" {
			return nil
		}
		if corpus.CheckFormat(a) != nil {
			if st, err := os.Stat(a); err != nil || !st.IsDir() {
				return nil // a file (or a URL) whose name gives no format
			}
		}
	}
	return usageErr("--format %s applies to standard input (-) and to files whose names give no format (data.zst, corpus.data), and no input is either; files with a format in their names go by it (.txt: one document a line): rename the file, or give it as - (--format %s - < FILE)", f.format, f.format)
}

// checkInputFormats refuses (exit 2, ErrUnknownFormat) an input file
// that no reader takes, before anything is read: a name that gives no
// format, with no --format (or a .parquet.gz). The message says how to
// give the format when --format would.
func checkInputFormats(files []string, opts corpus.Options) error {
	for _, name := range files {
		err := corpus.CheckFormatWith(name, opts)
		if err == nil {
			continue
		}
		if corpus.CheckFormatWith(name, corpus.Options{StreamFormat: corpus.StreamJSONL}) == nil {
			return fmt.Errorf("%w: rename it, or give its format with --format jsonl or --format txt", err)
		}
		return err
	}
	return nil
}

// checkUnit01 validates a value in (0, 1] as a usage error.
func checkUnit01(name string, v float64) error {
	if err := sharedflags.CheckUnit01(name, v); err != nil {
		return usageErr("%v", err)
	}
	return nil
}

// expandInputs lists the input files, leaving out what matches exclude;
// a missing input, a broken link or a bad pattern is a usage error.
func expandInputs(args, exclude []string) (*corpus.Expansion, error) {
	return expandFlagInputs("", args, exclude)
}

// expandFlagInputs is expandInputs for the files of a flag (--against):
// its errors name the flag.
func expandFlagInputs(flag string, args, exclude []string) (*corpus.Expansion, error) {
	if err := checkInputNames(args); err != nil {
		if flag != "" {
			return nil, usageErr("%s: %s", flag, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		}
		return nil, err
	}
	e, err := corpus.ExpandWith(args, corpus.ExpandOptions{Exclude: exclude})
	if errors.Is(err, objstore.ErrUnreachable) {
		// The storage did not answer: a failure (exit 1), as for the
		// work folder, not a mistake in the command.
		return nil, err
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && (pe.Op == "stat" || pe.Op == "lstat") && errors.Is(err, fs.ErrNotExist) {
			// "stat x.jsonl: no such file or directory" is the system
			// call's wording: say the input is not there.
			err = fmt.Errorf("%s: no such file or directory", pe.Path)
		}
		if flag != "" {
			return nil, usageErr("%s: %v", flag, err)
		}
		return nil, usageErr("%v", err)
	}
	if len(e.Files) == 0 {
		msg := fmt.Sprintf("no input file found in %s", strings.Join(args, ", "))
		var notes []string
		if len(e.Skipped) > 0 {
			notes = append(notes, fmt.Sprintf("%s skipped, e.g. %s: %s", countNoun(len(e.Skipped), "path", "paths"), e.Skipped[0].Path, e.Skipped[0].Reason))
		}
		if e.Excluded > 0 {
			notes = append(notes, fmt.Sprintf("%s excluded by --exclude", number(e.Excluded)))
		}
		if len(notes) > 0 {
			msg += " (" + strings.Join(notes, "; ") + ")"
		}
		return nil, usageErr("%s", msg)
	}
	return e, nil
}

// printInputNotes prints what the input walk left out and the damaged
// files of a run, for the summaries of dedup and sign.
func printInputNotes(w io.Writer, s *dedup.Stats) {
	if s.FilesSkipped > 0 || s.FilesExcluded > 0 {
		fmt.Fprintf(w, "  input files not read: %d skipped, %d excluded by --exclude\n", s.FilesSkipped, s.FilesExcluded)
		for _, k := range s.FilesSkippedFirst {
			fmt.Fprintf(w, "    skipped %s: %s\n", k.Path, k.Reason)
		}
		if n := s.FilesSkipped - len(s.FilesSkippedFirst); n > 0 {
			fmt.Fprintf(w, "    ... and %d more (all in --stats)\n", n)
		}
	}
	if st := s.Stdin; st != nil && st.Bytes == 0 {
		fmt.Fprintln(w, "  standard input: empty (0 B read)")
	} else if st != nil {
		fmt.Fprintf(w, "  standard input: %s read", formatSize(st.Bytes))
		if st.SpoolBytes > 0 {
			fmt.Fprintf(w, ", a copy of %s kept in the temporary directory for the second pass", formatSize(st.SpoolBytes))
		}
		fmt.Fprintln(w)
		if s.Memory.EstimatedDocs == 0 {
			fmt.Fprintln(w, "    (its size was not known in advance: the memory estimate leaves it out; --spill for a stream larger than memory)")
		}
	}
	for _, d := range s.Damaged {
		lost := "the rest of the file was not read"
		if d.Resumed {
			lost = "one gzip member was lost; reading went on after it"
		}
		fmt.Fprintf(w, "  damaged input %s: %s\n    %s\n", d.File, lost, d.Error)
	}
}

// checkMethodFlags refuses (exit 2) a flag of fs that was given on the
// command line but that method does not read: sharedflags.CheckMethodFlags,
// whose table every front end shares.
func checkMethodFlags(fs *pflag.FlagSet, method string) error {
	if err := sharedflags.CheckMethodFlags(sharedflags.Pflags(fs), method); err != nil {
		return usageErr("%v", err)
	}
	return nil
}
