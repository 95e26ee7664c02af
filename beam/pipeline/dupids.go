package pipeline

import (
	"context"
	"encoding/json"
	"io"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
)

// The duplicate ids of stats.json, as `neardup dedup --stats` counts them
// (dedup.Stats.DuplicateIDs and DuplicateIDsFirst): how many ids more
// than one document has, each counted once, and the first
// maxDuplicateIDsListed of them in the order of their second document
// (its rank: input order). Computed in the sketch job from the
// documents' metadata: the two lowest ranks of each id (a combine per
// id), then the ids with two, combined into one list.

// maxDuplicateIDsListed is how many duplicate ids stats.json lists
// (dedup's maxDuplicateIDsListed).
const maxDuplicateIDsListed = 10

// dupIDsFile is the file in the run's temporary directory where the
// sketch job writes the first duplicate ids (JSON: a list of strings).
const dupIDsFile = "/duplicate-ids.json"

var cDupIDs = beam.NewCounter("neardup", "duplicate_ids")

// twoRanks is the two lowest ranks of an id's documents (-1: none).
type twoRanks struct {
	A, B int64
}

// dupID is an id that more than one document has, and the rank of its
// second document.
type dupID struct {
	Second int64
	ID     string
}

// dupList is the first duplicate ids, sorted by their second document.
type dupList struct {
	First []dupID
}

// idRankFn keys a document's rank by its id.
func idRankFn(ctx context.Context, m docMeta, emit func(string, twoRanks)) {
	sIDs.Inc(ctx, int64(len(m.ID))+16)
	emit(m.ID, twoRanks{m.Rank, -1})
}

// firstTwoFn keeps the two lowest ranks of a and b.
func firstTwoFn(a, b twoRanks) twoRanks {
	out := twoRanks{-1, -1}
	for _, r := range [4]int64{a.A, a.B, b.A, b.B} {
		switch {
		case r < 0:
		case out.A < 0 || r < out.A:
			out.A, out.B = r, out.A
		case out.B < 0 || r < out.B:
			out.B = r
		}
	}
	return out
}

// dupIDFn counts an id that more than one document has and emits it.
func dupIDFn(ctx context.Context, id string, t twoRanks, emit func(dupList)) {
	if t.B < 0 {
		return
	}
	cDupIDs.Inc(ctx, 1)
	emit(dupList{First: []dupID{{Second: t.B, ID: id}}})
}

// mergeDupListsFn keeps the first maxDuplicateIDsListed ids of a and b.
func mergeDupListsFn(a, b dupList) dupList {
	all := append(slices.Clip(a.First), b.First...)
	slices.SortFunc(all, func(x, y dupID) int {
		switch {
		case x.Second < y.Second:
			return -1
		case x.Second > y.Second:
			return 1
		}
		return 0
	})
	return dupList{First: all[:min(len(all), maxDuplicateIDsListed)]}
}

// writeDupIDsFn writes the first duplicate ids to Path (nothing when
// there are none).
type writeDupIDsFn struct {
	Path string
}

func (f *writeDupIDsFn) ProcessElement(ctx context.Context, l dupList) error {
	if len(l.First) == 0 {
		return nil
	}
	ids := make([]string, len(l.First))
	for i, d := range l.First {
		ids[i] = d.ID
	}
	return writeJSON(ctx, f.Path, ids)
}

// writeJSON writes v as JSON to path.
func writeJSON(ctx context.Context, path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w, err := createFile(ctx, path)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		w.abort()
		return err
	}
	return w.Close()
}

// duplicateIDs adds the duplicate ids to s in the sketch job.
func duplicateIDs(s beam.Scope, meta beam.PCollection, path string) {
	s = s.Scope("duplicate ids")
	firsts := beam.CombinePerKey(s, firstTwoFn, beam.ParDo(s, idRankFn, meta))
	lists := beam.ParDo(s, dupIDFn, firsts)
	beam.ParDo0(s, &writeDupIDsFn{Path: path}, beam.Combine(s, mergeDupListsFn, lists))
}

// readStrings reads the list of strings writeJSON wrote at path, nil
// when there is no file.
func readStrings(ctx context.Context, path string) ([]string, error) {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, err
	}
	defer fs.Close()
	names, err := fs.List(ctx, path)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	rc, err := fs.OpenRead(ctx, path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	var ids []string
	return ids, json.Unmarshal(b, &ids)
}
