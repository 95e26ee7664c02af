package dedup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/text/t2s"
)

// The stages of a pass (eachDoc):
//
//   - the reader (one goroutine) decompresses each input and splits it
//     into records; JSONL records (files and standard input) are not
//     parsed there but copied whole into the batch (Options.RawOnly), and
//     a JSONL file's lines are not even split there: the reader copies
//     whole blocks of lines into a batch (corpus.JSONL.Lines), and the
//     worker splits them (corpus.SplitLines); what the readers report (a
//     record too large, a damaged stream, a file that fails) travels as an
//     event item in its place in the batch;
//   - the workers split the blocks, learn the position of their first
//     record from the batch before (seqChain: a record's Doc.Index), parse
//     the JSONL records (corpus.ParseJSONLShared: the text points into
//     the batch, no copy), normalise and sketch them;
//   - the collector (one goroutine) takes the batches in input order and
//     applies everything in that order: bad records (skipped or fatal),
//     events, ids, counts, checkpoints, the finder.
//
// So the records are validated in parallel, yet every error, every
// --skip-invalid report and every count comes out as the reader alone
// would have produced them, whatever the number of workers.

// batchSize items travel together between the stages, or fewer when
// their records reach batchBytes; a block of lines is at most blockBytes
// (or one line).
const (
	batchSize  = 256
	batchBytes = 1 << 20
	blockBytes = 256 << 10
)

type batch struct {
	seq  int
	docs []rawDoc
	buf  []byte // the records of docs that keep theirs (rawDoc.lo, hi)
	nrec int    // records among docs (Doc.Index: rawDoc.seq counts from the batch's first)
	// A block of whole lines of a JSONL file, in buf, for the worker to
	// split into docs: the number and offset of its first line, and the
	// file's position (rawDoc.file) and whether it is old.
	lines    bool
	line     int64
	offset   int64
	file     int
	old      bool
	sketches []DocSketch
	hits     []*indexHit // with AgainstIndexes: docs[k]'s duplicate, or nil
	// The kept documents' copy (keptCopy.pack): the new records;
	// unpacked when one was not at hand.
	packed   []byte
	nPacked  int
	unpacked bool
	// packedBytes: the new records' bytes, for a copy that only counts
	// them (keptCopy.count).
	packedBytes int64
}

// What a rawDoc is.
const (
	itemDoc     = iota // a document (or a JSONL record that may be bad)
	itemSkip           // the reader reported a bad record or damage: ev
	itemStop           // the reader stopped with err (Err, Open, Close)
	itemResumed        // file's documents came from its checkpoint: trailer
)

type rawDoc struct {
	kind     uint8
	old      bool // from Input.Against
	parse    bool // a JSONL record to parse on the worker
	pre      bool // sketch already known (from a checkpoint)
	id, text string
	n        int // length of the text in bytes
	size     int // length of the record as read
	file     int // position of its file in Against, then Files
	lo, hi   int // the record in batch.buf, when parse or a key field is needed
	seq      int // position among the records read (Doc.Index); in its batch until the worker adds the batch's first
	record   int64
	offset   int64
	sketch   DocSketch // when pre
	// bad is the record's error found by the worker; err a worker's
	// failure on the document, or the reader's (itemStop).
	bad     *corpus.RecordError
	err     error
	ev      *corpus.RecordError // itemSkip
	trailer ckptTrailer         // itemResumed
	// hit is the document's duplicate in Input.AgainstIndexes, found by
	// the worker (the same as its batch's hits entry), for SketchRanges.
	hit *indexHit
}

