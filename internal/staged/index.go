package staged

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/store"
)

// IndexRef is a saved index of --against (a neardup index directory or a
// Redis URL) as the job was planned with it. The sign tasks look each new
// document up in it (dedup.SignedDoc.Index); its other fields say which
// state of the index that was, so that a task, or a resumed job, that
// finds it changed stops instead of mixing two.
type IndexRef struct {
	Location string      `json:"location"`
	Docs     int64       `json:"docs"`
	Format   int         `json:"format_version"`
	Sets     bool        `json:"sets"`
	Spec     sketch.Spec `json:"params"`
	// Files is a directory index's file names and sizes, hashed (any
	// write changes them); "" for Redis, whose identity is Docs, Spec and
	// Seq.
	Files string `json:"files,omitempty"`
	// Seq is a Redis index's last sequence number given to a document
	// (store.Stats.RedisSeq): an add raises it, so a remove followed by
	// an add, which leaves Docs as it was, changes it.
	Seq uint64 `json:"seq,omitempty"`
}

// OpenIndex opens the saved index at loc read-only, without a directory
// index's lock (store.Options.Shared): every sign task opens it at once.
func OpenIndex(loc string) (store.Index, error) {
	return store.OpenIndex(loc, store.Options{ReadOnly: true, Shared: true})
}

// DescribeIndex is ix's IndexRef, ix being open at loc.
func DescribeIndex(loc string, ix store.Index) (IndexRef, error) {
	st, err := ix.Stats()
	if err != nil {
		return IndexRef{}, fmt.Errorf("--against %s: %w", loc, err)
	}
	ref := IndexRef{Location: loc, Docs: st.Docs, Format: st.FormatVersion, Sets: st.Sets, Spec: st.Spec, Seq: st.RedisSeq}
	if !store.IsURL(loc) {
		ents, err := os.ReadDir(loc)
		if err != nil {
			return IndexRef{}, fmt.Errorf("--against %s: %w", loc, err)
		}
		h := sha256.New()
		for _, e := range ents {
			if e.Name() == "LOCK" {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				return IndexRef{}, fmt.Errorf("--against %s: %w", loc, err)
			}
			fmt.Fprintf(h, "%s %d\n", e.Name(), fi.Size())
		}
		ref.Files = hex.EncodeToString(h.Sum(nil)[:12])
	}
	return ref, nil
}

// StoreIndex lets dedup check new documents against a saved index.
type StoreIndex struct{ S store.Index }

func (x StoreIndex) NewChecker() (func(string) (string, float64, bool, error), error) {
	sk, err := x.S.NewSketcher()
	if err != nil {
		return nil, err
	}
	var ms []store.Match
	return func(text string) (string, float64, bool, error) {
		var err error
		ms, err = x.S.Query(ms[:0], sk.Sketch(text), 1)
		if err != nil || len(ms) == 0 {
			return "", 0, false, err
		}
		return ms[0].ID, ms[0].Similarity, true, nil
	}, nil
}

// Spec is the index's specification, resolved (dedup.NormalizedIndex).
func (x StoreIndex) Spec() sketch.Spec { return x.S.Spec() }

// NewNormalizedChecker is NewChecker for texts already normalised with
// the index's normalisation (dedup.NormalizedIndex): it sketches them
// without normalising them again.
func (x StoreIndex) NewNormalizedChecker() (func([]byte) (string, float64, bool, error), error) {
	sk, err := x.S.NewSketcher()
	if err != nil {
		return nil, err
	}
	var ms []store.Match
	return func(norm []byte) (string, float64, bool, error) {
		var err error
		ms, err = x.S.Query(ms[:0], sk.SketchNormalized(norm), 1)
		if err != nil || len(ms) == 0 {
			return "", 0, false, err
		}
		return ms[0].ID, ms[0].Similarity, true, nil
	}, nil
}

// NewSketchChecker is NewChecker for a MinHash sketch made with the
// index's specification, with its shingle set (dedup.SketchIndex): the
// set is left out when the index's own sketcher leaves it out (an index
// that does not keep sets), so that the query is the raw text's.
func (x StoreIndex) NewSketchChecker() (func(*sketch.Sketch) (string, float64, bool, error), error) {
	sk, err := x.S.NewSketcher()
	if err != nil {
		return nil, err
	}
	sets := sk.Sets()
	var ms []store.Match
	return func(s *sketch.Sketch) (string, float64, bool, error) {
		q := *s
		if !sets {
			q.Set = nil
		}
		var err error
		ms, err = x.S.Query(ms[:0], q, 1)
		if err != nil || len(ms) == 0 {
			return "", 0, false, err
		}
		return ms[0].ID, ms[0].Similarity, true, nil
	}, nil
}

