package dedup

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/internal/tempfile"
)

// The kept documents' copy (issue 25): the write stage used to read and
// decompress the whole input again on one goroutine (a zstd stream cannot
// be decoded in parallel) to write the kept documents. When every
// document of the first pass is a JSONL record split by the reader (so
// its record, as the second pass would read it, is at hand), the first
// pass's workers gather each batch's new records (a block a batch) and the
// collector appends the blocks, in order, to a scratch file; the second
// pass reads the blocks on every worker and writes the kept records in
// order: the same records, byte for byte. Anything else (other
// formats, sources, checkpoints, records skipped or damaged, examples)
// reads the input again as before.
const (
	copyPrefix = "neardup-copy-"
	copySuffix = ".bin"
)

// When the kept documents go to the null device (-o /dev/null, as the
// benchmarks' commands write), the copy keeps no records and makes no
// file: it only counts them, for the write stage's figures (at 1M
// documents the copy wrote 1.1 GB into the page cache and read it back
// for nothing; docs/benchmarks.md). Another device, such as a terminal,
// gets its records.

// keptCopy is the scratch file of the first pass's records.
type keptCopy struct {
	// count: the kept documents go to the null device; no file, only
	// docs and bytes (isNullDevice).
	count  bool
	bytes  int64 // the records' bytes, when count
	f      *os.File
	w      *asyncWriter
	ends   []int64 // end offset of each block
	starts []int   // records before each block
	size   int64
	ok     bool // every document so far is in the copy
	docs   int  // records in the copy
	// busy is the time the write stage's one goroutine spent on the
	// records (Stats.SerialParts), not waiting for blocks.
	busy time.Duration
	// gone: the file's removal, started once every block is read
	// (drop); goneErr its result, once Close has it.
	gone    chan error
	dropped bool
	goneErr error
}

func newKeptCopy(dir string, count bool) (*keptCopy, error) {
	if count {
		return &keptCopy{count: true, ok: true}, nil
	}
	f, err := tempfile.Create(dir, copyPrefix, copySuffix)
	if err != nil {
		return nil, err
	}
	return &keptCopy{f: f, w: newAsyncWriter(f), ok: true}, nil
}

// pack is the workers' part: b's new documents' records, each after its
// length (uvarint), in b.packed; b.unpacked is set when a document's
// record is not at hand. (Compressing the blocks, with S2, cost more CPU
// than the first pass's decompression of the input that the copy saves,
// 300 MB/s a core on bench text: the copy is plain.)
func (c *keptCopy) pack(b *batch) {
	raw := b.packed[:0]
	b.unpacked, b.nPacked, b.packedBytes = false, 0, 0
	for k := range b.docs {
		rd := &b.docs[k]
		if rd.kind != itemDoc || rd.old {
			continue
		}
		if !rd.parse {
			b.unpacked = true
			break
		}
		b.nPacked++
		if c.count {
			b.packedBytes += int64(rd.hi - rd.lo)
			continue
		}
		raw = binary.AppendUvarint(raw, uint64(rd.hi-rd.lo))
		raw = append(raw, b.buf[rd.lo:rd.hi]...)
	}
	b.packed = raw
}

// add is the collector's part, for each batch in order once it is done.
func (c *keptCopy) add(b *batch) {
	if !c.ok {
		return
	}
	if b.unpacked {
		c.ok = false
		return
	}
	if c.count {
		c.docs += b.nPacked
		c.bytes += b.packedBytes
		return
	}
	n := len(b.packed)
	var err error
	if b.packed, err = c.w.hand(b.packed); err != nil { // no copy: the batch takes a free buffer
		c.ok = false
		return
	}
	c.size += int64(n)
	c.ends = append(c.ends, c.size)
	c.starts = append(c.starts, c.docs)
	c.docs += b.nPacked
}

// Close removes the file.
func (c *keptCopy) Close() error {
	if c.count {
		return nil
	}
	c.w.Close()
	c.drop()
	if c.gone != nil {
		c.goneErr, c.gone = <-c.gone, nil
	}
	return c.goneErr
}

// drop removes the file behind the caller (Close waits for it): unlinking
// the copy of a million documents (1 GB) took 0.15 s, which the end of the
// write stage now overlaps.
func (c *keptCopy) drop() {
	if !c.dropped {
		c.dropped, c.gone = true, removeBehind(c.f)
	}
}

// records calls fn for each record of raw, a block of the copy (x its
// number, for errors), in order.
func (c *keptCopy) records(x int, raw []byte, fn func(rec []byte) error) error {
	for rest := raw; len(rest) > 0; {
		l, k := binary.Uvarint(rest)
		if k <= 0 || uint64(len(rest)-k) < l {
			return fmt.Errorf("%s: damaged block %d", c.f.Name(), x)
		}
		if err := fn(rest[k : k+int(l)]); err != nil {
			return err
		}
		rest = rest[k+int(l):]
	}
	return nil
}

