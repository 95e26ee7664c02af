package store

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/sketch"
)

// FormatVersion is the newest version of the on-disk layout written by
// this package (docs/format/store.md). Open refuses an index of a newer
// version with ErrVersion. Version 4 is an index that keeps its documents'
// shingle sets (formatSets); version 5 (formatBare) one whose records may
// also leave out a signature that their set gives (flagBare); an
// estimate-only index (Options.EstimateOnly, and every index made before)
// stays at version 3, which builds that do not know sets still open.
const FormatVersion = 5

// Format versions: formatBare, records may be bare and new OPH documents
// are; formatSets, records may carry shingle sets and new documents do;
// formatNoSets, the version an estimate-only index keeps.
const (
	formatBare   = 5
	formatSets   = 4
	formatNoSets = 3
)

// MaxIDBytes is the longest document id accepted.
const MaxIDBytes = 1024

// Key prefixes (docs/format/store.md).
const (
	prefixMeta    = 0x00
	prefixID      = 'i' // 'i' id -> seq (8 bytes, big endian)
	prefixRecord  = 'r' // 'r' seq -> record
	prefixPosting = 'p' // version 1 only: 'p' table(2) key(8) seq(8) -> posting value
)

var (
	keyVersion  = []byte("\x00version")
	keyParams   = []byte("\x00params")
	keyCounters = []byte("\x00counters")
	// keyExtraction holds the text.MainVersion of an index of main
	// content (extraction.go); absent in other indexes.
	keyExtraction = []byte("\x00extraction")
)

// Record flags.
const (
	flagEmpty = 1 // the document had no shingles: it has no postings
	flagSet   = 2 // the record ends with the document's shingle set (setcode.go)
	// flagBare (with flagSet): the record has no signature; it is the
	// signature of the set (minhash.Hasher.Sign), which only the OPH
	// family computes as fast as a record is decoded (keyer.readRecord).
	flagBare = 4
)

func idKey(dst []byte, id string) []byte {
	dst = append(dst, prefixID)
	return append(dst, id...)
}

func recordKey(dst []byte, seq uint64) []byte {
	dst = append(dst, prefixRecord)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// postingKeyLen is the length of a posting key of format version 1 ('p',
// u16be table, u64be key, u64be seq), which version 2 no longer writes;
// the comparer still splits them, since its name and behaviour are stored
// by pebble with the index.
const postingKeyLen = 1 + 2 + 8 + 8

// recordCodec encodes and decodes the records of an index: the sketch in
// a record is a MinHash signature of numPerm slots or a SimHash
// fingerprint of bits bits, as the index's Spec says.
type recordCodec struct {
	minHash bool
	numPerm int
	bits    int
}

// codecOf returns the record codec of a resolved MinHash or SimHash Spec.
func codecOf(sp *sketch.Spec) recordCodec {
	if sp.Method == sketch.MinHash {
		return recordCodec{minHash: true, numPerm: sp.MinHash.NumPerm}
	}
	return recordCodec{bits: sp.SimHash.Bits}
}

// sketchBytes is the size of an encoded sketch.
func (c *recordCodec) sketchBytes() int {
	if c.minHash {
		return 4 * c.numPerm
	}
	if c.bits > 64 {
		return 16
	}
	return 8
}

// appendSketch appends the sketch part of a record: the signature's
// slots (MinHash) or the fingerprint (SimHash). Every record has one of
// the index's size, so an Empty document, which has neither (package
// sketch's rule), gets an all-zero one, which nothing reads.
func (c *recordCodec) appendSketch(dst []byte, sk *sketch.Sketch) []byte {
	if sk.Empty {
		return append(dst, make([]byte, c.sketchBytes())...)
	}
	if c.minHash {
		for _, v := range sk.Sig {
			dst = binary.LittleEndian.AppendUint32(dst, v)
		}
		return dst
	}
	return appendFP(dst, sk.FP, c.bits)
}

func appendFP(dst []byte, fp simhash.Fingerprint, nbits int) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, fp.Lo)
	if nbits > 64 {
		dst = binary.LittleEndian.AppendUint64(dst, fp.Hi)
	}
	return dst
}

