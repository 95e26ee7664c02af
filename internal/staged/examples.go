package staged

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/objstore"
	"github.com/neardup/neardup/report"
	"github.com/neardup/neardup/text"
)

// What the report (--report, Plan.Examples) needs of a staged job, and
// where it comes from: its example clusters as dedup.Run chooses them,
// with their members' texts, and the removed ids.
//
//   - Each join task lists its clusters of two or more new documents
//     (joinClusters: the kept document, the size and the first members,
//     dedup.JoinCluster), in the order of their kept documents.
//   - The examples task (one) reads those N lists, once each and whole,
//     chooses the examples from them (dedup.ChooseExamples: the same
//     choice for any number of tasks, and Run's) and writes them with
//     their listed members (ExamplesName). Before plan version 11 every
//     write task read the N lists and made the choice, N^2 reads a job.
//   - Each write task reads the choice, the texts of the chosen
//     clusters' members that are in its shard (with -o as it writes the
//     kept records, else reading its shard up to the last of them), and
//     lists its shard's removed ids, up to report.MaxRemovedBytes
//     (writeReport).
//   - Finish puts the choice and the shards' parts together
//     (ReportName), and the command renders the page from it and the
//     job's Stats.
//
// The examples task holds the N lists as read (a few bytes a member
// listed) and about 32 bytes a cluster of two or more documents while it
// chooses; a job of more such clusters than half of --task-memory holds
// at that rate fails and says so. A write task holds the choice (at
// most ExampleMembers members an example), the texts of its members in
// its shard and its removed ids.

// ExamplesName is the examples task's file: the chosen examples
// (chosenFile).
const ExamplesName = "examples/chosen.json"

// chosenFile is ExamplesName.
type chosenFile struct {
	Examples []chosenExample `json:"examples"`
}

// joinClusters is join task g's clusters of two or more new documents.
func joinClusters(g int) string { return fmt.Sprintf("join/%05d/clusters", g) }

// writeReport is write task s's part of the report.
func writeReport(s int) string { return fmt.Sprintf("write/%05d-report.json", s) }

// ReportName is the finish task's file of what the report shows besides
// the Stats: the example clusters and the removed ids (ReportFile).
const ReportName = "finish/report.json"

// ReportFile is ReportName: the job's dedup.Stats.Examples, as Run gives
// them, and its removed ids in input order, as dedup.Outputs.Removed
// gives them, unless they take more than report.MaxRemovedBytes
// (RemovedOmitted).
type ReportFile struct {
	Examples       []dedup.Example `json:"examples"`
	RemovedIDs     []string        `json:"removed_ids"`
	RemovedOmitted bool            `json:"removed_omitted,omitempty"`
}

// Report reads the finish task's ReportName.
func (j *Job) Report(ctx context.Context) (*ReportFile, error) {
	rf := &ReportFile{}
	if err := j.getJSON(ctx, ReportName, rf); err != nil {
		return nil, err
	}
	return rf, nil
}

