package staged

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/neardup/neardup/dedup"
)

// A scatter record is what the join needs of one document: its position
// in the whole input and its component's number (uvarints), its id (a
// uvarint length, then the bytes), its text's length (a uvarint) and its
// sketch (a uvarint length, then the bytes: dedup.SignedDoc.Sketch).
// Section g of the pack
// scatter/i is the records of shard i's documents of group g, in input
// order; the join's scratch partitions hold the same records.

// scatterHold is the bytes a scatter task holds before it spills: half
// its memory limit (the budget less the program), or the plan's
// SpillMemory; 0 for no limit.
func (j *Job) scatterHold() int64 {
	if j.Plan.SpillMemory > 0 {
		return j.Plan.SpillMemory
	}
	return j.limit() / 2
}

// scatter: the documents of shard s that have a group, with what the join
// needs of them, to one section a group of its pack. It builds those
// sections in memory; when they pass its share of the budget it appends
// what it holds to a local scratch file, one segment a group, and frees
// it; at the end each group's section is its segments, in order, then
// what it still holds. The ids and sketches come from the sign task's
// files, or, where the sketches carry shingle sets that sign did not
// keep, from a second read of the shard (rescatter).
func (j *Job) scatter(ctx context.Context, s int) error {
	off, err := j.offsets(ctx)
	if err != nil {
		return err
	}
	asg, err := j.Work.ReadAll(ctx, componentsOf(s))
	if err != nil {
		return err
	}
	if len(asg)%12 != 0 {
		return fmt.Errorf("%s: damaged work file: not a whole number of 12-byte entries", j.Work.URL(componentsOf(s)))
	}
	out := make([]chunks, j.Plan.Tasks)
	sp := &scatterSpill{dir: j.tmpDir(), segs: make([][]segment, j.Plan.Tasks)}
	defer sp.remove()
	hold := j.scatterHold()
	var held int64 // the blocks of out
	// added counts what group g's chunks grew by since they held before,
	// and spills past the task's share.
	added := func(g uint32, before int64) error {
		if held += out[g].size - before; hold > 0 && held > hold {
			if err := sp.spill(out); err != nil {
				return err
			}
			held = 0
		}
		return nil
	}
	var head []byte
	switch {
	case len(asg) == 0:
	case dedup.SignedSets(j.Plan.Options):
		if err := j.rescatter(ctx, s, asg, off[s], out, added); err != nil {
			return err
		}
	default:
		ids, err := j.open(ctx, signIDs(s))
		if err != nil {
			return err
		}
		defer ids.Close()
		sks, err := j.open(ctx, signSketches(s))
		if err != nil {
			return err
		}
		defer sks.Close()
		var doc uint32
		for x := 0; x < len(asg); x += 12 {
			want, g, comp, err := j.assigned(s, asg, x)
			if err != nil {
				return err
			}
			if want < doc {
				return fmt.Errorf("%s: damaged work file: document %d out of order", j.Work.URL(componentsOf(s)), want)
			}
			for ; doc < want; doc++ { // documents without a group
				if err := ids.skipField(); err != nil {
					return err
				}
				if _, err := ids.uvarint(); err != nil {
					return err
				}
				if err := sks.skipField(); err != nil {
					return err
				}
			}
			doc++
			o := &out[g]
			before := o.size
			head = appendUvarint(head[:0], uint64(off[s])+uint64(want))
			o.write(appendUvarint(head, uint64(comp)))
			if err := ids.copyField(o); err != nil { // the id
				return err
			}
			length, err := ids.uvarint()
			if err != nil {
				return err
			}
			o.write(appendUvarint(head[:0], length))
			if err := sks.copyField(o); err != nil { // the sketch
				return err
			}
			if err := added(g, before); err != nil {
				return err
			}
			if x%(12<<12) == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	if sp.f != nil {
		if err := sp.w.Flush(); err != nil {
			return sp.fail(err)
		}
		fmt.Fprintf(j.Stderr, "scatter task %d: spilled %d bytes to local scratch files, %d times (its share of the memory: %d bytes)\n", s, sp.size, sp.spills, j.scatterHold())
	}
	return j.Work.Put(ctx, scatterOf(s), func(w io.Writer) error {
		pw := newPackWriter(w, len(out))
		for g := range out {
			pw.section(g)
			for _, seg := range sp.segs[g] {
				if _, err := io.Copy(pw, io.NewSectionReader(sp.f, seg.off, seg.n)); err != nil {
					return sp.fail(err)
				}
			}
			c := &out[g]
			for _, b := range c.bufs {
				if _, err := pw.Write(b); err != nil {
					return err
				}
			}
			c.bufs = nil
		}
		return pw.finish()
	})
}

// scatterSpill is a scatter task's scratch file: the segments of each
// group's file that it spilled, in order, all in one file (one file
// descriptor however many groups).
type scatterSpill struct {
	dir    string
	f      *os.File
	w      *bufio.Writer
	size   int64       // bytes written
	spills int         // times spill ran
	segs   [][]segment // by group
}

type segment struct{ off, n int64 }

// spill appends the bytes of each group's chunks to the file and empties
// them.
func (sp *scatterSpill) spill(out []chunks) error {
	if sp.f == nil {
		f, err := os.CreateTemp(sp.dir, "neardup-scatter-*")
		if err != nil {
			return err
		}
		sp.f, sp.w = f, bufio.NewWriterSize(f, 1<<20)
	}
	sp.spills++
	for g := range out {
		c := &out[g]
		if c.size == 0 {
			continue
		}
		var n int64
		for _, b := range c.bufs {
			if _, err := sp.w.Write(b); err != nil {
				return sp.fail(err)
			}
			n += int64(len(b))
		}
		sp.segs[g] = append(sp.segs[g], segment{sp.size, n})
		sp.size += n
		*c = chunks{}
	}
	return nil
}

// fail names the scratch file in err.
func (sp *scatterSpill) fail(err error) error {
	return fmt.Errorf("scatter's scratch file %s: %w", sp.f.Name(), err)
}

// remove closes and removes the scratch file, if any.
func (sp *scatterSpill) remove() {
	if sp.f != nil {
		sp.f.Close()
		os.Remove(sp.f.Name())
	}
}

// chunks is a file built in memory in blocks, so that it grows without
// copying what it holds; its blocks double from 4 KiB to 1 MiB, so that
// thousands of groups with a few documents each hold little.
type chunks struct {
	bufs [][]byte
	size int64 // bytes held: the capacity of the blocks
}

const (
	firstChunk = 4 << 10
	chunkSize  = 1 << 20
)

// write appends b.
func (c *chunks) write(b []byte) {
	for len(b) > 0 {
		t := c.tail(len(b))
		n := copy(t[len(t):cap(t)], b)
		c.bufs[len(c.bufs)-1] = t[:len(t)+n]
		b = b[n:]
	}
}

// tail returns the last block, a new one when it is full.
func (c *chunks) tail(want int) []byte {
	if len(c.bufs) == 0 || len(c.bufs[len(c.bufs)-1]) == cap(c.bufs[len(c.bufs)-1]) {
		n := firstChunk
		if len(c.bufs) > 0 {
			n = min(2*cap(c.bufs[len(c.bufs)-1]), chunkSize)
		}
		c.bufs = append(c.bufs, make([]byte, 0, max(n, min(want, 16<<20))))
		c.size += int64(cap(c.bufs[len(c.bufs)-1]))
	}
	return c.bufs[len(c.bufs)-1]
}

// skipField skips a length-prefixed field.
func (r *reader) skipField() error {
	n, err := r.uvarint()
	if err != nil {
		return err
	}
	if _, err := r.Discard(int(min(n, 1<<31))); err != nil {
		return r.bad(err)
	}
	return nil
}

// copyField appends a length-prefixed field, its length included, to c.
func (r *reader) copyField(c *chunks) error {
	n, err := r.uvarint()
	if err != nil {
		return err
	}
	if n > 1<<31 {
		return r.bad(fmt.Errorf("a field of %d bytes", n))
	}
	var l [binary.MaxVarintLen64]byte
	c.write(binary.AppendUvarint(l[:0], n))
	for n > 0 {
		t := c.tail(int(n))
		k, err := io.ReadFull(r, t[len(t):min(cap(t), len(t)+int(n))])
		c.bufs[len(c.bufs)-1] = t[:len(t)+k]
		if err != nil {
			return r.bad(err)
		}
		n -= uint64(k)
	}
	return nil
}

// assigned is entry x of a components file (componentsOf(s)): a
// document of shard s, its group and its component.
func (j *Job) assigned(s int, asg []byte, x int) (doc, g, comp uint32, err error) {
	doc, g = binary.LittleEndian.Uint32(asg[x:]), binary.LittleEndian.Uint32(asg[x+4:])
	comp = binary.LittleEndian.Uint32(asg[x+8:])
	if g >= uint32(j.Plan.Tasks) {
		return 0, 0, 0, fmt.Errorf("%s: damaged work file: group %d of document %d", j.Work.URL(componentsOf(s)), g, doc)
	}
	return doc, g, comp, nil
}

// rescatter is scatter's records of shard s when sign kept no sketches
// (dedup.SignedSets): it reads the shard again as sign read it (the
// same ranges, reader options and --skip-invalid, so the same documents
// in the same order) and sketches only the documents of asg, which it
// appends to their groups' chunks in out; added is scatter's spill check.
// The sketch is the one sign made: the sketchers are deterministic, and
// a document's sketch depends on its text alone.
func (j *Job) rescatter(ctx context.Context, s int, asg []byte, first int64, out []chunks, added func(g uint32, before int64) error) error {
	metas, err := j.signMetas(ctx)
	if err != nil {
		return err
	}
	want := make([]uint32, 0, len(asg)/12)
	for x := 0; x < len(asg); x += 12 {
		doc, _, _, err := j.assigned(s, asg, x)
		if err != nil {
			return err
		}
		if len(want) > 0 && doc <= want[len(want)-1] {
			return fmt.Errorf("%s: damaged work file: document %d out of order", j.Work.URL(componentsOf(s)), doc)
		}
		want = append(want, doc)
	}
	p := j.Plan
	cfg := p.Options
	cfg.Workers = p.TaskWorkers
	in := dedup.Input{Options: p.Input.corpus(), SkipInvalid: p.Input.SkipInvalid}
	var head []byte
	var doc uint32 // documents read
	x := 0         // the next entry of asg
	_, err = dedup.SketchSome(ctx, cfg, in, OpenInput, p.Shards[s], want, metas[s].Skipped, func(d *dedup.SignedDoc) error {
		n := doc
		doc++
		if x >= len(asg) || n != binary.LittleEndian.Uint32(asg[x:]) {
			return nil // no group
		}
		_, g, comp, _ := j.assigned(s, asg, x)
		x += 12
		if len(d.Sketch) == 0 {
			return fmt.Errorf("shard %d, document %d (%q): no sketch on the second read, where sign found one: the input changed since the sign task read it", s, n, d.ID)
		}
		o := &out[g]
		before := o.size
		head = appendUvarint(head[:0], uint64(first)+uint64(n))
		head = appendUvarint(head, uint64(comp))
		head = appendUvarint(head, uint64(len(d.ID)))
		head = append(head, d.ID...)
		head = appendUvarint(head, uint64(d.Len))
		o.write(appendUvarint(head, uint64(len(d.Sketch))))
		o.write(d.Sketch)
		return added(g, before)
	})
	if err != nil {
		return err
	}
	if int64(doc) != metas[s].Documents {
		return fmt.Errorf("shard %d: %d documents on the second read, where sign read %d: the input changed since the sign task read it", s, doc, metas[s].Documents)
	}
	return nil
}