// MemoryBytes is what the open index holds in memory: its postings, block
// cache and memtables (for the memory plan).
func (x StoreIndex) MemoryBytes() int64 {
	st, err := x.S.Stats()
	if err != nil {
		return 0
	}
	return int64(st.PostingsBytes) + st.CacheBytes + int64(st.MemTableBytes)
}

// openIndexes opens the plan's indexes, each as it was planned; close
// closes them.
func (j *Job) openIndexes() (ixs []dedup.Index, close func(), err error) {
	var open []io.Closer
	close = func() {
		for _, c := range open {
			c.Close()
		}
	}
	for _, ref := range j.Plan.Indexes {
		ix, err := OpenIndex(ref.Location)
		if err != nil {
			close()
			return nil, nil, fmt.Errorf("--against %s: %w", ref.Location, err)
		}
		open = append(open, ix)
		now, err := DescribeIndex(ref.Location, ix)
		if err != nil {
			close()
			return nil, nil, err
		}
		if !sameIndex(now, ref) {
			close()
			return nil, nil, fmt.Errorf("--against %s: the index changed since the job was planned (%s): start again with an empty --work", ref.Location, indexChange(ref, now))
		}
		ixs = append(ixs, StoreIndex{ix})
	}
	return ixs, close, nil
}

// appendHit appends shard document doc's hit in the form of signHits:
// its number in the shard, the indexed duplicate's id, its own id and the
// similarity's bits.
func appendHit(dst []byte, doc uint64, indexID, own string, sim float64) []byte {
	dst = appendUvarint(dst, doc)
	dst = appendUvarint(dst, uint64(len(indexID)))
	dst = append(dst, indexID...)
	dst = appendUvarint(dst, uint64(len(own)))
	dst = append(dst, own...)
	return appendUvarint(dst, math.Float64bits(sim))
}

// hitRun reads a shard's hits (signHits) in document order.
type hitRun struct {
	r       *reader
	ok      bool
	doc     uint64
	id, own []byte // the indexed duplicate's id, the document's
	sim     float64
}

func (h *hitRun) next() error {
	h.ok = false
	if h.r.atEOF() {
		return nil
	}
	var err error
	if h.doc, err = h.r.uvarint(); err != nil {
		return err
	}
	if h.id, err = h.r.bytes(h.id); err != nil {
		return err
	}
	if h.own, err = h.r.bytes(h.own); err != nil {
		return err
	}
	b, err := h.r.uvarint()
	if err != nil {
		return err
	}
	h.sim, h.ok = math.Float64frombits(b), true
	return nil
}

// openHits opens shard s's hits; nil without an index.
func (j *Job) openHits(ctx context.Context, s int) (*hitRun, error) {
	if len(j.Plan.Indexes) == 0 {
		return nil, nil
	}
	r, err := j.open(ctx, signHits(s))
	if err != nil {
		return nil, err
	}
	h := &hitRun{r: r}
	if err := h.next(); err != nil {
		r.Close()
		return nil, err
	}
	return h, nil
}

// allHits is every shard's hits by document of the whole input, for a
// join task (dedup.JoinOptions.Hits): nil without an index.
func (j *Job) allHits(ctx context.Context, off []int64) (map[int64]string, error) {
	if len(j.Plan.Indexes) == 0 {
		return nil, nil
	}
	hits := map[int64]string{}
	for s := range j.Plan.Tasks {
		h, err := j.openHits(ctx, s)
		if err != nil {
			return nil, err
		}
		for h.ok {
			hits[off[s]+int64(h.doc)] = string(h.id)
			if err := h.next(); err != nil {
				h.r.Close()
				return nil, err
			}
		}
		h.r.Close()
	}
	return hits, nil
}

// sameIndex reports whether a and b are one state of one index.
func sameIndex(a, b IndexRef) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// indexChange says how index state now differs from the planned one.
func indexChange(then, now IndexRef) string {
	switch {
	case then.Docs != now.Docs:
		return fmt.Sprintf("%d documents then, %d now", then.Docs, now.Docs)
	case then.Seq != now.Seq:
		return fmt.Sprintf("%d documents then and now, but documents were added since: its last sequence number was %d, is %d", now.Docs, then.Seq, now.Seq)
	}
	return fmt.Sprintf("%d documents then and now, but its files or parameters changed", now.Docs)
}
