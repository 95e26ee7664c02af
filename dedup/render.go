package dedup

import (
	"github.com/neardup/neardup/corpus"
)

// Sign's output lines are written by the workers, not by the collector:
// formatting a signature (128 numbers) cost more than all else the
// collector does, and the collector is one goroutine for the whole run,
// so it bounded Sign's throughput on many cores (and on the GPU).

// signedLine is a document's whole output line of Sign, written by a
// worker: {"id", "method", "sketch"} and a newline.
type signedLine []byte

// AppendJSON appends the line: Sign writes it as it is.
func (l signedLine) AppendJSON(dst []byte) []byte { return append(dst, l...) }

// lineSketcher wraps a worker's DocSketcher for Sign: each sketch becomes
// its output line. Lines are cut from slabs of slabBytes, so that a batch
// costs a few allocations; a slab is garbage once its lines are written.
type lineSketcher struct {
	inner  DocSketcher
	prefix []byte // `,"method":"NAME","sketch":`
	slab   []byte
	ids    []string // the ids of the sketches the inner sketcher defers
}

const slabBytes = 1 << 20

func (s *lineSketcher) Sketch(d *Doc) (DocSketch, error) {
	sk, err := s.inner.Sketch(d)
	if err != nil {
		return nil, err
	}
	if _, ok := sk.(*deferredSketch); ok {
		s.ids = append(s.ids, d.ID)
		return sk, nil
	}
	return s.line(d.ID, sk), nil
}

// line renders one output line into the slab.
func (s *lineSketcher) line(id string, sk DocSketch) signedLine {
	if cap(s.slab)-len(s.slab) < 4096 {
		s.slab = make([]byte, 0, slabBytes)
	}
	start := len(s.slab)
	b := corpus.AppendJSONString(append(s.slab, `{"id":`...), id)
	b = append(b, s.prefix...)
	if sk == nil {
		b = append(b, "null"...)
	} else {
		b = sk.AppendJSON(b)
	}
	b = append(b, "}\n"...)
	if cap(b) != cap(s.slab) { // grew out of the slab: the line has its own array
		return signedLine(b[start:])
	}
	s.slab = b
	return signedLine(b[start:len(b):len(b)])
}

func (s *lineSketcher) flush(sketches []DocSketch) error {
	bs, ok := s.inner.(batchSketcher)
	if !ok || len(s.ids) == 0 {
		return nil
	}
	// The deferred sketches, in order, are those of s.ids; any other
	// entry is a line already (or a stale entry of a reused batch).
	var marked []int
	for i, sk := range sketches {
		if _, ok := sk.(*deferredSketch); ok {
			marked = append(marked, i)
		}
	}
	if err := bs.flush(sketches); err != nil {
		return err
	}
	// Stale markers of earlier batches come first in no particular
	// place: the inner flush replaced exactly the current ones, which
	// are no longer markers.
	j := 0
	for _, i := range marked {
		if _, ok := sketches[i].(*deferredSketch); ok {
			continue
		}
		sketches[i] = s.line(s.ids[j], sketches[i])
		j++
	}
	s.ids = s.ids[:0]
	return nil
}

// digits2 is the two decimal digits of 0..99, in order.
const digits2 = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// appendUint32 appends v in decimal, as strconv.AppendUint does, four
// digits a division while they last: MinHash slots are mostly ten digits
// long, and formatting them was a fifth of Sign's work.
func appendUint32(dst []byte, v uint32) []byte {
	var buf [10]byte
	i := len(buf)
	for v >= 10000 {
		q := v / 10000
		r := v - q*10000
		hi, lo := r/100, r%100
		i -= 4
		buf[i], buf[i+1] = digits2[2*hi], digits2[2*hi+1]
		buf[i+2], buf[i+3] = digits2[2*lo], digits2[2*lo+1]
		v = q
	}
	if v >= 100 {
		q := v / 100
		r := v - q*100
		i -= 2
		buf[i], buf[i+1] = digits2[2*r], digits2[2*r+1]
		v = q
	}
	if v >= 10 {
		i -= 2
		buf[i], buf[i+1] = digits2[2*v], digits2[2*v+1]
	} else {
		i--
		buf[i] = byte('0' + v)
	}
	return append(dst, buf[i:]...)
}
