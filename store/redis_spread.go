package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/neardup/neardup/sketch"
)

// The spread layout of a Redis index (docs/format/redis.md, "Spread over
// the masters"): every id, record and posting bucket carries its own hash
// tag, so that Redis Cluster spreads one index over all its masters, and
// only meta, seq and docs share the index's tag. No script can span the
// buckets: check-and-add follows the protocol below, made of single-key
// scripts pipelined to the masters.
//
// A document gets a number n (INCRBY seq), writes its record in state
// pending, then claims its id and appends n to its postings (each script
// returning the posting as it was: the candidates), reads the candidates'
// records, resolves every pending duplicate (waiting for a lower-numbered
// one, aborting a higher-numbered one) and commits by a compare-and-set of
// its own record (pending -> committed). Only committed records are in the
// index.

const (
	layoutOne    = "one"
	layoutSpread = "spread"

	// spreadFormatVersion is the format of a spread index: a build that
	// reads only the one-slot format (1) refuses it with ErrVersion.
	spreadFormatVersion = 2

	// defaultPendingTimeout is how long a writer waits for a pending
	// lower-numbered duplicate before it aborts it (its writer presumed
	// dead). Aborting a live writer is safe (its commit fails and it starts
	// again with a new number); the timeout only bounds the wait.
	defaultPendingTimeout = 2 * time.Second

	// spreadAttempts bounds the attempts of one document (each after its
	// commit failed because a lower-numbered duplicate aborted it).
	spreadAttempts = 50
)

// The state byte that starts a record's value in the spread layout. An
// aborted or removed document has no record.
const (
	stPending    = 'P' // check-and-add in progress: may abort
	stPendingAdd = 'Q' // add without a check in progress: commits unless its id is taken
	stCommitted  = 'C' // in the index
)

// errSpreadStopped is the error of a write stopped by the test hook
// spreadStop.
var errSpreadStopped = errors.New("store: stopped with the documents pending (test hook)")

// defaultLayout is the layout of a new index when the URL names none, on
// a single server and on a cluster alike: on the shared cores of our
// measurement the spread layout costs more CPU per request than it gains
// (docs/bench/store.md).
const defaultLayout = layoutOne

// metaLayout reads the layout of an index from its meta hash (absent: the
// one-slot layout of format 1) and checks it against the URL's.
func metaLayout(u *redisURL, meta map[string]string, ver int) (string, error) {
	layout := meta["layout"]
	if layout == "" {
		layout = layoutOne
	}
	if layout != layoutOne && layout != layoutSpread || layout == layoutSpread && ver < spreadFormatVersion {
		return "", fmt.Errorf("%w: %s: layout %q in format %d", ErrCorrupt, u.loc, layout, ver)
	}
	if u.layout != "" && u.layout != layout {
		return "", fmt.Errorf("%w: index URL %s asks for layout %s, the index has layout %s", ErrParams, u.loc, u.layout, layout)
	}
	return layout, nil
}

// bucketKey names a bucket of kind (":i:", ":r:" or ":p:"): under the
// index's tag in the one-slot layout ({NAME}:p:HEX), under its own in the
// spread layout ({NAME:p:HEX}).
func (r *Redis) bucketKey(kind, n string) string {
	if r.spread {
		return r.tag[:len(r.tag)-1] + kind + n + "}"
	}
	return r.tag + kind + n
}

// committedRecord strips the state byte of a spread record; a record not
// committed is errMissing.
func committedRecord(v string) (string, error) {
	if v == "" || v[0] != stCommitted {
		return "", errMissing
	}
	return v[1:], nil
}

// Single-key scripts of the spread layout.
var (
	// appendPostingScript appends ARGV[2] (a u64be number) to the field
	// ARGV[1] of the posting bucket KEYS[1] and replies the value before.
	appendPostingScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], (v or '') .. ARGV[2])
return v`)

	// removePostingScript removes the numbers of ARGV[2] (u64be each) from
	// the field ARGV[1] of KEYS[1], deleting an emptied field.
	removePostingScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
local drop = {}
for j = 1, #ARGV[2], 8 do drop[string.sub(ARGV[2], j, j + 7)] = true end
local kept = {}
for j = 1, #v, 8 do
  local e = string.sub(v, j, j + 7)
  if not drop[e] then kept[#kept+1] = e end
end
if #kept == 0 then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], table.concat(kept)) end
return 1`)

	// claimIDScript maps the id ARGV[1] to ARGV[2] in the id bucket KEYS[1]
	// when it is free, already ARGV[2], or ARGV[3] (a holder found dead);
	// it replies '' then, else the number holding it.
	claimIDScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v or v == ARGV[2] or v == ARGV[3] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  return ''