// decodeFP decodes the fingerprint of a posting value or record, checking
// that no bit above nbits is set.
func decodeFP(src []byte, nbits int) (simhash.Fingerprint, error) {
	want := 8
	if nbits > 64 {
		want = 16
	}
	if len(src) != want {
		return simhash.Fingerprint{}, fmt.Errorf("%w: fingerprint of %d bytes, want %d", ErrCorrupt, len(src), want)
	}
	fp := simhash.Fingerprint{Lo: binary.LittleEndian.Uint64(src)}
	if want == 16 {
		fp.Hi = binary.LittleEndian.Uint64(src[8:])
	}
	lo, hi := sketch.FingerprintMask(nbits)
	if fp.Lo&^lo != 0 || fp.Hi&^hi != 0 {
		return simhash.Fingerprint{}, fmt.Errorf("%w: fingerprint has bits above %d", ErrCorrupt, nbits)
	}
	return fp, nil
}

// record is a decoded document record.
type record struct {
	flags byte
	id    []byte // aliases the decoded value
	sig   minhash.Signature
	fp    simhash.Fingerprint
	// setCode is the coded shingle set (flagSet), aliasing the decoded
	// value; set is it decoded (see keyer.recordSet), or the set of a
	// document of the batch being written.
	setCode []byte
	set     []uint64
	hasSet  bool
}

// appendRecord encodes a document record: flags (1 byte), uvarint id
// length, id, sketch, and with sets (an index that keeps them, a MinHash
// document with shingles and a set) the coded shingle set. bare (with a
// set) leaves the sketch out: the caller has checked that the set gives
// it (keyer.appendRecord).
func (c *recordCodec) appendRecord(dst []byte, id string, sk *sketch.Sketch, sets, bare bool) []byte {
	var flags byte
	if sk.Empty {
		flags |= flagEmpty
	}
	withSet := sets && c.minHash && !sk.Empty && len(sk.Set) > 0
	if withSet {
		flags |= flagSet
		if bare {
			flags |= flagBare
		}
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(len(id)))
	dst = append(dst, id...)
	if flags&flagBare == 0 {
		dst = c.appendSketch(dst, sk)
	}
	if withSet {
		dst = appendSet(dst, sk.Set)
	}
	return dst
}

// decodeRecord decodes a record into r, reusing r.sig. r.id and r.setCode
// alias src; the set itself is decoded on demand (keyer.recordSet). The
// signature of a bare record is left empty: keyer.readRecord computes it.
func (c *recordCodec) decodeRecord(r *record, src []byte) error {
	if len(src) < 1 {
		return fmt.Errorf("%w: empty record", ErrCorrupt)
	}
	r.flags = src[0]
	r.setCode, r.set, r.hasSet = nil, r.set[:0], false
	if r.flags&^(flagEmpty|flagSet|flagBare) != 0 || r.flags&flagEmpty != 0 && r.flags&flagSet != 0 ||
		r.flags&flagSet != 0 && !c.minHash || r.flags&flagBare != 0 && r.flags&flagSet == 0 {
		return fmt.Errorf("%w: record flags %#x", ErrCorrupt, r.flags)
	}
	n, w := binary.Uvarint(src[1:])
	if w <= 0 || n == 0 || n > MaxIDBytes || n > uint64(len(src)-1-w) {
		return fmt.Errorf("%w: record id length", ErrCorrupt)
	}
	rest := src[1+w:]
	r.id = rest[:n]
	rest = rest[n:]
	if r.flags&flagBare != 0 {
		if len(rest) == 0 {
			return fmt.Errorf("%w: record flags a shingle set but has none", ErrCorrupt)
		}
		r.setCode, r.hasSet, r.sig = rest, true, r.sig[:0]
		return nil
	}
	if r.flags&flagSet != 0 {
		if len(rest) <= c.sketchBytes() {
			return fmt.Errorf("%w: record flags a shingle set but has none", ErrCorrupt)
		}
		r.setCode, r.hasSet = rest[c.sketchBytes():], true
		rest = rest[:c.sketchBytes()]
	}
	if len(rest) != c.sketchBytes() {
		return fmt.Errorf("%w: record sketch of %d bytes, want %d", ErrCorrupt, len(rest), c.sketchBytes())
	}
	if c.minHash {
		r.sig = r.sig[:0]
		for i := 0; i < len(rest); i += 4 {
			r.sig = append(r.sig, binary.LittleEndian.Uint32(rest[i:]))
		}
		return nil
	}
	fp, err := decodeFP(rest, c.bits)
	r.fp = fp
	return err
}