// blocks reads the blocks of the copy on workers goroutines and calls
// prep on each there (x the block's number, raw its records, dst a
// buffer to reuse), then consume with prep's result on the calling
// goroutine, in order. prep may return raw itself.
func (c *keptCopy) blocks(ctx context.Context, workers int, prep func(x int, raw, dst []byte) ([]byte, error), consume func(x int, out []byte) error) error {
	if err := c.w.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", c.f.Name(), err)
	}
	type block struct {
		out []byte
		err error
	}
	n := len(c.ends)
	ahead := 2 * max(workers, 1) // blocks of about 1 MiB read ahead
	slots := make([]chan block, n)
	for x := range slots {
		slots[x] = make(chan block, 1)
	}
	g, gctx := errgroup.WithContext(ctx)
	sem := make(chan struct{}, ahead) // blocks read and not yet consumed
	var next int
	var mu sync.Mutex
	free := make(chan []byte, 2*ahead+workers)
	get := func() []byte {
		select {
		case b := <-free:
			return b[:0]
		default:
			return nil
		}
	}
	put := func(b []byte) {
		select {
		case free <- b:
		default:
		}
	}
	for range max(workers, 1) {
		g.Go(func() error {
			for {
				select {
				case sem <- struct{}{}:
				case <-gctx.Done():
					return gctx.Err()
				}
				mu.Lock()
				x := next
				next++
				mu.Unlock()
				if x >= n {
					<-sem
					if x == n+max(workers, 1)-1 { // the last reader out: every block is read
						c.drop()
					}
					return nil
				}
				var start int64
				if x > 0 {
					start = c.ends[x-1]
				}
				var b block
				raw := slices.Grow(get(), int(c.ends[x]-start))[:c.ends[x]-start]
				if _, err := c.f.ReadAt(raw, start); err != nil && !(errors.Is(err, io.EOF) && len(raw) == 0) {
					b.err = fmt.Errorf("reading %s: %w", c.f.Name(), err)
				} else {
					b.out, b.err = prep(x, raw, get())
					if len(b.out) > 0 && len(raw) > 0 && &b.out[0] != &raw[0] {
						put(raw)
					}
				}
				slots[x] <- b
			}
		})
	}
	g.Go(func() error {
		for x := range n {
			var b block
			select {
			case b = <-slots[x]:
			case <-gctx.Done():
				return gctx.Err()
			}
			<-sem
			if b.err != nil {
				return b.err
			}
			span := startSerial()
			err := consume(x, b.out)
			c.busy += span.stop()
			if err != nil {
				return err
			}
			put(b.out)
		}
		return nil
	})
	return g.Wait()
}

// writeKeptFromCopy is pass 2 from the copy: every new document's record
// in input order, the kept ones written to w.
func (r *run) writeKeptFromCopy(ctx context.Context, w corpus.Writer, keep []int32) error {
	c := r.keptCopy
	if c.docs != len(keep)-r.nOld {
		return fmt.Errorf("dedup: the copy of the input holds %d documents, want %d", c.docs, len(keep)-r.nOld)
	}
	r.in.Progress.Stage("write", int64(r.stats.Documents))
	if c.count { // the null device: nothing to write, the same figures
		r.written.docs += int64(c.docs)
		r.written.bytes += c.bytes
		r.in.Progress.Advance(c.docs, 0)
		return nil
	}
	var err error
	if lw, ok := w.(corpus.LineWriter); ok {
		// The workers make the kept records' lines; this goroutine
		// writes them.
		type tally struct{ docs, bytes int64 }
		tallies := make([]tally, len(c.ends))
		err = c.blocks(ctx, r.cfg.workers(), func(x int, raw, dst []byte) ([]byte, error) {
			i := r.nOld + c.starts[x]
			var d corpus.Document
			t := &tallies[x]
			err := c.records(x, raw, func(rec []byte) error {
				t.docs++
				t.bytes += int64(len(rec))
				i++
				if !r.kept(keep, i-1) {
					return nil
				}
				d.Raw = rec
				var err error
				dst, err = corpus.AppendLine(dst, &d)
				return err
			})
			return dst, err
		}, func(x int, lines []byte) error {
			t := tallies[x]
			r.written.docs += t.docs
			r.written.bytes += t.bytes
			r.in.Progress.Advance(int(t.docs), 0)
			return lw.WriteLines(lines)
		})
	} else {
		i := r.nOld
		d := corpus.Document{}
		err = c.blocks(ctx, r.cfg.workers(), func(_ int, raw, _ []byte) ([]byte, error) { return raw, nil }, func(x int, raw []byte) error {
			from := i
			err := c.records(x, raw, func(rec []byte) error {
				r.written.docs++
				r.written.bytes += int64(len(rec))
				i++
				if r.kept(keep, i-1) {
					d.Raw = rec
					return w.Write(&d)
				}
				return nil
			})
			r.in.Progress.Advance(i-from, 0)
			return err
		})
	}
	r.serial.add("write records", c.busy)
	return err
}

// isNullDevice reports whether path names the null device (os.DevNull,
// by any name): what is written there is lost, so the kept documents'
// copy need not hold them. Other character devices (a terminal) are not.
func isNullDevice(path string) bool {
	if path == "" || path == "-" {
		return false
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(st, null)
}
