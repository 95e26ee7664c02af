package pipeline

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/klauspost/compress/zstd"
)

// line is one output line with the shard it goes to and its place in the
// shard.
type line struct {
	Order  int64
	Key    []byte // compared after Order, before Order2 (bytes.Compare)
	Order2 int64
	Text   []byte
}

// writeShardsFn writes each shard's lines to Dir/Prefix-NAME+Suffix (NAME
// from the shard number, see shardName), sorted by (Order, Key, Order2) when
// Sort is set; a .zst suffix compresses with zstd.
type writeShardsFn struct {
	Dir, Prefix, Suffix string
	Sort                bool
	// ByFile names a shard FILE-CHUNK (shard = rank >> 20) instead of
	// by its number.
	ByFile bool
}

// chunkShift: an output shard of documents holds at most 2^20 of them.
const chunkShift = 20

func (f *writeShardsFn) name(shard int64) string {
	if f.ByFile {
		return fmt.Sprintf("%s/%s-%05d-%04d%s", f.Dir, f.Prefix, shard>>(rankFileShift-chunkShift), shard&(1<<(rankFileShift-chunkShift)-1), f.Suffix)
	}
	return fmt.Sprintf("%s/%s-%05d%s", f.Dir, f.Prefix, shard, f.Suffix)
}

func (f *writeShardsFn) ProcessElement(ctx context.Context, shard int64, it func(*line) bool) error {
	path := f.name(shard)
	var lines []line
	var l line
	w, err := createFile(ctx, path)
	if err != nil {
		return err
	}
	for it(&l) {
		if !f.Sort {
			if _, err := w.Write(l.Text); err != nil {
				w.abort()
				return fmt.Errorf("%s: %w", path, err)
			}
			continue
		}
		lines = append(lines, l)
		l = line{}
	}
	slices.SortFunc(lines, func(a, b line) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), bytes.Compare(a.Key, b.Key), cmp.Compare(a.Order2, b.Order2))
	})
	for _, l := range lines {
		if _, err := w.Write(l.Text); err != nil {
			w.abort()
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return w.Close()
}

// outFile is a file being written through a Beam file system, buffered and
// compressed when its name ends in .zst.
type outFile struct {
	path string
	fs   filesystem.Interface
	wc   io.WriteCloser
	bw   *bufio.Writer
	zw   *zstd.Encoder
}

func createFile(ctx context.Context, path string) (*outFile, error) {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, err
	}
	wc, err := fs.OpenWrite(ctx, path)
	if err != nil {
		fs.Close()
		return nil, err
	}
	f := &outFile{path: path, fs: fs, wc: wc, bw: bufio.NewWriterSize(wc, 1<<16)}
	if strings.HasSuffix(path, ".zst") {
		f.zw, err = zstd.NewWriter(f.bw)
		if err != nil {
			f.abort()
			return nil, err
		}
	}
	return f, nil
}

func (f *outFile) Write(p []byte) (int, error) {
	if f.zw != nil {
		return f.zw.Write(p)
	}
	return f.bw.Write(p)
}

func (f *outFile) Close() error {
	var err error
	if f.zw != nil {
		err = f.zw.Close()
	}
	if e := f.bw.Flush(); err == nil {
		err = e
	}
	if e := f.wc.Close(); err == nil {
		err = e
	}
	f.fs.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	return nil
}

func (f *outFile) abort() {
	if f.zw != nil {
		f.zw.Close()
	}
	f.wc.Close()
	f.fs.Close()
}

// writeShards writes a PCollection<KV<int64, line>>.
func writeShards(s beam.Scope, fn *writeShardsFn, lines beam.PCollection) {
	s = s.Scope("write " + fn.Prefix)
	beam.ParDo0(s, fn, beam.GroupByKey(s, lines))
}

// Edge files (the graph between jobs): one "a b" line per edge, in
// edgeShards shards by a hash of the edge.
const edgeShards = 16

func edgeLineFn(a, b int64, emit func(int64, line)) {
	h := uint64(a)*0x9e3779b97f4a7c15 ^ uint64(b)*0xc2b2ae3d27d4eb4f
	emit(int64(h>>32)%edgeShards, line{Text: fmt.Appendf(nil, "%d %d\n", a, b)})
}

func parseEdgeFn(s string, emit func(int64, int64)) error {
	var a, b int64
	if _, err := fmt.Sscanf(s, "%d %d", &a, &b); err != nil {
		return fmt.Errorf("internal: edge line %q: %w", s, err)
	}
	emit(a, b)
	return nil
}
