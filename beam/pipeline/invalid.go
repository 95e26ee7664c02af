package pipeline

import (
	"errors"
	"strings"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/internal/cli"
)

// ErrInvalidData is wrapped by the error of a run that stopped at bad
// input data: a record a reader refused (a bad JSON line, a record
// without its text field, invalid UTF-8) or a damaged gzip or zstd
// stream, a *corpus.RecordError in the worker (exit code 3 of the
// command, `neardup dedup`'s ExitInvalidData). Get the record's own
// message and its hint with errors.As and *InvalidDataError.
var ErrInvalidData = errors.New("invalid input")

// Marks of a bad record's error on its way from the worker: a DoFn's
// error reaches Run as text inside the runner's (the worker is another
// process, or behind gRPC), so its type is lost; the worker writes the
// record's message between invalidTag and, when it has one, hintTag and
// the hint of `neardup dedup` (cli.ErrorHint of the typed error).
const (
	invalidTag = "[neardup: invalid input data] "
	hintTag    = "\n[neardup: hint] "
)

// invalidData marks err, a reader's error, as bad input data when it is
// one (a *corpus.RecordError), with dedup's hint; other errors are
// returned as they are.
func invalidData(err error) error {
	var rec *corpus.RecordError
	if !errors.As(err, &rec) {
		return err
	}
	msg := invalidTag + err.Error()
	if h := cli.ErrorHint(err); h != "" {
		msg += hintTag + h
	}
	return errors.New(msg)
}

// InvalidDataError is the error of a run that stopped at bad input data
// (it wraps ErrInvalidData).
type InvalidDataError struct {
	// Record is the reader's message: the file, the line or record, the
	// document id when known, and what is wrong, as `neardup dedup`
	// prints it.
	Record string
	// Hint is the advice `neardup dedup` prints after it ("" for none):
	// the flag that fixes it (--text-field, --skip-invalid, ...).
	Hint string
	// Job is the runner's whole error, the marks removed.
	Job string
}

func (e *InvalidDataError) Error() string { return e.Job }

func (e *InvalidDataError) Is(target error) bool { return target == ErrInvalidData }

// classify returns err as an *InvalidDataError when the worker marked it
// as bad input data (invalidData), else err.
func classify(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	i := strings.LastIndex(msg, invalidTag)
	if i < 0 {
		return err
	}
	rec := msg[i+len(invalidTag):]
	hint := ""
	if j := strings.Index(rec, hintTag); j >= 0 {
		rec, hint = rec[:j], rec[j+len(hintTag):]
		// The runner may add its own lines after the DoFn's error.
		hint, _, _ = strings.Cut(hint, "\n")
	} else {
		rec, _, _ = strings.Cut(rec, "\n")
	}
	job := strings.ReplaceAll(strings.ReplaceAll(msg, hintTag, "\nhint: "), invalidTag, "")
	return &InvalidDataError{Record: strings.TrimSpace(rec), Hint: strings.TrimSpace(hint), Job: job}
}
