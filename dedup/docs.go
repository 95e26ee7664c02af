package dedup

import (
	"strconv"

	"github.com/neardup/neardup/corpus"
)

// Docs returns a Source over documents in memory, read in order, for a
// Go program that has its documents already: only ID and Text are used,
// and a document without an ID gets the id NAME:N (N from 1). The slice
// is read, never changed, and must not change during the run. The kept
// documents (Outputs.Kept) are written as {"id", "text"} objects.
func Docs(name string, docs []corpus.Document) Source {
	size := int64(0)
	for i := range docs {
		size += int64(len(docs[i].ID) + len(docs[i].Text) + 24)
	}
	return Source{Name: name, Size: size, Open: func(corpus.Options) (corpus.Reader, error) {
		return &docsReader{name: name, docs: docs, i: -1}, nil
	}}
}

// docsReader is the corpus.Reader of Docs.
type docsReader struct {
	name string
	docs []corpus.Document
	i    int
	doc  corpus.Document
	raw  []byte
}

func (r *docsReader) Next() bool {
	if r.i+1 >= len(r.docs) {
		r.i = len(r.docs)
		return false
	}
	r.i++
	d := r.docs[r.i]
	id := d.ID
	if id == "" {
		id = r.name + ":" + strconv.Itoa(r.i+1)
	}
	r.raw = append(r.raw[:0], `{"id":`...)
	r.raw = corpus.AppendJSONString(r.raw, id)
	r.raw = append(r.raw, `,"text":`...)
	r.raw = corpus.AppendJSONString(r.raw, d.Text)
	r.raw = append(r.raw, '}')
	r.doc = corpus.Document{ID: id, Text: d.Text, Raw: r.raw, Source: r.name, Record: int64(r.i + 1), Offset: int64(r.i)}
	return true
}

func (r *docsReader) Doc() *corpus.Document { return &r.doc }
func (r *docsReader) Err() error            { return nil }
func (r *docsReader) Close() error          { return nil }

// clusterOf is the name of document i's cluster, as Outputs.Clusters and
// OnCluster give it: the id of its kept document, or the label of the
// old document (Input.AgainstIndexes) it was matched to.
func (r *run) clusterOf(keep []int32, i int) string {
	k := keep[i]
	if label, ok := r.labels[k]; ok {
		return label
	}
	return r.ids[k]
}