// putJoinClusters writes join task g's clusters: for each, uvarints of
// its kept document, its size, its number of members and the members;
// with a saved index (Plan.Indexes), then the length and the bytes of
// the id of the indexed document that names it (dedup.JoinCluster.Index,
// empty for none). A plan without an index has no such field: work
// folders planned before the report was staged with an index read as
// they were written.
func (j *Job) putJoinClusters(ctx context.Context, g int, cs []dedup.JoinCluster) error {
	named := len(j.Plan.Indexes) > 0
	return j.Work.Put(ctx, joinClusters(g), func(w io.Writer) error {
		var b []byte
		for _, c := range cs {
			b = appendUvarint(b[:0], uint64(c.Kept))
			b = appendUvarint(b, uint64(c.Size))
			b = appendUvarint(b, uint64(len(c.Members)))
			for _, m := range c.Members {
				b = appendUvarint(b, uint64(m))
			}
			if named {
				b = appendUvarint(b, uint64(len(c.Index)))
				b = append(b, c.Index...)
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		return nil
	})
}

// readJoinClusters reads every join task's list of clusters, each with
// one request, several at once, and returns them in group order. It
// holds them whole: they are read once, where choosing the examples
// goes over them twice (chooseExamples). held is what the task may hold
// of them (0: no bound); past it the error says how much it needed.
func (j *Job) readJoinClusters(ctx context.Context, held int64) ([][]byte, error) {
	lists := make([][]byte, j.Plan.Tasks)
	var total atomic.Int64
	err := readEach(len(lists), func(g int) (err error) {
		lists[g], err = j.Work.ReadAll(ctx, joinClusters(g))
		total.Add(int64(len(lists[g])))
		return err
	})
	if err != nil {
		return nil, err
	}
	if n := total.Load(); held > 0 && n > held {
		return nil, fmt.Errorf("--report: the join tasks' lists of clusters of two or more documents take %d bytes; choosing the examples as neardup dedup does holds them and about %d bytes a cluster, more than half of --task-memory %d bytes: give more --task-memory, or leave out --report", n, chooseBytes, j.Plan.TaskMemory)
	}
	return lists, nil
}

// eachJoinCluster calls fn with every cluster of the join tasks' lists
// (readJoinClusters), group by group; c.Members is reused by the next
// call.
func (j *Job) eachJoinCluster(lists [][]byte, fn func(c *dedup.JoinCluster)) error {
	var c dedup.JoinCluster
	named := len(j.Plan.Indexes) > 0
	for g, b := range lists {
		bad := func(err error) error {
			return fmt.Errorf("%s: damaged work file: %w", j.Work.URL(joinClusters(g)), err)
		}
		uvarint := func() (uint64, error) {
			v, k := binary.Uvarint(b)
			if k <= 0 {
				return 0, bad(io.ErrUnexpectedEOF)
			}
			b = b[k:]
			return v, nil
		}
		for len(b) > 0 {
			var v [3]uint64
			for k := range v {
				var err error
				if v[k], err = uvarint(); err != nil {
					return err
				}
			}
			if v[2] > dedup.ExampleMembers {
				return bad(fmt.Errorf("a cluster of %d members", v[2]))
			}
			c.Kept, c.Size, c.Members = int64(v[0]), int(v[1]), c.Members[:0]
			for range v[2] {
				m, err := uvarint()
				if err != nil {
					return err
				}
				c.Members = append(c.Members, int64(m))
			}
			c.Index = ""
			if named {
				n, err := uvarint()
				if err != nil {
					return err
				}
				if n > uint64(len(b)) {
					return bad(io.ErrUnexpectedEOF)
				}
				c.Index, b = string(b[:n]), b[n:]
			}
			fn(&c)
		}
	}
	return nil
}

// chooseBytes is what chooseExamples holds a cluster at its peak (its
// list of the clusters, then their kept documents and sizes apart),
// besides the lists as read.
const chooseBytes = 32

// chosenExample is an example cluster the examples task chose: its kind
// and size as Stats.Examples has them, its kept document and its listed
// members (JoinCluster.Members), by their numbers in the input.
type chosenExample struct {
	Kind    string  `json:"kind"`
	Size    int     `json:"size"`
	Kept    int64   `json:"kept"`
	Members []int64 `json:"members"`
	// Index is the id of the indexed document that names the cluster
	// (dedup.Example.Index): its kept document went too.
	Index string `json:"index,omitempty"`
}

// examples: the examples task, which chooses the job's example clusters
// (chooseExamples) and writes them (ExamplesName).
func (j *Job) examples(ctx context.Context) error {
	chosen, err := j.chooseExamples(ctx)
	if err != nil {
		return err
	}
	if chosen == nil {
		chosen = []chosenExample{}
	}
	return j.putJSON(ctx, ExamplesName, chosenFile{Examples: chosen})
}

// readChosen reads the examples task's choice (ExamplesName) and checks
// it against the plan.
func (j *Job) readChosen(ctx context.Context) ([]chosenExample, error) {
	var f chosenFile
	if err := j.getJSON(ctx, ExamplesName, &f); err != nil {
		if errors.Is(err, objstore.ErrNotExist) {
			return nil, fmt.Errorf("%s: the examples task's choice of the report's examples is missing: run `neardup task --work %s examples` before the write tasks: %w", j.Work.URL(ExamplesName), j.Work.URL(""), err)
		}
		return nil, err
	}
	if n := j.Plan.Examples + j.Plan.RandomExamples; len(f.Examples) > n {
		return nil, fmt.Errorf("%s: damaged work file: %d examples, the plan has at most %d", j.Work.URL(ExamplesName), len(f.Examples), n)
	}
	for _, c := range f.Examples {
		if len(c.Members) > dedup.ExampleMembers {
			return nil, fmt.Errorf("%s: damaged work file: an example of %d members", j.Work.URL(ExamplesName), len(c.Members))
		}
	}
	return f.Examples, nil
}

// chooseExamples chooses the job's example clusters from the join
// tasks' lists, as dedup.Run does (dedup.ChooseExamples), in the order of
// Stats.Examples: it reads the lists once (N small reads a job: the
// examples task's; before plan version 11 each write task's, N^2), goes
// over them for the kept documents and sizes, then again for the chosen
// clusters' members.
func (j *Job) chooseExamples(ctx context.Context) ([]chosenExample, error) {
	type cl struct {
		kept int64
		size int
	}
	lists, err := j.readJoinClusters(ctx, j.limit()/2)
	if err != nil {
		return nil, err
	}
	var held int64
	for _, b := range lists {
		held += int64(len(b))
	}
	var all []cl
	var n int64
	err = j.eachJoinCluster(lists, func(c *dedup.JoinCluster) {
		if n++; held+n*chooseBytes <= j.limit()/2 || j.limit() <= 0 {
			all = append(all, cl{c.Kept, c.Size})
		}
	})
	if err != nil {
		return nil, err
	}
	if int64(len(all)) < n {
		return nil, fmt.Errorf("--report: the job found %d clusters of two or more documents; choosing its examples as neardup dedup does takes about %d bytes, more than half of --task-memory %d bytes: give more --task-memory, or leave out --report", n, held+n*chooseBytes, j.Plan.TaskMemory)
	}
	slices.SortFunc(all, func(a, b cl) int { return cmp.Compare(a.kept, b.kept) })
	kept, sizes := make([]int64, len(all)), make([]int, len(all))
	for c, x := range all {
		kept[c], sizes[c] = x.kept, x.size
	}
	all = nil
	picks := dedup.ChooseExamples(kept, sizes, j.Plan.Examples, j.Plan.RandomExamples)
	out := make([]chosenExample, len(picks))
	at := make(map[int64]int, len(picks))
	for k, p := range picks {
		out[k] = chosenExample{Kind: p.Kind, Size: p.Size, Kept: kept[p.Cluster]}
		at[kept[p.Cluster]] = k
	}
	if len(out) == 0 {
		return out, nil
	}
	err = j.eachJoinCluster(lists, func(c *dedup.JoinCluster) {
		if k, ok := at[c.Kept]; ok {
			out[k].Members, out[k].Index = slices.Clone(c.Members), c.Index
		}
	})
	return out, err
}

// shardExamples is a write task's share of the report: the job's chosen
// examples, and the texts of their members in its shard as it reads them.
type shardExamples struct {
	chosen []chosenExample
	off    int64          // the shard's first document in the input
	want   map[uint64]int // shard document -> its example
	last   uint64         // the last document of want
	opts   corpus.Options
	html   bool // extract the text of HTML, as dedup.Run shows it
	all    bool // text.ExtractHTML's whole page
	got    []shardMember
	// removed are the shard's removed ids, up to report.MaxRemovedBytes
	// (omitted past it).
	removed      []string
	removedBytes int
	omitted      bool
}

// shardMember is a member of an example cluster that a write task read.
type shardMember struct {
	Example int    `json:"example"`
	Doc     int64  `json:"doc"`
	ID      string `json:"id"`
	Text    string `json:"text"`
}

// shardReportFile is writeReport.
type shardReportFile struct {
	Members        []shardMember `json:"members"`
	RemovedIDs     []string      `json:"removed_ids"`
	RemovedOmitted bool          `json:"removed_omitted,omitempty"`
}

// shardExamples reads the chosen examples and finds which of their
// members write task s reads.
func (j *Job) shardExamples(ctx context.Context, s int) (*shardExamples, error) {
	chosen, err := j.readChosen(ctx)
	if err != nil {
		return nil, err
	}
	off, err := j.offsets(ctx)
	if err != nil {
		return nil, err
	}
	spec, err := j.Plan.Options.ResolveSpec()
	if err != nil {
		return nil, err
	}
	opts, err := j.Plan.Options.ReaderOptions(j.Plan.Input.corpus())
	if err != nil {
		return nil, err
	}
	ex := &shardExamples{chosen: chosen, off: off[s], want: map[uint64]int{}, opts: opts,
		html: spec.Normalize.HTML, all: spec.Normalize.HTMLAll}
	for k, c := range chosen {
		for _, m := range c.Members {
			if m >= off[s] && m < off[s+1] {
				d := uint64(m - off[s])
				ex.want[d] = k
				ex.last = max(ex.last, d)
			}
		}
	}
	return ex, nil
}

// see takes document i of the shard's text if an example wants it.
func (ex *shardExamples) see(i uint64, d *corpus.Document) error {
	k, ok := ex.want[i]
	if !ok {
		return nil
	}
	doc := *d
	// The records were read RawOnly: a JSONL record's id and text are
	// parsed now, as dedup.Run's second pass does.
	if doc.ID == "" {
		if err := corpus.ParseJSONL(&doc, ex.opts); err != nil {
			return &corpus.RecordError{File: d.Source, Record: d.Record, Offset: d.Offset, Err: err}
		}
	}
	m := shardMember{Example: k, Doc: ex.off + int64(i), ID: strings.Clone(doc.ID), Text: strings.Clone(doc.Text)}
	if ex.html {
		// A strings.Reader never fails, so neither does the extraction.
		b, _, _ := text.ExtractHTML(nil, strings.NewReader(m.Text), ex.all)
		m.Text = string(b)
	}
	ex.got = append(ex.got, m)
	return nil
}

// addRemoved lists a removed id, up to report.MaxRemovedBytes of them:
// past it the shard's list, and so the job's, is too long to embed.
func (ex *shardExamples) addRemoved(id []byte) {
	if ex.omitted {
		return
	}
	if ex.removedBytes += len(id) + 1; ex.removedBytes > report.MaxRemovedBytes {
		ex.removed, ex.omitted = nil, true
		return
	}
	ex.removed = append(ex.removed, string(id))
}

// removedIDs lists shard s's removed ids (the clusters output lists them
// as it writes, when there is one).
func (j *Job) removedIDs(ctx context.Context, s int, meta *signMetaFile, ex *shardExamples) error {
	_, err := j.eachID(ctx, s, meta, func(_ uint64, id []byte, _ string, rm bool) error {
		if rm {
			ex.addRemoved(id)
		}
		return nil
	})
	return err
}

// putShardReport writes write task s's part of the report.
func (j *Job) putShardReport(ctx context.Context, s int, ex *shardExamples) error {
	if len(ex.got) != len(ex.want) {
		return fmt.Errorf("found %d of the %d members of the report's examples in the shard: the input changed", len(ex.got), len(ex.want))
	}
	return j.putJSON(ctx, writeReport(s), shardReportFile{Members: ex.got, RemovedIDs: ex.removed, RemovedOmitted: ex.omitted})
}

// finishReport puts the examples task's choice and the write tasks'
// parts of the report together (ReportName): the examples' members in
// input order, the kept one first and as many others as dedup.Run shows;
// the removed ids in input order. It returns the examples, with their
// members, as dedup.Run gives them (Stats.Examples).
func (j *Job) finishReport(ctx context.Context) ([]dedup.Example, error) {
	rf := &ReportFile{RemovedIDs: []string{}}
	chosen, err := j.readChosen(ctx)
	if err != nil {
		return nil, err
	}
	rf.Examples = make([]dedup.Example, len(chosen))
	for k, c := range chosen {
		rf.Examples[k] = dedup.Example{Kind: c.Kind, Size: c.Size, Index: c.Index}
	}
	bytes := 0
	for s := range j.Plan.Tasks {
		var part shardReportFile
		if err := j.getJSON(ctx, writeReport(s), &part); err != nil {
			return nil, err
		}
		for _, m := range part.Members {
			if m.Example < 0 || m.Example >= len(chosen) {
				return nil, fmt.Errorf("%s: damaged work file: example %d of %d", j.Work.URL(writeReport(s)), m.Example, len(chosen))
			}
			e, kept := &rf.Examples[m.Example], m.Doc == chosen[m.Example].Kept
			// dedup.Run's rule (its second pass): the kept document, and
			// others while fewer than ExampleMembers-1 are shown. A
			// cluster named after an indexed document has none kept: its
			// kept document is shown in input order, as removed.
			switch {
			case kept && e.Index != "":
				e.Members = append(e.Members, dedup.ExampleDoc{ID: m.ID, Text: m.Text})
			case kept:
				e.Members = slices.Insert(e.Members, 0, dedup.ExampleDoc{ID: m.ID, Text: m.Text, Kept: true})
			case len(e.Members) < dedup.ExampleMembers-1:
				e.Members = append(e.Members, dedup.ExampleDoc{ID: m.ID, Text: m.Text})
			}
		}
		if rf.RemovedOmitted = rf.RemovedOmitted || part.RemovedOmitted; !rf.RemovedOmitted {
			for _, id := range part.RemovedIDs {
				bytes += len(id) + 1
			}
			if bytes > report.MaxRemovedBytes {
				rf.RemovedOmitted = true
			}
			rf.RemovedIDs = append(rf.RemovedIDs, part.RemovedIDs...)
		}
		if rf.RemovedOmitted {
			rf.RemovedIDs = nil
		}
	}
	return rf.Examples, j.putJSON(ctx, ReportName, rf)
}