end
return v`)

	// releaseIDScript deletes the id ARGV[1] if it maps to ARGV[2].
	releaseIDScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('HDEL', KEYS[1], ARGV[1]) return 1 end
return 0`)

	// casRecordScript is the compare-and-set of a record's state: when the
	// record ARGV[1] of KEYS[1] is in one of the states of ARGV[2], it
	// becomes committed (ARGV[3] 'C') or is deleted (ARGV[3] 'D'), and the
	// reply is 'ok'; else the reply is its state ('' when absent).
	casRecordScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return '' end
local s = string.sub(v, 1, 1)
if not string.find(ARGV[2], s, 1, true) then return s end
if ARGV[3] == 'D' then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], ARGV[3] .. string.sub(v, 2)) end
return 'ok'`)
)

// scriptCall is one single-key script call of a pipeline.
type scriptCall struct {
	s    *redis.Script
	key  string
	args []any
	cmd  *redis.Cmd
}

// pipeline collects the commands and script calls of one round trip to
// the masters.
type pipeline struct {
	r     *Redis
	pipe  redis.Pipeliner
	calls []*scriptCall
}

func (r *Redis) newPipeline() *pipeline { return &pipeline{r: r, pipe: r.c.Pipeline()} }

// script queues a call of s on key and returns it (its cmd is set by exec).
func (p *pipeline) script(s *redis.Script, key string, args ...any) *scriptCall {
	c := &scriptCall{s: s, key: key, args: args}
	c.cmd = s.EvalSha(context.Background(), p.pipe, []string{key}, args...)
	p.calls = append(p.calls, c)
	return c
}

// exec runs the round trip. A script call refused with NOSCRIPT (a server
// restarted or never sent the script) was not run: it is sent again with
// its source. The first other error, but redis.Nil, is returned.
func (p *pipeline) exec(ctx context.Context) error {
	if p.pipe.Len() == 0 {
		return nil
	}
	cmds, _ := p.pipe.Exec(ctx)
	var again []*scriptCall
	for _, c := range p.calls {
		if err := c.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, c)
		}
	}
	if len(again) > 0 {
		pipe := p.r.c.Pipeline()
		for _, c := range again {
			c.cmd = c.s.Eval(ctx, pipe, []string{c.key}, c.args...)
		}
		pipe.Exec(ctx)
	}
	for _, c := range p.calls {
		if err := c.cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return p.r.redisErr(err)
		}
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) && !redis.HasErrorPrefix(err, "NOSCRIPT") {
			return p.r.redisErr(err)
		}
	}
	return nil
}

// flush runs the round trip now and empties the pipeline for more.
func (p *pipeline) flush(ctx context.Context) error {
	err := p.exec(ctx)
	p.pipe, p.calls = p.r.c.Pipeline(), nil
	return err
}

// str is the string reply of a script call ("" for nil).
func (c *scriptCall) str() string {
	v, _ := c.cmd.Result()
	s, _ := v.(string)
	return s
}

// sdoc is a document of a spread write in its current attempt.
type sdoc struct {
	i      int    // in the caller's docs
	n      uint64 // its number in this attempt
	n8     string
	rec    []byte     // its record, without the state byte
	keys   []uint64   // band or table keys
	fields []string   // posting field of each key
	bucket []string   // posting bucket of each key
	seen   [][]uint64 // per key, the numbers found in the posting before n
	appl   []*scriptCall
	claim  *scriptCall
	holder uint64 // the number holding its id when the claim failed
	prior  []int  // earlier documents of the batch sharing a key with it (positions in ds)
	dups   []int  // those it duplicates
	commit bool   // decided: commit
	casCmd *scriptCall
}

// foreign is what a writer knows of another document's record.
type foreign struct {
	rec   string // without the state byte
	state byte   // 0: absent (aborted or removed)
	since time.Time
}

// spreadWrite is RedisWrite.Commit on the spread layout: the documents
// todo of docs (checked against the index and the earlier documents of
// docs when check is set) through the protocol of docs/format/redis.md,
// their results set in results. own gives a document's sketch, decoded
// from its record, for its check.
func (r *Redis) spreadWrite(docs []pendingDoc, results []Result, todo []int, check bool, limit int, own func(*pendingDoc) (*sketch.Sketch, error)) ([]Result, error) {
	sc, err := r.acquire()
	if err != nil {
		return nil, err
	}
	defer r.release(sc)
	for attempt := 0; len(todo) > 0; attempt++ {
		if attempt == spreadAttempts {
			return nil, fmt.Errorf("store: %s: document %q aborted by concurrent writers %d times", r.loc, docs[todo[0]].id, spreadAttempts)
		}
		if todo, err = r.spreadAttempt(sc, docs, results, todo, check, limit, own); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// spreadAttempt runs one attempt of the documents todo and returns those
// to try again (aborted by a concurrent lower-numbered duplicate).
func (r *Redis) spreadAttempt(sc *scratch, docs []pendingDoc, results []Result, todo []int, check bool, limit int, own func(*pendingDoc) (*sketch.Sketch, error)) ([]int, error) {
	ctx := context.Background()
	// 1. Numbers.
	last, err := r.c.IncrBy(ctx, r.seqKey(), int64(len(todo))).Uint64()
	if err != nil {
		return nil, r.redisErr(err)
	}
	state := string(rune(stPendingAdd))
	if check {
		state = string(rune(stPending))
	}
	ds := make([]*sdoc, len(todo))
	mine := map[uint64]int{} // number -> position in ds
	var field []byte
	// 2. Pending records: written before any posting names them.
	p := r.newPipeline()
	for k, i := range todo {
		d := &docs[i]
		s := &sdoc{i: i, n: last - uint64(len(todo)-1-k)}
		s.n8 = be8(s.n)
		s.rec, s.keys = d.rec, d.keys
		for t, key := range s.keys {
			field = postingField(field[:0], t, key)
			s.fields = append(s.fields, string(field))
			s.bucket = append(s.bucket, r.postingBucket(t, key))
		}
		ds[k], mine[s.n] = s, k
		p.pipe.HSet(ctx, r.recordBucket(s.n), s.n8, append([]byte(state), s.rec...))
	}
	if err := p.exec(ctx); err != nil {
		return nil, err
	}
	// 3. The id claims and the postings, each script replying what was
	// there before: the candidates.
	p = r.newPipeline()
	for _, s := range ds {
		s.claim = p.script(claimIDScript, r.idBucket(docs[s.i].id), docs[s.i].id, s.n8, "")
		for k := range s.keys {
			s.appl = append(s.appl, p.script(appendPostingScript, s.bucket[k], s.fields[k], s.n8))
		}
	}
	if err := p.exec(ctx); err != nil {
		return nil, err
	}
	if r.spreadStop {
		return nil, errSpreadStopped
	}
	others := map[uint64]*foreign{}
	for _, s := range ds {
		if h := s.claim.str(); h != "" {
			if len(h) != 8 {
				return nil, fmt.Errorf("%w: %s: id %q maps to %d bytes", ErrCorrupt, r.loc, docs[s.i].id, len(h))
			}
			s.holder = binary.BigEndian.Uint64([]byte(h))
			if _, ok := mine[s.holder]; !ok {
				others[s.holder] = nil
			}
		}
		s.seen = make([][]uint64, len(s.keys))
		for k, c := range s.appl {
			if s.seen[k], err = decodeSeqs(nil, c.str()); err != nil {
				return nil, err
			}
			if check {
				for _, m := range s.seen[k] {
					if _, ok := mine[m]; !ok {
						others[m] = nil
					}
				}
			}
		}
	}
	if check && len(ds) > 1 {
		shared := map[pendingKey][]int{}
		for k, s := range ds {
			for t, key := range s.keys {
				pk := pendingKey{t, key}
				s.prior = append(s.prior, shared[pk]...)
				shared[pk] = append(shared[pk], k)
			}
			slices.Sort(s.prior)
			s.prior = slices.Compact(s.prior)
		}
	}
	// 4. The records of the other documents seen.
	if err := r.readForeign(ctx, others); err != nil {
		return nil, err
	}
	// 5. Decide, in order; then commit or abort, in one round trip.
	p = r.newPipeline()
	var retry []int
	commits := 0
	for k, s := range ds {
		res := &results[s.i]
		ok, err := r.spreadDecide(ctx, sc, p, docs, ds, mine, k, others, check, limit, own, res)
		if err != nil {
			return nil, err
		}
		if !ok {
			r.queueAbort(p, docs[s.i].id, s)
			if res.Err == nil && res.Matches == nil {
				retry = append(retry, s.i)
			}
			continue
		}
		s.commit = true
		commits++
		s.casCmd = p.script(casRecordScript, r.recordBucket(s.n), s.n8, state, "C")
	}
	docsCmd := p.pipe.IncrBy(ctx, r.docsKey(), int64(commits))
	if commits == 0 {
		docsCmd = nil
	}
	if err := p.exec(ctx); err != nil {
		return nil, err
	}
	if docsCmd != nil {
		if err := docsCmd.Err(); err != nil {
			return nil, r.redisErr(err)
		}
	}
	// 6. A commit that failed (a lower-numbered duplicate aborted the
	// record): that document, and the later ones answered as its
	// duplicates only, start again.
	p = r.newPipeline()
	failed := map[int]bool{}
	for k, s := range ds {
		res := &results[s.i]
		if s.commit {
			if s.casCmd.str() == "ok" {
				res.Added, res.Matches = true, []Match{}
				continue
			}
			failed[k] = true
			s.commit = false
			*res = Result{}
			r.queueAbort(p, docs[s.i].id, s)
			p.pipe.Decr(ctx, r.docsKey())
			retry = append(retry, s.i)
			continue
		}
		if len(s.dups) == 0 || !slices.ContainsFunc(s.dups, func(j int) bool { return failed[j] }) {
			continue
		}
		kept := res.Matches[:0]
		for _, m := range res.Matches {
			if !slices.ContainsFunc(s.dups, func(j int) bool { return failed[j] && docs[ds[j].i].id == m.ID }) {
				kept = append(kept, m)
			}
		}
		if len(kept) == 0 {
			*res = Result{}
			retry = append(retry, s.i)
			continue
		}
		res.Matches = kept
	}
	if err := p.exec(ctx); err != nil {
		return nil, err
	}
	slices.Sort(retry) // keep the batch's order
	return retry, nil
}

// readForeign reads, in one round trip, the records of the numbers of m.
func (r *Redis) readForeign(ctx context.Context, m map[uint64]*foreign) error {
	if len(m) == 0 {
		return nil
	}
	pipe := r.c.Pipeline()
	cmds := make(map[uint64]*redis.StringCmd, len(m))
	for n := range m {
		cmds[n] = pipe.HGet(ctx, r.recordBucket(n), be8(n))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return r.redisErr(err)
	}
	now := time.Now()
	for n, c := range cmds {
		v, err := c.Result()
		f := &foreign{since: now}
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return r.redisErr(err)
		case v == "":
			return fmt.Errorf("%w: %s: empty record %d", ErrCorrupt, r.loc, n)
		default:
			f.state, f.rec = v[0], v[1:]
		}
		m[n] = f
	}
	return nil
}

// spreadDecide decides document ds[k]: true to commit; false when it is a
// duplicate (res.Matches set), its id is taken (res.Err) or it must start
// again (neither). It waits for, or aborts, the pending documents that
// stand in its way.
func (r *Redis) spreadDecide(ctx context.Context, sc *scratch, p *pipeline, docs []pendingDoc, ds []*sdoc, mine map[uint64]int, k int, others map[uint64]*foreign, check bool, limit int, own func(*pendingDoc) (*sketch.Sketch, error), res *Result) (bool, error) {
	s := ds[k]
	d := &docs[s.i]
	if check && len(d.keys) > 0 { // not empty
		sk, err := own(d)
		if err != nil {
			return false, err
		}
		if dup, err := r.spreadCheck(ctx, sc, p, sk, ds, mine, k, others, limit, res); dup || err != nil {
			return false, err
		}
	}
	// The id: a committed holder makes it a duplicate id; a pending one is
	// waited for (lower number) or aborted (higher); a dead one is taken
	// over.
	for tries := 0; s.holder != 0; tries++ {
		if tries == 10 {
			return false, nil // the id keeps changing hands: start again
		}
		if j, ok := mine[s.holder]; ok {
			// An earlier document of the batch with the same id.
			if j < k && ds[j].commit {
				res.Err = fmt.Errorf("%w: %q", ErrDuplicateID, d.id)
			}
			return false, nil // else start again, once it has let the id go
		}
		f, err := r.resolve(ctx, p, s.holder, others[s.holder], s.n)
		if err != nil {
			return false, err
		}
		others[s.holder] = f
		if f.state == stCommitted {
			res.Err = fmt.Errorf("%w: %q", ErrDuplicateID, d.id)
			return false, nil
		}
		h, err := r.claimID(ctx, d.id, s.n8, be8(s.holder))
		if err != nil {
			return false, err
		}
		s.holder = h
		if h != 0 {
			if others[h], err = r.readOne(ctx, h); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// spreadCheck verifies the candidates of ds[k] (of sketch sk) and tells
// whether it is a duplicate (res.Matches set): of a committed document, of
// an earlier document of the batch to be committed, or of a pending one
// once it has committed.
func (r *Redis) spreadCheck(ctx context.Context, sc *scratch, p *pipeline, sk *sketch.Sketch, ds []*sdoc, mine map[uint64]int, k int, others map[uint64]*foreign, limit int, res *Result) (bool, error) {
	s := ds[k]
	var ms []Match
	sc.keys = append(sc.keys[:0], s.keys...)
	var cands []uint64
	for _, seen := range s.seen {
		cands = append(cands, seen...)
	}
	slices.Sort(cands)
	cands = slices.Compact(cands)
	var dead []uint64
	// The earlier documents of the batch sharing a key, already decided
	// (whether their postings came before this one's or not: a script
	// resent after NOSCRIPT may have reordered them).
	for _, j := range s.prior {
		if !ds[j].commit {
			continue
		}
		n := len(ms)
		var err error
		if ms, err = verifyRecord(r, ms, sc, sk, ds[j].rec, ds[j].n); err != nil {
			return false, err
		}
		if len(ms) > n {
			s.dups = append(s.dups, j)
		}
	}
	for _, m := range cands {
		if _, ok := mine[m]; ok {
			continue // a document of the batch: above
		}
		f := others[m]
		if f.state == 0 {
			dead = append(dead, m)
			continue
		}
		n := len(ms)
		var err error
		if ms, err = verifyRecord(r, ms, sc, sk, f.rec, m); err != nil {
			return false, err
		}
		if len(ms) == n {
			continue // not a duplicate
		}
		if f.state == stPendingAdd && m > s.n {
			ms = ms[:n] // added after this one without a check
			continue
		}
		if f, err = r.resolve(ctx, p, m, f, s.n); err != nil {
			return false, err
		}
		others[m] = f
		if f.state != stCommitted {
			ms = ms[:n] // aborted
		}
	}
	// Postings of documents without a record (aborted or removed, whose
	// writer died before removing them) are removed on the way.
	if len(dead) > 0 {
		for kk, seen := range s.seen {
			var drop []byte
			for _, m := range seen {
				if _, ok := slices.BinarySearch(dead, m); ok {
					drop = binary.BigEndian.AppendUint64(drop, m)
				}
			}
			if len(drop) > 0 {
				p.script(removePostingScript, s.bucket[kk], s.fields[kk], string(drop))
			}
		}
	}
	if len(ms) > 0 {
		res.Matches = sortLimit(ms, 0, limit)
		return true, nil
	}
	return false, nil
}

// verifyRecord appends to dst the document of record rec (number m) when
// it duplicates sk (sc.keys: the keys of sk).
func verifyRecord[R string | []byte](r *Redis, dst []Match, sc *scratch, sk *sketch.Sketch, rec R, m uint64) ([]Match, error) {
	sc.recBuf = append(sc.recBuf[:0], rec...)
	if err := r.readRecord(&sc.rec, sc.recBuf); err != nil {
		return dst, fmt.Errorf("%s: record %d: %w", r.loc, m, err)
	}
	return r.verify(dst, sc, sk, false)
}

// resolve brings the pending document m (as last read: f; nil: read it)
// to a final state for the writer numbered n: a lower-numbered one is
// waited for until it commits or aborts, and aborted after the pending
// timeout; a higher-numbered one is aborted at once. The returned state is
// committed or 0 (aborted). Before it waits, the commits already decided
// in p are sent: a document waiting for m may be what m waits for.
func (r *Redis) resolve(ctx context.Context, p *pipeline, m uint64, f *foreign, n uint64) (*foreign, error) {
	var err error
	if f == nil {
		if f, err = r.readOne(ctx, m); err != nil {
			return nil, err
		}
	}
	wait := time.Millisecond
	for f.state == stPending || f.state == stPendingAdd {
		if m > n || time.Since(f.since) >= r.pendingTimeout {
			// Abort it: a compare-and-set on its record, then its postings
			// and id claim are removed (its writer, if alive, finds its
			// commit refused and removes them too).
			got, err := casRecordScript.Run(ctx, r.c, []string{r.recordBucket(m)}, be8(m), "PQ", "D").Text()
			if err != nil {
				return nil, r.redisErr(err)
			}
			if got == "ok" {
				if err := r.cleanup(ctx, m, f.rec); err != nil {
					return nil, err
				}
				return &foreign{}, nil
			}
		} else {
			if len(p.calls) > 0 {
				if err := p.flush(ctx); err != nil {
					return nil, err
				}
			}
			time.Sleep(wait)
			wait = min(2*wait, 20*time.Millisecond)
		}
		g, err := r.readOne(ctx, m)
		if err != nil {
			return nil, err
		}
		if g.state == f.state {
			g.since = f.since
		}
		f = g
	}
	return f, nil
}

// readOne reads the record of m.
func (r *Redis) readOne(ctx context.Context, m uint64) (*foreign, error) {
	one := map[uint64]*foreign{m: nil}
	if err := r.readForeign(ctx, one); err != nil {
		return nil, err
	}
	return one[m], nil
}

// claimID claims id for n8, taking it over from old8 (a dead holder); it
// returns the number holding it instead (0: claimed).
func (r *Redis) claimID(ctx context.Context, id, n8, old8 string) (uint64, error) {
	h, err := claimIDScript.Run(ctx, r.c, []string{r.idBucket(id)}, id, n8, old8).Text()
	if err != nil {
		return 0, r.redisErr(err)
	}
	if h == "" {
		return 0, nil
	}
	if len(h) != 8 {
		return 0, fmt.Errorf("%w: %s: id %q maps to %d bytes", ErrCorrupt, r.loc, id, len(h))
	}
	return binary.BigEndian.Uint64([]byte(h)), nil
}

// cleanup removes the id claim and the postings of the aborted document m
// whose record (without its state) was rec.
func (r *Redis) cleanup(ctx context.Context, m uint64, rec string) error {
	var x record
	if err := r.readRecord(&x, []byte(rec)); err != nil {
		return fmt.Errorf("%s: record %d: %w", r.loc, m, err)
	}
	s := &sdoc{n: m, n8: be8(m)}
	if x.flags&flagEmpty == 0 {
		s.keys = r.appendKeys(nil, &sketch.Sketch{Sig: x.sig, FP: x.fp})
	}
	var field []byte
	for t, key := range s.keys {
		field = postingField(field[:0], t, key)
		s.fields = append(s.fields, string(field))
		s.bucket = append(s.bucket, r.postingBucket(t, key))
	}
	p := r.newPipeline()
	r.queueAbort(p, string(x.id), s)
	return p.exec(ctx)
}

// queueAbort queues the removal of document s (id): its record if still
// pending, its id claim and its postings.
func (r *Redis) queueAbort(p *pipeline, id string, s *sdoc) {
	p.script(casRecordScript, r.recordBucket(s.n), s.n8, "PQ", "D")
	p.script(releaseIDScript, r.idBucket(id), id, s.n8)
	for k := range s.keys {
		p.script(removePostingScript, s.bucket[k], s.fields[k], s.n8)
	}
}

// spreadRemove is Remove on the spread layout: the record is deleted by a
// compare-and-set from committed (one remover wins), then the id and the
// postings. A crash in between leaves postings without a record, which
// readers skip and a later writer sharing them removes.
func (r *Redis) spreadRemove(id string) error {
	sc, err := r.acquire()
	if err != nil {
		return err
	}
	defer r.release(sc)
	ctx := context.Background()
	for range 100 {
		n, err := r.get(ctx, sc, id)
		if err == errMissing {
			return fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		got, err := casRecordScript.Run(ctx, r.c, []string{r.recordBucket(n)}, be8(n), "C", "D").Text()
		if err != nil {
			return r.redisErr(err)
		}
		if got != "ok" {
			continue // removed or replaced meanwhile: read again
		}
		sk, err := recordSketch(&sc.rec)
		if err != nil {
			return fmt.Errorf("%s: record of %q: %w", r.loc, id, err)
		}
		rec := r.codec.appendRecord(nil, id, &sk, sc.rec.hasSet, sc.rec.flags&flagBare != 0)
		if err := r.cleanup(ctx, n, string(rec)); err != nil {
			return err
		}
		return r.redisErr(r.c.Decr(ctx, r.docsKey()).Err())
	}
	return fmt.Errorf("store: %s: remove %q: the id kept changing", r.loc, id)
}
