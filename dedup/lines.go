package dedup

import (
	"strconv"

	"github.com/neardup/neardup/corpus"
)

// The lines of --clusters and --pairs (docs/outputs.md), written the same
// way by `neardup dedup`, its staged tasks and neardup-beam, so that their
// outputs are byte-identical.

// AppendClusterLine appends the --clusters line of document id, a member
// of the cluster named cluster (the id of its kept document, or an old
// corpus's label), kept or not, with its newline.
func AppendClusterLine(dst []byte, id, cluster string, kept bool) []byte {
	dst = append(dst, `{"id":`...)
	dst = corpus.AppendJSONString(dst, id)
	dst = append(dst, `,"cluster":`...)
	dst = corpus.AppendJSONString(dst, cluster)
	dst = append(dst, `,"kept":`...)
	dst = strconv.AppendBool(dst, kept)
	return append(dst, "}\n"...)
}

// AppendIndexPairLine appends the --pairs line of a new document, id, found
// in a saved index (--against INDEX) as the indexed document indexID with
// the index's similarity, with its newline.
func AppendIndexPairLine(dst []byte, indexID, id string, similarity float64) []byte {
	dst = append(dst, `{"id1":`...)
	dst = corpus.AppendJSONString(dst, indexID)
	dst = append(dst, `,"id2":`...)
	dst = corpus.AppendJSONString(dst, id)
	dst = append(dst, `,"similarity":`...)
	dst = strconv.AppendFloat(dst, similarity, 'f', -1, 64)
	return append(dst, `,"index":true}`+"\n"...)
}

// AppendPairLine appends the --pairs line of the pair (id1, id2), with its
// newline: the similarity, the Hamming distance when distance is not
// negative, and "measure":"hamming" when the similarity is SimHash's.
func AppendPairLine(dst []byte, id1, id2 string, similarity float64, distance int, hamming bool) []byte {
	dst = append(dst, `{"id1":`...)
	dst = corpus.AppendJSONString(dst, id1)
	dst = append(dst, `,"id2":`...)
	dst = corpus.AppendJSONString(dst, id2)
	dst = append(dst, `,"similarity":`...)
	dst = strconv.AppendFloat(dst, similarity, 'f', -1, 64)
	if distance >= 0 {
		dst = append(dst, `,"distance":`...)
		dst = strconv.AppendInt(dst, int64(distance), 10)
	}
	if hamming {
		dst = append(dst, `,"measure":"hamming"`...)
	}
	return append(dst, "}\n"...)
}