// eachDoc reads every document, normalises it and hands it to one of the
// workers (sketchers, one per goroutine), and calls consume for each in
// input order on one goroutine.
func (r *run) eachDoc(ctx context.Context, sketchers []DocSketcher, consume func(i int, d *rawDoc, s DocSketch) error) error {
	workers := len(sketchers)
	g, gctx := errgroup.WithContext(ctx)
	jobs := make(chan *batch, workers*2)
	done := make(chan *batch, workers*2)
	free := sync.Pool{New: func() any { return &batch{} }}
	chain := newSeqChain(gctx)
	defer chain.stop()
	g.Go(func() error {
		defer close(jobs)
		return r.readStage(gctx, jobs, &free)
	})
	var wg sync.WaitGroup
	for w, sk := range sketchers {
		wg.Add(1)
		var ck workerCheckers
		if len(r.checkers) == len(sketchers) {
			ck.text = r.checkers[w]
		}
		if len(r.normCheckers) == len(sketchers) {
			ck.norm = r.normCheckers[w]
		}
		if rs := reusedOf(sk); rs != nil && len(r.sketchCheckers) == len(sketchers) && reflect.DeepEqual(rs.sketchSpec(), r.spec) {
			ck.sketch, ck.last = r.sketchCheckers[w], rs
		}
		g.Go(func() error {
			defer wg.Done()
			return r.workStage(gctx, sk, ck, chain, jobs, done)
		})
	}
	go func() { wg.Wait(); close(done) }()
	g.Go(func() error {
		c := collector{r: r, consume: consume, free: &free}
		return c.run(gctx, done)
	})
	if err := g.Wait(); err != nil {
		return err
	}
	return r.ckpt.finish()
}

// readStage reads the inputs (or their checkpoints) into batches.
func (r *run) readStage(ctx context.Context, jobs chan<- *batch, free *sync.Pool) error {
	span := startSerial()
	defer func() { r.serial.add("read", span.stop()) }()
	b := free.Get().(*batch)
	b.reset(0)
	seq := 0
	send := func() error {
		select {
		case jobs <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
		seq++
		b = free.Get().(*batch)
		b.reset(seq)
		return nil
	}
	push := func(rd rawDoc) error {
		b.docs = append(b.docs, rd)
		if len(b.docs) == batchSize || len(b.buf) >= batchBytes {
			return send()
		}
		return nil
	}
	old, file, split := false, 0, false
	add := func(d *corpus.Document) error {
		rd := rawDoc{old: old, file: file, size: len(d.Raw), seq: b.nrec, record: d.Record, offset: d.Offset}
		b.nrec++
		// With RawOnly, only a JSONL record comes without an id.
		if rd.parse = split && d.ID == ""; !rd.parse {
			rd.id, rd.text, rd.n = d.ID, d.Text, len(d.Text)
		}
		if rd.parse || r.cfg.KeyField != "" {
			rd.lo = len(b.buf)
			b.buf = append(b.buf, d.Raw...)
			rd.hi = len(b.buf)
		}
		return push(rd)
	}
	opts := r.in.Options
	if r.in.SkipInvalid || opts.OnInvalid != nil {
		// The collector decides, in order, what a bad record does.
		opts.OnInvalid = func(e *corpus.RecordError) error {
			return push(rawDoc{kind: itemSkip, old: old, file: file, offset: e.Offset, ev: e})
		}
	}
	// A block of lines goes in a batch of its own, after the documents
	// before it.
	lines := func(jl *corpus.JSONL) (bool, error) {
		if len(b.docs) > 0 {
			if err := send(); err != nil {
				return false, err
			}
		}
		var ok bool
		b.buf, b.line, b.offset, ok = jl.Lines(b.buf[:0], blockBytes)
		if !ok {
			return false, nil
		}
		b.lines, b.file, b.old = true, file, old
		return true, send()
	}
	for k, name := range r.sequence {
		old, file = k < len(r.in.Against), k
		if r.ckpt != nil && name != "-" {
			tr, err := readCheckpoint(ckptPath(r.ckpt.dir, k), r.ckpt.codec, func(id string, n int, sk DocSketch) error {
				b.nrec++
				return push(rawDoc{id: id, n: n, old: old, file: k, pre: true, sketch: sk, seq: b.nrec - 1})
			})
			switch {
			case err == nil:
				if err := push(rawDoc{kind: itemResumed, old: old, file: k, trailer: tr}); err != nil {
					return err
				}
				continue
			case errors.Is(err, errCheckpoint):
				os.Remove(ckptPath(r.ckpt.dir, k)) // damaged: read the file again
			case !errors.Is(err, os.ErrNotExist):
				return err
			}
		}
		// JSONL is split here and parsed on the workers; a Source's
		// reader is the caller's and gets the options as they are.
		_, isSource := r.sources[name]
		split = !isSource
		o := opts
		o.RawOnly = split
		if err := r.readFile(ctx, name, o, add, lines); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// In its place: the documents before it come first.
			if err := push(rawDoc{kind: itemStop, old: old, file: file, err: err}); err != nil {
				return err
			}
			break
		}
	}
	if len(b.docs) > 0 {
		return send()
	}
	return nil
}

