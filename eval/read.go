package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/klauspost/compress/gzip"

	"github.com/neardup/neardup/internal/human"
)

// MaxLine is the longest line the readers accept (1 MiB); a longer line is
// reported as malformed and skipped.
const MaxLine = 1 << 20

// maxExamples is how many ids or lines an Issues keeps as examples.
const maxExamples = 5

// Format is the format of a labels file.
type Format uint8

const (
	// JSONL: one {"id": ..., "cluster": ...} object per line (truth.jsonl,
	// or the --clusters output of neardup dedup, whose "kept" field is
	// ignored). Ids and cluster keys are JSON strings or numbers (a number
	// stands for its literal text).
	JSONL Format = iota + 1
	// PairsTSV: tab-separated, a header whose first three columns are
	// id1, id2 and label, then one labelled pair per line (pairs.tsv).
	PairsTSV
)

// Labels is a partition of document ids into clusters, read from a file
// (Read, ReadClusters, ReadPairs) or built by NewLabels; a Labels written
// as a literal has no id index and finds no id. It is read-only once built.
type Labels struct {
	// Name is the file name, for messages.
	Name string
	// Format is the format the file was read as.
	Format Format
	// IDs are the document ids in order of first appearance, each once.
	IDs []string
	// Cluster[k] is the cluster of IDs[k], a number in [0, NumClusters).
	Cluster []int32
	// NumClusters is the number of distinct clusters.
	NumClusters int
	// Issues lists what was wrong with the file; the readers skip bad
	// lines and keep the first occurrence of a repeated id.
	Issues Issues
	// Pairs holds the labelled pairs of a PairsTSV file (nil for JSONL).
	Pairs []LabelledPair
	// PairLabels are the distinct labels of Pairs, in order of first
	// appearance; LabelledPair.Label indexes it.
	PairLabels []string
	// Positive[l] says whether PairLabels[l] counts as a duplicate.
	Positive []bool

	index map[string]int32
}

// LabelledPair is one line of a pairs file: two documents (indexes into
// Labels.IDs) and the index of their label in Labels.PairLabels.
type LabelledPair struct {
	A, B  int32
	Label int32
}

// NewLabels returns the partition that puts ids[k] in cluster clusters[k],
// for callers that hold a clustering in memory (the reader functions build
// the same from files). A repeated id is recorded in Issues, and the first
// wins. The slices must have the same length.
func NewLabels(name string, ids, clusters []string) (*Labels, error) {
	if len(ids) != len(clusters) {
		return nil, fmt.Errorf("eval: %d ids and %d clusters", len(ids), len(clusters))
	}
	if len(ids) >= 1<<31-1 {
		return nil, errTooMany
	}
	b := newBuilder(name, JSONL)
	for k, id := range ids {
		b.add(id, clusters[k])
	}
	return b.done(), nil
}

// Index returns the position of id in IDs, or -1.
func (l *Labels) Index(id string) int {
	if k, ok := l.index[id]; ok {
		return int(k)
	}
	return -1
}

// Len returns the number of documents.
func (l *Labels) Len() int { return len(l.IDs) }

// Issues records problems found in one input file.
type Issues struct {
	// Empty is true when the file holds no valid record.
	Empty bool `json:"empty,omitempty"`
	// Malformed counts lines that could not be parsed; MalformedLines
	// shows the first few as "FILE:LINE: reason".
	Malformed      int      `json:"malformed,omitempty"`
	MalformedLines []string `json:"malformed_lines,omitempty"`
	// Duplicates counts JSONL records whose id was already seen: the
	// first record wins. DuplicateIDs shows the first few. (A pairs file
	// may list a pair more than once: each line counts.)
	Duplicates   int      `json:"duplicates,omitempty"`
	DuplicateIDs []string `json:"duplicate_ids,omitempty"`
}

// Any reports whether there is an issue.
func (is *Issues) Any() bool { return is.Empty || is.Malformed > 0 || is.Duplicates > 0 }

func (is *Issues) malformed(name string, line int, format string, args ...any) {
	is.Malformed++
	if len(is.MalformedLines) < maxExamples {
		is.MalformedLines = append(is.MalformedLines, fmt.Sprintf("%s:%d: %s", name, line, fmt.Sprintf(format, args...)))
	}
}

func (is *Issues) duplicate(id string) {
	is.Duplicates++
	if len(is.DuplicateIDs) < maxExamples {
		is.DuplicateIDs = append(is.DuplicateIDs, id)
	}
}

// Messages returns one readable line per issue.
func (is *Issues) Messages(name string) []string {
	var out []string
	if is.Empty {
		out = append(out, fmt.Sprintf("%s: no valid record", name))
	}
	if is.Malformed > 0 {
		out = append(out, fmt.Sprintf("%s: %s skipped, first: %s",
			name, human.Plural(is.Malformed, "malformed line"), strings.Join(is.MalformedLines, "; ")))
	}
	if is.Duplicates > 0 {
		out = append(out, fmt.Sprintf("%s: %s, later records ignored, first: %s",
			name, human.Plural(is.Duplicates, "repeated id"), quoteList(is.DuplicateIDs)))
	}
	return out
}

