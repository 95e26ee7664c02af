package tune

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/eval"
	hashmix "github.com/neardup/neardup/internal/mix"
)

// Sample writes to docs (JSONL, one record per line, unchanged) the
// documents of files that belong to a reproducible subset of the truth's
// clusters, and to truthOut the truth of those documents (JSONL
// {"id","cluster"}). Clusters are taken in the order of a hash of their
// number and seed until adding the next would exceed maxDocs documents
// (the first is always taken), so the sample holds every member of its
// clusters. Documents whose id the truth lacks are left out. It returns
// the number of documents written; truth documents missing from files are
// not counted and not written.
func Sample(files []string, opts corpus.Options, truth *eval.Labels, maxDocs int, seed uint64, docs, truthOut io.Writer) (int, error) {
	if truth.Len() == 0 {
		return 0, eval.ErrEmptyTruth
	}
	size := make([]int, truth.NumClusters)
	for _, c := range truth.Cluster {
		size[c]++
	}
	order := make([]int32, truth.NumClusters)
	for i := range order {
		order[i] = int32(i)
	}
	key := func(c int32) uint64 { return mix(uint64(c) ^ mix(seed)) }
	slices.SortFunc(order, func(a, b int32) int {
		ka, kb := key(a), key(b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return int(a - b)
	})
	chosen := make([]bool, truth.NumClusters)
	total := 0
	for k, c := range order {
		if k > 0 && total+size[c] > maxDocs {
			continue // a smaller cluster further on may still fit
		}
		chosen[c] = true
		total += size[c]
	}

	r := corpus.NewMulti(files, opts)
	defer r.Close()
	w := bufio.NewWriterSize(docs, 1<<16)
	tw := bufio.NewWriter(truthOut)
	seen := make([]bool, truth.Len())
	n := 0
	for r.Next() {
		d := r.Doc()
		k := truth.Index(d.ID)
		if k < 0 || !chosen[truth.Cluster[k]] || seen[k] {
			continue
		}
		seen[k] = true
		n++
		w.Write(d.Raw)
		w.WriteByte('\n')
		line, err := json.Marshal(struct {
			ID      string `json:"id"`
			Cluster string `json:"cluster"`
		}{d.ID, fmt.Sprint(truth.Cluster[k])})
		if err != nil {
			return n, err
		}
		tw.Write(line)
		tw.WriteByte('\n')
	}
	if err := r.Err(); err != nil {
		return n, err
	}
	if err := w.Flush(); err != nil {
		return n, err
	}
	return n, tw.Flush()
}

// mix is one step of the splitmix64 generator: the golden-ratio increment,
// then the finaliser.
func mix(x uint64) uint64 { return hashmix.SplitMix64(x + 0x9e3779b97f4a7c15) }
