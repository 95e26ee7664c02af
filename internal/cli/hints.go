package cli

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/internal/human"
	"github.com/neardup/neardup/internal/objstore"
	"github.com/neardup/neardup/internal/suggest"
	"github.com/neardup/neardup/store"
)

// ErrorHint returns the line of advice `neardup dedup` prints after
// err ("hint: ..."): the flag or the step that fixes it, or "" when there
// is none to give. neardup-beam gives the same advice for a bad record.
func ErrorHint(err error) string { return errorHint(err) }

// errorHint returns a line of advice for err: the flag or the step that
// fixes it, or "" when there is none to give.
func errorHint(err error) string {
	var rec *corpus.RecordError
	errors.As(err, &rec)
	switch {
	case errors.Is(err, corpus.ErrMissingText), strings.Contains(err.Error(), corpus.ErrMissingText.Error()):
		return "--text-field NAME reads the text from another field (--skip-invalid skips the records without it)"
	case errors.Is(err, corpus.ErrTextType):
		return "--text-field NAME reads the text from another field (--skip-invalid skips the records whose text is not a string)"
	case errors.Is(err, store.ErrDuplicateID):
		return "--skip-invalid leaves out the documents whose id is already in the index (an interrupted or repeated add) and adds the others; --check adds only the documents that duplicate nothing in the index"
	case errors.Is(err, corpus.ErrTooLarge):
		return tooLargeHint(err)
	case rec != nil && rec.Record == 1 && rec.Offset == 0 && errors.Is(err, corpus.ErrSyntax) && strings.Contains(err.Error(), "invalid character 'ï'"):
		// encoding/json names the first byte of a UTF-8 byte order mark
		// (EF BB BF) as the rune U+00EF.
		return "the input starts with a UTF-8 byte order mark (BOM), which JSON Lines does not allow; remove it, e.g. sed -i '1s/^\\xEF\\xBB\\xBF//' FILE"
	case rec != nil && rec.File == "-" && errors.Is(err, corpus.ErrSyntax):
		return "standard input is read as JSON Lines; --format txt reads it as plain text, one document per line"
	case rec != nil && errors.Is(err, corpus.ErrNotObject) && strings.EqualFold(filepath.Ext(rec.File), ".json"):
		return "a .json file is read as JSON Lines, one object per line; an array of objects can be converted with: jq -c '.[]' FILE.json > FILE.jsonl"
	case rec != nil && errors.Is(err, corpus.ErrSyntax) && strings.EqualFold(filepath.Ext(rec.File), ".json"):
		return "a .json file is read as JSON Lines, one object per line (a pretty-printed or array file: jq -c '.[]' FILE.json > FILE.jsonl)"
	}
	return ""
}

// excludeHint is what the hint for a record without a text field (or
// with one that is not a string) adds when the record's file was found by
// walking an input directory of cmd (its arguments and --against): a
// file of another kind kept next to the corpus (a .jsonl of metadata in a
// folder of WARC files), which --exclude leaves out. "" otherwise, and
// for a command without --exclude.
func excludeHint(err error, cmd *cobra.Command) string {
	var rec *corpus.RecordError
	if cmd == nil || cmd.Flags().Lookup("exclude") == nil || !errors.As(err, &rec) ||
		!errors.Is(err, corpus.ErrMissingText) && !errors.Is(err, corpus.ErrTextType) {
		return ""
	}
	inputs := cmd.Flags().Args()
	if against, aerr := cmd.Flags().GetStringArray("against"); aerr == nil {
		inputs = append(slices.Clip(inputs), against...)
	}
	dir, rel, ok := walkedFrom(rec.File, inputs)
	if !ok {
		return ""
	}
	return fmt.Sprintf("; walking the input directory %s found this file: --exclude PATTERN leaves it out, here --exclude %s", dir, shellWord(globEscape(rel)))
}

// walkedFrom reports the input directory (or object store prefix) among
// inputs whose walk found file, and file's path relative to it (with
// forward slashes, as --exclude matches it); not ok when file is an
// input named on its own, or none of inputs holds it.
func walkedFrom(file string, inputs []string) (dir, rel string, ok bool) {
	if file == "" || file == "-" || slices.Contains(inputs, file) {
		return "", "", false
	}
	for _, in := range inputs {
		if objstore.IsURL(in) {
			if r, found := strings.CutPrefix(file, strings.TrimRight(in, "/")+"/"); found {
				return in, r, true
			}
			continue
		}
		if st, err := os.Stat(in); err != nil || !st.IsDir() {
			continue
		}
		r, err := filepath.Rel(in, file)
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
			continue
		}
		return in, filepath.ToSlash(r), true
	}
	return "", "", false
}

// globEscape escapes the characters path.Match reads as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// shellWord is s as one word of a POSIX shell command: as it is when
// it holds only letters, digits and ./_-+,:=@%, else in single quotes.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("./_-+,:=@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// maxRecordBytes is the largest --max-doc-bytes (sharedflags.Size).
const maxRecordBytes = math.MaxInt32

// tooLargeHint is errorHint's advice for a record over --max-doc-bytes:
// a limit that admits it (the power of two above its length) when the
// reader learnt its length, else to raise the limit above it.
func tooLargeHint(err error) string {
	var se *corpus.SizeError
	if !errors.As(err, &se) {
		return fmt.Sprintf("--max-doc-bytes raises the limit (default %s), e.g. --max-doc-bytes 64MB", formatSize(corpus.DefaultMaxDocBytes))
	}
	limit := exactSize(int64(se.Limit))
	now := fmt.Sprintf("--max-doc-bytes raises the limit (now %s)", limit)
	switch {
	case se.Length <= 0:
		return fmt.Sprintf("%s; the record is longer than %s: raise --max-doc-bytes above its length", now, limit)
	case se.Length > maxRecordBytes:
		return fmt.Sprintf("the record takes %s bytes, more than the largest --max-doc-bytes (%s bytes): it cannot be read; --skip-invalid leaves it out", human.Number(se.Length), human.Number(int64(maxRecordBytes)))
	}
	return fmt.Sprintf("%s; --max-doc-bytes %s admits this record of %s bytes", now, sizeFlag(se.Length), human.Number(se.Length))
}