// reset empties b for its use as batch seq.
func (b *batch) reset(seq int) {
	b.docs, b.buf, b.seq, b.nrec, b.lines = b.docs[:0], b.buf[:0], seq, 0, false
}

// split makes the documents of b's block of lines (corpus.SplitLines): a
// line too long is a bad record, as the reader reports it (the collector
// looks ahead for damage, as the reader would), and not counted.
func (r *run) split(b *batch) {
	corpus.SplitLines(b.buf, r.sequence[b.file], b.line, b.offset, r.in.Options, func(lo, hi int, line, offset int64, bad *corpus.RecordError) error {
		rd := rawDoc{old: b.old, file: b.file, record: line, offset: offset, bad: bad}
		if bad == nil {
			rd.parse, rd.size, rd.seq, rd.lo, rd.hi = true, hi-lo, b.nrec, lo, hi
			b.nrec++
		}
		b.docs = append(b.docs, rd)
		return nil
	})
}

// seqChain gives each batch, in order, the number of records before it,
// which the workers learn only once they have split the blocks: the
// worker of a batch waits for the batch before it (to be split, not
// sketched).
type seqChain struct {
	mu      sync.Mutex
	cond    sync.Cond
	next    int // the batch whose first record is known next
	records int // the records before it
	stopped bool
	cancel  func() bool
}

func newSeqChain(ctx context.Context) *seqChain {
	c := &seqChain{}
	c.cond.L = &c.mu
	c.cancel = context.AfterFunc(ctx, c.halt) // halt, not stop: it may run before c.cancel is set
	return c
}

// take waits for batch seq's turn and returns the records before it; n
// are its own. ok is false once the chain is stopped.
func (c *seqChain) take(seq, n int) (first int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.next != seq && !c.stopped {
		c.cond.Wait()
	}
	if c.stopped {
		return 0, false
	}
	first = c.records
	c.records += n
	c.next++
	c.cond.Broadcast()
	return first, true
}

// stop ends the waits (the pass ends or fails).
func (c *seqChain) stop() {
	c.cancel()
	c.halt()
}

// halt ends the waits; the context's cancellation calls it.
func (c *seqChain) halt() {
	c.mu.Lock()
	c.stopped = true
	c.cond.Broadcast()
	c.mu.Unlock()
}