func quoteList(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}

// ReadOptions configures the readers. The zero value is the default.
type ReadOptions struct {
	// Positive lists the labels of a pairs file that mean "duplicate";
	// nil means {"1"}. Every other label is a negative pair.
	Positive []string
}

// Read reads a labels file: JSONL or a pairs TSV, chosen by content (a
// first non-blank byte '{' means JSONL), optionally gzip-compressed
// (recognised by its magic number, whatever the name). name is used in
// messages. Bad lines and repeated ids are recorded in Labels.Issues, not
// returned as errors; the error is for I/O, a corrupt gzip stream, or a
// pairs file without the id1, id2, label header.
func Read(r io.Reader, name string, opts ReadOptions) (*Labels, error) {
	br, err := decompress(r, name)
	if err != nil {
		return nil, err
	}
	// Sniff the first non-blank byte of the first 4 KiB.
	head, _ := br.Peek(4096)
	if k := bytes.IndexFunc(head, func(r rune) bool { return !unicode.IsSpace(r) }); k >= 0 && head[k] != '{' {
		return readPairs(br, name, opts)
	}
	return readJSONL(br, name)
}

// ReadClusters reads a JSONL labels file (truth.jsonl, or the --clusters
// output of neardup dedup), optionally gzip-compressed.
func ReadClusters(r io.Reader, name string) (*Labels, error) {
	br, err := decompress(r, name)
	if err != nil {
		return nil, err
	}
	return readJSONL(br, name)
}

// ReadPairs reads a pairs TSV, optionally gzip-compressed, and turns it into
// a partition: the connected components of the positive pairs, every other
// id a singleton.
func ReadPairs(r io.Reader, name string, opts ReadOptions) (*Labels, error) {
	br, err := decompress(r, name)
	if err != nil {
		return nil, err
	}
	return readPairs(br, name, opts)
}

func decompress(r io.Reader, name string) (*bufio.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if m, err := br.Peek(2); err == nil && m[0] == 0x1f && m[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return bufio.NewReaderSize(cutReader{zr}, 64<<10), nil
	}
	return br, nil
}

// ErrTruncated is a gzip-compressed labels file that ends before its
// stream does: cut short by a copy or download that stopped, or damaged.
var ErrTruncated = errors.New("the gzip stream ends early: the file is truncated or damaged")

// cutReader says ErrTruncated where the gzip reader says only
// io.ErrUnexpectedEOF.
type cutReader struct{ r io.Reader }

func (c cutReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = ErrTruncated
	}
	return n, err
}

// lines iterates over the lines of a reader, without the line end.
type lines struct {
	br   *bufio.Reader
	n    int // current line number, from 1
	long []byte
}

// next returns the next line; tooLong reports a line over MaxLine (its
// content is dropped). err is io.EOF at the end.
func (l *lines) next() (line []byte, tooLong bool, err error) {
	l.long = l.long[:0]
	for {
		frag, err := l.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if !tooLong {
				l.long = append(l.long, frag...)
				if len(l.long) > MaxLine {
					tooLong, l.long = true, l.long[:0]
				}
			}
			continue
		}
		if err != nil && err != io.EOF {
			return nil, false, err
		}
		if err == io.EOF && len(frag) == 0 && len(l.long) == 0 && !tooLong {
			return nil, false, io.EOF
		}
		l.n++
		if tooLong {
			return nil, true, nil
		}
		if len(l.long) > 0 {
			line = append(l.long, frag...)
		} else {
			line = frag
		}
		if len(line) > MaxLine {
			return nil, true, nil
		}
		line = bytes.TrimSuffix(line, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		return line, false, nil
	}
}

// builder accumulates ids and cluster keys.
type builder struct {
	lb       *Labels
	clusters map[string]int32
}

func newBuilder(name string, f Format) *builder {
	return &builder{
		lb:       &Labels{Name: name, Format: f, index: map[string]int32{}},
		clusters: map[string]int32{},
	}
}

// add records id in cluster key; it reports false for a repeated id.
func (b *builder) add(id, key string) bool {
	if _, dup := b.lb.index[id]; dup {
		b.lb.Issues.duplicate(id)
		return false
	}
	c, ok := b.clusters[key]
	if !ok {
		c = int32(len(b.clusters))
		b.clusters[key] = c
	}
	b.lb.index[id] = int32(len(b.lb.IDs))
	b.lb.IDs = append(b.lb.IDs, id)
	b.lb.Cluster = append(b.lb.Cluster, c)
	return true
}

func (b *builder) done() *Labels {
	b.lb.NumClusters = len(b.clusters)
	b.lb.Issues.Empty = len(b.lb.IDs) == 0
	return b.lb
}

var errTooMany = errors.New("more than 2^31-1 records")