// exactSize writes n bytes exactly: in the largest binary unit that
// divides it ("16 MiB"), else in bytes ("2,000 bytes").
func exactSize(n int64) string {
	for _, u := range []struct {
		name  string
		bytes int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.bytes && n%u.bytes == 0 {
			return fmt.Sprintf("%d %s", n/u.bytes, u.name)
		}
	}
	return human.Plural(n, "byte")
}

// sizeFlag returns a --max-doc-bytes value of at least n: the power of
// two at or above n in binary units ("128MiB"), or the largest value the
// flag takes when that power is above it.
func sizeFlag(n int64) string {
	p := int64(1) << bits.Len64(uint64(n-1))
	switch {
	case p > maxRecordBytes:
		return strconv.Itoa(maxRecordBytes)
	case p >= 1<<30:
		return fmt.Sprintf("%dGiB", p>>30)
	case p >= 1<<20:
		return fmt.Sprintf("%dMiB", p>>20)
	case p >= 1<<10:
		return fmt.Sprintf("%dKiB", p>>10)
	}
	return strconv.FormatInt(p, 10)
}

// objectStorageSchemes are the URL schemes of inputs that are not read
// (s3:// and gs:// are, through internal/objstore).
var objectStorageSchemes = []string{"gcs://", "hf://", "http://", "https://", "az://", "abfs://"}

// checkInputNames refuses, as usage errors, the inputs no reader takes:
// URLs neardup does not read (s3:// and gs:// it reads) and files of a
// format neardup does not read (CSV, TSV, ...), each with what to do.
func checkInputNames(args []string) error {
	for _, a := range args {
		for _, s := range objectStorageSchemes {
			if strings.HasPrefix(strings.ToLower(a), s) {
				hint := "copy the files to a local directory, or to s3:// or gs://, and pass that"
				if s == "gcs://" {
					hint = "Google Cloud Storage URLs are written gs://BUCKET/PREFIX"
				}
				return usageErr("%s: %s inputs are not supported; %s", a, strings.TrimSuffix(s, "://"), hint)
			}
		}
		switch l := strings.ToLower(a); {
		case strings.HasSuffix(l, ".csv"), strings.HasSuffix(l, ".tsv"),
			strings.HasSuffix(l, ".csv.gz"), strings.HasSuffix(l, ".tsv.gz"),
			strings.HasSuffix(l, ".csv.zst"), strings.HasSuffix(l, ".tsv.zst"):
			return usageErr("%s: %v: CSV and TSV are not read; convert to JSON Lines first, e.g. mlr --icsv --ojsonl cat FILE.csv > FILE.jsonl (Miller; --itsv for TSV), or take one column as text, one document per line, into a .txt file", a, corpus.ErrUnknownFormat)
		}
	}
	return nil
}

// flagSuggestion returns " (did you mean --X?)" for an unknown flag in
// err's message when cmd has a flag within two edits of it, else "".
func flagSuggestion(cmd *cobra.Command, err error) string {
	msg := err.Error()
	i := strings.Index(msg, "unknown flag: --")
	if i < 0 {
		return ""
	}
	name := msg[i+len("unknown flag: --"):]
	if j := strings.IndexAny(name, " ="); j >= 0 {
		name = name[:j]
	}
	var names []string
	visit := func(f *pflag.Flag) { names = append(names, f.Name) }
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	best := suggest.Nearest(name, names, 2)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean --%s?)", best)
}

// version is the binary's version: set at link time by scripts/cross
// (-ldflags "-X github.com/neardup/neardup/internal/cli.version=..."),
// else the module version of `go install ...@VERSION`, else the VCS
// revision the binary was built from.
var version = ""

// binaryVersion returns version, or what the build information says.
func binaryVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if (v == "" || v == "(devel)") && rev != "" {
		return "devel " + rev[:min(12, len(rev))] + modified
	}
	if v == "" {
		v = "(devel)"
	}
	return v
}

// plainFlagValueErr words pflag's error for a flag value that does not
// parse ("invalid argument "abc" for "--threshold" flag:
// strconv.ParseFloat: parsing "abc": invalid syntax") as the flag, the
// value and what the flag wants: --threshold "abc": not a number. Other
// errors are returned as they are.
func plainFlagValueErr(err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	name, value := "--"+ive.GetFlag().Name, ive.GetValue()
	cause := ive.Unwrap()
	var ne *strconv.NumError
	if !errors.As(cause, &ne) {
		return fmt.Errorf("%s %q: %v", name, value, cause)
	}
	want := "a number"
	switch ne.Func {
	case "ParseInt", "Atoi":
		want = "a whole number"
	case "ParseUint":
		want = "a whole number, 0 or more"
	case "ParseBool":
		want = "true or false"
	}
	what := "is not " + want
	if errors.Is(ne.Err, strconv.ErrRange) {
		what = "is out of range"
	}
	if ne.Num != value {
		// One element of a list flag (--thresholds 0.5,abc).
		return fmt.Errorf("%s %q: %q %s", name, value, ne.Num, what)
	}
	return fmt.Errorf("%s %q: %s", name, value, strings.TrimPrefix(what, "is "))
}