// workStage parses, normalises and sketches the documents of the batches.
// A document's failure is kept in it for the collector, which reports it
// in input order.
func (r *run) workStage(ctx context.Context, sk DocSketcher, checkers workerCheckers, chain *seqChain, jobs <-chan *batch, done chan<- *batch) error {
	var buf []byte
	for b := range jobs {
		if b.lines {
			r.split(b)
		}
		first, ok := chain.take(b.seq, b.nrec)
		if !ok {
			return ctx.Err()
		}
		for k := range b.docs {
			b.docs[k].seq += first
		}
		b.sketches = slices.Grow(b.sketches[:0], len(b.docs))[:len(b.docs)]
		b.hits = b.hits[:0]
		if checkers.any() {
			b.hits = slices.Grow(b.hits, len(b.docs))[:len(b.docs)]
		}
		for k := range b.docs {
			rd := &b.docs[k]
			if rd.kind != itemDoc {
				continue
			}
			if rd.parse && r.wantExact && !r.want(rd.seq) {
				b.sketches[k] = nil // not wanted (SketchSome): not even parsed
				continue
			}
			if rd.parse {
				d := corpus.Document{Raw: b.buf[rd.lo:rd.hi], Source: r.sequence[rd.file], Record: rd.record, Offset: rd.offset}
				if err := corpus.ParseJSONLShared(&d, r.in.Options); err != nil {
					rd.bad = &corpus.RecordError{File: d.Source, Record: d.Record, Offset: d.Offset, ID: d.ID, Err: err}
					continue
				}
				rd.id, rd.text, rd.n = d.ID, d.Text, len(d.Text)
			}
			b.sketches[k], rd.err = r.sketchDoc(sk, checkers, b, k, &buf)
		}
		if bs, ok := sk.(batchSketcher); ok {
			if err := bs.flush(b.sketches); err != nil {
				return err
			}
		}
		if r.keptCopy != nil {
			r.keptCopy.pack(b)
		}
		select {
		case done <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// workerCheckers are a worker's checkers of the indexes: by raw text
// (run.checkers) or by the run's normalised text (run.normCheckers), at
// most one of the two.
type workerCheckers struct {
	text []func(string) (string, float64, bool, error)
	norm []func([]byte) (string, float64, bool, error)
	// sketch, with norm, takes the sketches of last, the worker's
	// sketcher, for the documents it sketches; norm the others'.
	sketch []func(*sketch.Sketch) (string, float64, bool, error)
	last   reusedSketcher
}

func (c workerCheckers) any() bool { return c.text != nil || c.norm != nil }

// sketchDoc looks document k of b up in the indexes and sketches it.
func (r *run) sketchDoc(sk DocSketcher, checkers workerCheckers, b *batch, k int, buf *[]byte) (DocSketch, error) {
	rd := &b.docs[k]
	if checkers.text != nil && !rd.old {
		hit, err := check(checkers.text, rd.text)
		if err != nil {
			return nil, fmt.Errorf("document %q: %w", rd.id, err)
		}
		b.hits[k], rd.hit = hit, hit
	}
	normCheck := func() error {
		if checkers.norm == nil || rd.old {
			return nil
		}
		hit, err := checkNormalized(checkers.norm, *buf)
		if err != nil {
			return fmt.Errorf("document %q: %w", rd.id, err)
		}
		b.hits[k], rd.hit = hit, hit
		return nil
	}
	if rd.pre || r.want != nil && !r.want(rd.seq) {
		// Not sketched here (known, or not wanted: SketchSome); the
		// indexes' lookup still needs the normalised text.
		if checkers.norm != nil && !rd.old {
			*buf = r.norm.Append((*buf)[:0], rd.text)
			if err := normCheck(); err != nil {
				return nil, err
			}
		}
		if rd.pre {
			return rd.sketch, nil
		}
		return nil, nil
	}
	var found bool
	*buf, found = r.norm.AppendFound((*buf)[:0], rd.text)
	// With checkers.sketch the lookup waits for the document's sketch;
	// a document that may be left unsketched below (empty, or a bad
	// record by its key) is looked up by its text.
	bySketch := checkers.sketch != nil && !rd.old && len(*buf) > 0 && r.cfg.KeyField == ""
	if !bySketch {
		if err := normCheck(); err != nil {
			return nil, err
		}
	}
	// The key before the text's checks: a record without it is a bad
	// record whatever its text, even an empty one, so that the second
	// pass (pass2) can tell the records skipped here by the key alone.
	var key string
	if r.cfg.KeyField != "" {
		var err error
		if key, err = corpus.Field(b.buf[rd.lo:rd.hi], r.cfg.KeyField); err != nil {
			// A bad record, named by file and line (exit code 3;
			// --skip-invalid skips it), as a missing text field is.
			rd.bad = &corpus.RecordError{File: r.sequence[rd.file], Record: rd.record, Offset: rd.offset, ID: rd.id,
				Err: fmt.Errorf("%w; --key-field NAME reads the key from another field (--skip-invalid skips the records without it)", err)}
			return nil, nil
		}
	}
	// The pages of web archives reach here as the text their reader
	// extracted (corpus.Options.HTMLMain), in which the HTML step finds
	// no page: they are not counted (Stats.HTMLNoMainContent).
	if !found && !rd.old && !corpus.IsWebArchive(r.sequence[rd.file]) {
		r.noMain.Add(1)
	}
	// An empty text is no document to compare, unless the key is what
	// is compared (bloom --key-field): a record with its key and no text
	// is a copy of, or the first of, the records with that key.
	if len(*buf) == 0 && r.cfg.KeyField == "" {
		return nil, nil
	}
	if !r.spec.Normalize.T2S && !rd.old && t2s.ChineseWithTraditional(*buf) {
		r.traditional.Add(1)
	}
	if !r.spec.Normalize.HTML && !rd.old && looksLikeHTML(rd.text) {
		r.htmlLike.Add(1)
	}
	d := Doc{Index: rd.seq, ID: rd.id, Text: *buf, Key: key}
	s, err := sk.Sketch(&d)
	if err != nil {
		return nil, fmt.Errorf("document %q: %w", rd.id, err)
	}
	if bySketch {
		last, ok := checkers.last.lastSketch()
		if !ok {
			// Not sketched (a cascade's copy): *buf is still its
			// normalised text.
			return s, normCheck()
		}
		hit, err := checkSketch(checkers.sketch, &last)
		if err != nil {
			return nil, fmt.Errorf("document %q: %w", rd.id, err)
		}
		b.hits[k], rd.hit = hit, hit
	}
	return s, nil
}

// collector applies the batches in input order: it is the only stage
// that changes the run's counts, ids, checkpoints and finder.
type collector struct {
	r       *run
	consume func(i int, d *rawDoc, s DocSketch) error
	free    *sync.Pool
	next    int            // document index
	queue   []*batch       // in order, from the one being applied
	k       int            // position in queue[0]
	drop    int            // file+1 whose records are dropped up to its damage
	closed  bool           // no batch comes after queue
	pending map[int]*batch // arrived ahead of their turn
	seq     int            // seq of the next batch to queue
	ahead   aheadMark      // how far damageAhead has looked
}

// aheadMark is where damageAhead's last look ahead stopped, so that the
// next bad record of the same file goes on from there instead of looking
// at the same items again (a file of bad records would otherwise cost the
// square of their number within corpus.VerifyAhead bytes). It is the item
// to look at next, in batch b at index i (the damage itself, once found),
// and what the items before it said: nothing (none of them damage, nor the
// file's end), the damage, or that the file ended cleanly.
type aheadMark struct {
	b      *batch
	i      int
	file   int
	damage *corpus.RecordError
	ended  bool
}

// damageSteps counts the items damageAhead looks at (for a test: linear
// in the records, not quadratic).
var damageSteps atomic.Int64

func (c *collector) run(ctx context.Context, done <-chan *batch) error {
	c.pending = map[int]*batch{}
	for !c.closed {
		b, ok := <-done
		if !ok {
			c.closed = true
		} else {
			c.pending[b.seq] = b
			for {
				b, ok := c.pending[c.seq]
				if !ok {
					break
				}
				delete(c.pending, c.seq)
				c.seq++
				c.queue = append(c.queue, b)
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		span := startSerial()
		err := c.apply()
		c.r.serial.add("collect", span.stop())
		if err != nil {
			return err
		}
	}
	return nil
}

// apply goes through the queued batches as far as it can: to the end, or
// to a bad record whose fate depends on batches not yet here.
func (c *collector) apply() error {
	r := c.r
	for len(c.queue) > 0 {
		b := c.queue[0]
		var docs int
		var bytes int64
		for ; c.k < len(b.docs); c.k++ {
			rd := &b.docs[c.k]
			if c.drop > 0 {
				if rd.file == c.drop-1 {
					if rd.kind == itemSkip && errors.Is(rd.ev, corpus.ErrCorrupt) {
						c.drop = 0 // the damage, reported already
					}
					continue
				}
				c.drop = 0
			}
			switch rd.kind {
			case itemSkip:
				if err := r.invalid(rd.ev, rd.file); err != nil {
					return err
				}
				continue
			case itemStop:
				return rd.err
			case itemResumed:
				r.ckpt.resumed[rd.file] = true
				r.stats.Skipped += int(rd.trailer.skipped)
				if !rd.old {
					r.stats.InputBytes += rd.trailer.inputBytes
				}
				continue
			}
			if rd.bad != nil {
				damage, known := c.damageAhead(rd)
				if !known {
					if docs > 0 {
						r.in.Progress.Advance(docs, bytes)
					}
					return nil // wait for the batches ahead
				}
				e := rd.bad
				if damage != nil {
					e = corpus.DamagedAfter(e, damage)
					c.drop = rd.file + 1
				}
				if err := r.invalid(e, rd.file); err != nil {
					return err
				}
				continue
			}
			if rd.err != nil {
				return rd.err
			}
			s := b.sketches[c.k]
			if r.cascade != nil {
				var err error
				if s, err = r.cascade.resolve(r, c.next, rd, s); err != nil {
					return fmt.Errorf("document %q: %w", rd.id, err)
				}
			}
			if s == nil || isUnkeyed(s) {
				r.stats.Empty++
			}
			if !rd.old && !rd.pre {
				r.stats.InputBytes += int64(rd.size)
			}
			if !rd.pre {
				r.fileBytes[rd.file] += int64(rd.size)
			}
			if err := r.ckpt.add(rd, s); err != nil {
				return err
			}
			if err := c.consume(c.next, rd, s); err != nil {
				return err
			}
			if len(b.hits) > 0 && b.hits[c.k] != nil {
				r.indexHit(c.next, *b.hits[c.k])
			}
			c.next++
			docs++
			bytes += int64(rd.n)
		}
		r.in.Progress.Advance(docs, bytes)
		if r.keptCopy != nil {
			r.keptCopy.add(b)
		}
		clear(b.docs)
		clear(b.sketches)
		clear(b.hits)
		c.free.Put(b)
		c.queue[0] = nil
		c.queue = c.queue[1:]
		c.k = 0
	}
	return nil
}

// damageAhead returns, for the bad record rd of the current position, the
// damage the reader found in the same stream within corpus.VerifyAhead
// bytes after it (the error of the event item), nil when there is none;
// known is false while the batches that decide it have not arrived. A
// reader that validates its own records looks ahead the same way before
// reporting a bad record (corpus.DamagedAfter); here the reader has read
// on already, so the answer is in the items that follow.
func (c *collector) damageAhead(rd *rawDoc) (damage error, known bool) {
	limit := rd.offset + corpus.VerifyAhead
	// Go on from the mark when it is still ahead of rd: the items before
	// it told the earlier bad record of this file (at an offset no
	// greater than rd's) all that they tell rd.
	qi, start, ok := c.markAhead(rd.file)
	m := &c.ahead
	switch {
	case !ok:
		*m = aheadMark{file: rd.file}
		qi, start = 0, c.k+1
	case m.damage != nil:
		return m.damage.Err, true
	case m.ended:
		return nil, true
	}
	for ; qi < len(c.queue); qi, start = qi+1, 0 {
		b := c.queue[qi]
		for x := start; x < len(b.docs); x++ {
			damageSteps.Add(1)
			it := &b.docs[x]
			m.b, m.i = b, x // the item looked at: again by the next look
			if it.file != rd.file || it.kind == itemResumed {
				m.ended = true
				return nil, true // the file ended cleanly
			}
			var err error
			switch it.kind {
			case itemSkip:
				err = it.ev
			case itemStop:
				err = it.err
			}
			if it.offset > limit && it.kind != itemStop {
				return nil, true
			}
			var re *corpus.RecordError
			if errors.Is(err, corpus.ErrCorrupt) && errors.As(err, &re) && re.Offset <= limit {
				m.damage = re
				return re.Err, true
			}
			if it.kind == itemStop {
				return nil, true // a later bad record may still reach it
			}
			m.i = x + 1
		}
	}
	return nil, c.closed
}

// markAhead returns where damageAhead's mark stands in the queue (batch
// qi, item i), and ok when it is for file and ahead of the current
// position.
func (c *collector) markAhead(file int) (qi, i int, ok bool) {
	m := &c.ahead
	if m.b == nil || m.file != file {
		return 0, 0, false
	}
	for q, b := range c.queue {
		if b == m.b {
			return q, m.i, q > 0 || m.i > c.k
		}
	}
	return 0, 0, false
}

// invalid handles a bad record of input file: skipped and counted with
// Input.SkipInvalid, else handed to Options.OnInvalid, else the run's
// error.
func (r *run) invalid(e *corpus.RecordError, file int) error {
	if !r.in.SkipInvalid {
		if r.in.Options.OnInvalid != nil {
			return r.in.Options.OnInvalid(e)
		}
		return e
	}
	if errors.Is(e, corpus.ErrCorrupt) { // a damaged file, not a bad record
		r.stats.Damaged = append(r.stats.Damaged, DamagedFileOf(e))
		r.fileDamaged[file] = true
		return nil
	}
	r.stats.Skipped++
	r.fileSkipped[file]++
	if len(r.stats.SkippedErrors) < MaxSkippedErrors {
		r.stats.SkippedErrors = append(r.stats.SkippedErrors, e.Error())
	}
	return nil
}

// looksLikeHTML reports whether text starts as an HTML page does: "<!DOCTYPE
// html" or "<html", in any case, after white space and a byte order mark.
// LooksLikeHTML reports whether text starts as an HTML page (<!DOCTYPE
// html> or <html>, after blanks): the test of Stats.HTMLLike, for the
// index commands' hint.
func LooksLikeHTML(text string) bool { return looksLikeHTML(text) }

func looksLikeHTML(text string) bool {
	text = strings.TrimLeft(text, " \t\r\n\ufeff")
	for _, p := range []string{"<!doctype html", "<html"} {
		if len(text) >= len(p) && strings.EqualFold(text[:len(p)], p) {
			return true
		}
	}
	return false
}