// counters is the value of the counters key: documents in the index and
// the next sequence number, two little-endian uint64.
type counters struct {
	docs, next uint64
}

func (c counters) append(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, c.docs)
	return binary.LittleEndian.AppendUint64(dst, c.next)
}

func decodeCounters(src []byte) (counters, error) {
	if len(src) != 16 {
		return counters{}, fmt.Errorf("%w: counters of %d bytes", ErrCorrupt, len(src))
	}
	c := counters{binary.LittleEndian.Uint64(src), binary.LittleEndian.Uint64(src[8:])}
	if c.docs > c.next {
		return counters{}, fmt.Errorf("%w: %d documents but next sequence %d", ErrCorrupt, c.docs, c.next)
	}
	return c, nil
}

func decodeVersion(src []byte) (uint32, error) {
	if len(src) != 4 {
		return 0, fmt.Errorf("%w: version value of %d bytes", ErrCorrupt, len(src))
	}
	return binary.LittleEndian.Uint32(src), nil
}

// comparer orders keys bytewise, like pebble's default, and splits a
// posting key after its 11-byte prefix ('p', table, key) so that the bloom
// filters are built over band keys and SeekPrefixGE finds a bucket. Every
// other key is its own prefix. Its name is stored by pebble in the index;
// an index is opened only with the comparer of the same name.
var comparer = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Name = "neardup.store.v1"
	c.Split = func(key []byte) int {
		if len(key) == postingKeyLen && key[0] == prefixPosting {
			return postingKeyLen - 8
		}
		return len(key)
	}
	return &c
}()

// batchRecord is the record a document of the batch being written would
// have (with its set when sets, the index keeps them), for verifying a
// later document of the batch against it. It aliases the document's
// memory: the caller resets its scratch record afterwards, before the
// next decodeRecord reuses it.
func batchRecord(d *Doc, sets bool) record {
	r := record{id: []byte(d.ID), sig: d.Sketch.Sig, fp: d.Sketch.FP}
	if d.Sketch.Empty {
		r.flags = flagEmpty
	} else if sets && len(d.Sketch.Set) > 0 {
		r.set, r.hasSet = d.Sketch.Set, true
	}
	return r
}

// recordSketch returns the sketch of a decoded record, its shingle set
// decoded into r.set (reused) when the record has one. The sketch of an
// empty record is Empty, without Sig or FP.
func recordSketch(r *record) (sketch.Sketch, error) {
	if r.flags&flagEmpty != 0 {
		return sketch.Sketch{Empty: true}, nil
	}
	sk := sketch.Sketch{Sig: r.sig, FP: r.fp}
	if r.hasSet {
		set, err := r.decodedSet()
		if err != nil {
			return sk, err
		}
		sk.Set = set
	}
	return sk, nil
}

// decodedSet returns the record's shingle set, decoding it into r.set on
// first use; nil when the record has none.
func (r *record) decodedSet() ([]uint64, error) {
	if !r.hasSet {
		return nil, nil
	}
	if len(r.set) == 0 {
		var err error
		if r.set, err = decodeSet(r.set[:0], r.setCode); err != nil {
			return nil, err
		}
	}
	return r.set, nil
}
