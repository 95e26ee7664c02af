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

// keptCopy is the scratch file of the first pass's records.
type keptCopy struct {
	f    *os.File
	w    *asyncWriter
	ends []int64 // end offset of each block
	size int64
	ok   bool // every document so far is in the copy
	docs int  // records in the copy
	// busy is the time the write stage's one goroutine spent on the
	// records (Stats.SerialParts), not waiting for blocks.
	busy time.Duration
}

func newKeptCopy(dir string) (*keptCopy, error) {
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
	b.unpacked, b.nPacked = false, 0
	for k := range b.docs {
		rd := &b.docs[k]
		if rd.kind != itemDoc || rd.old {
			continue
		}
		if !rd.parse {
			b.unpacked = true
			break
		}
		raw = binary.AppendUvarint(raw, uint64(rd.hi-rd.lo))
		raw = append(raw, b.buf[rd.lo:rd.hi]...)
		b.nPacked++
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
	if _, err := c.w.Write(b.packed); err != nil {
		c.ok = false
		return
	}
	c.size += int64(len(b.packed))
	c.ends = append(c.ends, c.size)
	c.docs += b.nPacked
}

// Close removes the file.
func (c *keptCopy) Close() error {
	c.w.Close()
	c.f.Close()
	if err := os.Remove(c.f.Name()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// each calls fn for every record of the copy, in order, on the calling
// goroutine; the blocks are read on workers goroutines.
func (c *keptCopy) each(ctx context.Context, workers int, fn func(rec []byte) error) error {
	if err := c.w.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", c.f.Name(), err)
	}
	type block struct {
		raw []byte
		err error
	}
	n := len(c.ends)
	ahead := 2 * max(workers, 1) // blocks of about 1 MiB read ahead
	slots := make([]chan block, n)
	for x := range slots {
		slots[x] = make(chan block, 1)
	}
	g, gctx := errgroup.WithContext(ctx)
	sem := make(chan struct{}, ahead) // blocks decoded and not yet consumed
	var next int
	var mu sync.Mutex
	free := make(chan []byte, ahead+workers)
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
					return nil
				}
				var start int64
				if x > 0 {
					start = c.ends[x-1]
				}
				var b block
				select {
				case b.raw = <-free:
				default:
				}
				b.raw = slices.Grow(b.raw[:0], int(c.ends[x]-start))[:c.ends[x]-start]
				if _, err := c.f.ReadAt(b.raw, start); err != nil && !(errors.Is(err, io.EOF) && len(b.raw) == 0) {
					b.err = err
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
				return fmt.Errorf("reading %s: %w", c.f.Name(), b.err)
			}
			span := startSerial()
			for rest := b.raw; len(rest) > 0; {
				l, k := binary.Uvarint(rest)
				if k <= 0 || uint64(len(rest)-k) < l {
					return fmt.Errorf("%s: damaged block %d", c.f.Name(), x)
				}
				if err := fn(rest[k : k+int(l)]); err != nil {
					return err
				}
				rest = rest[k+int(l):]
			}
			c.busy += span.stop()
			select {
			case free <- b.raw:
			default:
			}
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
	i := r.nOld
	d := corpus.Document{}
	err := c.each(ctx, r.cfg.workers(), func(rec []byte) error {
		if (i-r.nOld)%batchSize == batchSize-1 {
			r.in.Progress.Advance(batchSize, 0)
		}
		r.written.docs++
		r.written.bytes += int64(len(rec))
		i++
		if r.kept(keep, i-1) {
			d.Raw = rec
			return w.Write(&d)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if rest := (i - r.nOld) % batchSize; rest > 0 {
		r.in.Progress.Advance(rest, 0)
	}
	return nil
}