func readJSONL(br *bufio.Reader, name string) (*Labels, error) {
	b := newBuilder(name, JSONL)
	ls := &lines{br: br}
	for {
		line, tooLong, err := ls.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, ls.n+1, err)
		}
		if tooLong {
			b.lb.Issues.malformed(name, ls.n, "line longer than %d bytes", MaxLine)
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		id, key, msg := parseRecord(line)
		if msg != "" {
			b.lb.Issues.malformed(name, ls.n, "%s", msg)
			continue
		}
		if len(b.lb.IDs) == 1<<31-1 {
			return nil, fmt.Errorf("%s:%d: %w", name, ls.n, errTooMany)
		}
		b.add(id, key)
	}
	return b.done(), nil
}

// parseRecord returns the id and cluster of one JSONL line, or a reason
// why it is malformed.
func parseRecord(line []byte) (id, cluster, msg string) {
	var rec struct {
		ID      json.RawMessage `json:"id"`
		Cluster json.RawMessage `json:"cluster"`
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		return "", "", "not a JSON object: " + err.Error()
	}
	id, msg = scalar(rec.ID, "id")
	if msg != "" {
		return "", "", msg
	}
	cluster, msg = scalar(rec.Cluster, "cluster")
	return id, cluster, msg
}

// scalar returns a JSON string's value or a JSON number's text.
func scalar(raw json.RawMessage, field string) (string, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", fmt.Sprintf("no %q field", field)
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Sprintf("%q: %v", field, err)
		}
		return s, ""
	case c == '-' || c >= '0' && c <= '9':
		return string(raw), ""
	}
	return "", fmt.Sprintf("%q must be a string or a number, not %s", field, truncate(raw, 20))
}

// truncate shortens b to n terminal columns (human.Clip): on a rune, where
// a cut at n bytes split a Chinese character.
func truncate(b []byte, n int) string { return human.Clip(string(b), n) }

func readPairs(br *bufio.Reader, name string, opts ReadOptions) (*Labels, error) {
	positive := opts.Positive
	if positive == nil {
		positive = []string{"1"}
	}
	ls := &lines{br: br}
	// Header: the first non-blank line.
	for {
		line, tooLong, err := ls.next()
		if err == io.EOF {
			lb := newBuilder(name, PairsTSV).done()
			return lb, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, ls.n+1, err)
		}
		if tooLong {
			return nil, fmt.Errorf("%s:%d: header longer than %d bytes", name, ls.n, MaxLine)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		f := strings.Split(string(line), "\t")
		if len(f) < 3 || !strings.EqualFold(strings.TrimSpace(f[0]), "id1") ||
			!strings.EqualFold(strings.TrimSpace(f[1]), "id2") || !strings.EqualFold(strings.TrimSpace(f[2]), "label") {
			return nil, fmt.Errorf("%s:%d: not JSONL (the line does not start with '{') and not a pairs file (the header must start with id1<TAB>id2<TAB>label): %q",
				name, ls.n, truncate(line, 60))
		}
		break
	}

	lb := &Labels{Name: name, Format: PairsTSV, index: map[string]int32{}}
	labelIdx := map[string]int32{}
	var parent []int32 // union-find over ids
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	idOf := func(id string) int32 {
		if k, ok := lb.index[id]; ok {
			return k
		}
		k := int32(len(lb.IDs))
		lb.index[id] = k
		lb.IDs = append(lb.IDs, id)
		parent = append(parent, k)
		return k
	}
	for {
		line, tooLong, err := ls.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, ls.n+1, err)
		}
		if tooLong {
			lb.Issues.malformed(name, ls.n, "line longer than %d bytes", MaxLine)
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		f := bytes.SplitN(line, []byte{'\t'}, 4)
		if len(f) < 3 {
			lb.Issues.malformed(name, ls.n, "%d tab-separated field(s), want at least 3 (id1, id2, label)", len(f))
			continue
		}
		id1, id2, label := string(f[0]), string(f[1]), string(bytes.TrimSpace(f[2]))
		if id1 == "" || id2 == "" {
			lb.Issues.malformed(name, ls.n, "empty id")
			continue
		}
		if len(lb.IDs) >= 1<<31-2 {
			return nil, fmt.Errorf("%s:%d: %w", name, ls.n, errTooMany)
		}
		a, b := idOf(id1), idOf(id2)
		l, ok := labelIdx[label]
		if !ok {
			l = int32(len(lb.PairLabels))
			labelIdx[label] = l
			lb.PairLabels = append(lb.PairLabels, label)
			isPos := false
			for _, p := range positive {
				if p == label {
					isPos = true
				}
			}
			lb.Positive = append(lb.Positive, isPos)
		}
		lb.Pairs = append(lb.Pairs, LabelledPair{A: a, B: b, Label: l})
		if lb.Positive[l] {
			if ra, rb := find(a), find(b); ra != rb {
				parent[max(ra, rb)] = min(ra, rb)
			}
		}
	}
	// Clusters: components, numbered in order of first appearance.
	lb.Cluster = make([]int32, len(lb.IDs))
	num := map[int32]int32{}
	for k := range lb.IDs {
		r := find(int32(k))
		c, ok := num[r]
		if !ok {
			c = int32(len(num))
			num[r] = c
		}
		lb.Cluster[k] = c
	}
	lb.NumClusters = len(num)
	lb.Issues.Empty = len(lb.IDs) == 0
	return lb, nil
}
