package corpus

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/neardup/neardup/internal/human"
	"github.com/neardup/neardup/internal/objstore"
)

// Version is one content of an input file, as a reader opened it
// (InputVersion): its size and its storage's tag of that content, an S3
// object's ETag, a GCS object's generation, a local file's modification
// time (nanoseconds since 1970). A staged job records each input's when
// it plans the job, and its tasks open the input with Options.Version: a
// file of another size or tag was written since, and is refused. (A
// local file written again with the same size within one tick of the
// clock its file system stamps with, a few milliseconds on Linux, or
// whose time was set back, as cp -p and rsync -t do, is not seen.)
type Version struct {
	Size int64  `json:"size"`
	Tag  string `json:"tag"`
}

// versionOf is the version of the file name that r (os.Open's file or
// objstore's reader) reads, the zero Version when not known.
func versionOf(r io.Reader) Version {
	v, ok := objstore.VersionOf(r)
	if !ok {
		return Version{}
	}
	return Version{Size: v.Size, Tag: v.Tag()}
}

// sameVersion refuses the file name, whose content is got, when want is
// not the zero Version and got is another.
func sameVersion(name string, got, want Version) error {
	// A size not known now (a GCS object decompressed on the way, whose
	// answer has no length) leaves the tag to tell.
	if want == (Version{}) || got.Tag == want.Tag && (got.Size == want.Size || got.Size < 0) {
		return nil
	}
	const must = "(a staged job's input must not change until the job is done)"
	if got.Size >= 0 && got.Size != want.Size {
		return fmt.Errorf("%s: %s bytes, where it had %s when the job was planned: the file changed since then %s", name, human.Number(got.Size), human.Number(want.Size), must)
	}
	what, now, was := "modification time", got.Tag, want.Tag
	switch {
	case strings.HasPrefix(name, "s3://"):
		what = "ETag"
	case strings.HasPrefix(name, "gs://"):
		what = "generation"
	case objstore.IsURL(name):
		what = "version"
	default:
		now, was = nanoTime(now), nanoTime(was)
	}
	if now == "" {
		now = "unknown"
	}
	return fmt.Errorf("%s: its %s is %s, where it was %s when the job was planned: the file was written again since then, with the same size %s", name, what, now, was, must)
}

// nanoTime writes a local file's tag, nanoseconds since 1970, as a time.
func nanoTime(tag string) string {
	n, err := strconv.ParseInt(tag, 10, 64)
	if err != nil {
		return tag
	}
	return time.Unix(0, n).UTC().Format(time.RFC3339Nano)
}

// InputVersion is the version of the file that r, a reader from Open,
// reads, as Open found it; false when not known (standard input, a
// reader not from Open, an object whose storage did not say).
func InputVersion(r Reader) (Version, bool) {
	var v Version
	switch r := r.(type) {
	case *JSONL:
		v = decoderVersion(r.closer)
	case *Lines:
		v = decoderVersion(r.closer)
	case *WARC:
		v = decoderVersion(r.closer)
	case *Parquet:
		v = r.version
	}
	return v, v.Tag != ""
}

func decoderVersion(c io.Closer) Version {
	if d, ok := c.(*decoder); ok {
		return d.version
	}
	return Version{}
}
