package eval

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"
)

func TestReadJSONL(t *testing.T) {
	in := "{\"id\":\"a\",\"cluster\":\"x\"}\r\n" +
		"\n" +
		`{"id": 7, "cluster": 12, "kept": true}` + "\n" +
		`{"id":"b","cluster":"x"}` + "\n" +
		`not json` + "\n" +
		`{"id":"c"}` + "\n" +
		`{"id":null,"cluster":"x"}` + "\n" +
		`{"id":"a","cluster":"y"}` + "\n" +
		`{"id":["z"],"cluster":"y"}` + "\n" +
		`{"id":"d","cluster":"\u00e9"}`
	l := mustRead(t, in)
	if l.Format != JSONL {
		t.Errorf("format %v, want JSONL", l.Format)
	}
	if want := []string{"a", "7", "b", "d"}; !slices.Equal(l.IDs, want) {
		t.Errorf("IDs = %q, want %q", l.IDs, want)
	}
	if want := []int32{0, 1, 0, 2}; !slices.Equal(l.Cluster, want) || l.NumClusters != 3 {
		t.Errorf("Cluster = %v (%d clusters), want %v (3)", l.Cluster, l.NumClusters, want)
	}
	is := l.Issues
	if is.Malformed != 4 || is.Duplicates != 1 || is.DuplicateIDs[0] != "a" || is.Empty {
		t.Errorf("issues %+v, want 4 malformed, 1 duplicate (a)", is)
	}
	for i, line := range []string{"test:5:", "test:6:", "test:7:", "test:9:"} {
		if !strings.HasPrefix(is.MalformedLines[i], line) {
			t.Errorf("malformed line %d = %q, want prefix %q", i, is.MalformedLines[i], line)
		}
	}
	if !strings.Contains(is.MalformedLines[1], `no "cluster" field`) {
		t.Errorf("message %q does not name the missing field", is.MalformedLines[1])
	}
	if l.Index("b") != 2 || l.Index("zz") != -1 {
		t.Errorf("Index(b) = %d, Index(zz) = %d, want 2, -1", l.Index("b"), l.Index("zz"))
	}
	msgs := is.Messages("t.jsonl")
	if len(msgs) != 2 || !strings.Contains(msgs[0], "4 malformed") || !strings.Contains(msgs[1], `"a"`) {
		t.Errorf("Messages = %q", msgs)
	}
}

func TestReadLongLineAndGzip(t *testing.T) {
	long := `{"id":"` + strings.Repeat("x", MaxLine) + `","cluster":"1"}`
	in := `{"id":"a","cluster":"1"}` + "\n" + long + "\n" + `{"id":"b","cluster":"1"}` + "\n" + long
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(in))
	zw.Close()
	for name, data := range map[string][]byte{"plain": []byte(in), "gzip": gz.Bytes()} {
		l, err := Read(bytes.NewReader(data), name, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(l.IDs, []string{"a", "b"}) || l.Issues.Malformed != 2 ||
			!strings.HasPrefix(l.Issues.MalformedLines[0], name+":2: line longer") ||
			!strings.HasPrefix(l.Issues.MalformedLines[1], name+":4: line longer") {
			t.Errorf("%s: IDs %q issues %+v", name, l.IDs, l.Issues)
		}
	}
	if _, err := Read(bytes.NewReader(gz.Bytes()[:20]), "cut.gz", ReadOptions{}); !errors.Is(err, ErrTruncated) || !strings.HasPrefix(err.Error(), "cut.gz:") {
		t.Errorf("a truncated gzip stream: %v, want ErrTruncated naming the file", err)
	}
}

func TestReadEmpty(t *testing.T) {
	for _, in := range []string{"", "\n\n  \n", "garbage\n"} {
		l, err := Read(strings.NewReader(in), "e", ReadOptions{})
		if in == "garbage\n" {
			if err == nil {
				t.Errorf("Read(%q): no error for a file that is neither JSONL nor pairs", in)
			}
			continue
		}
		if err != nil || !l.Issues.Empty || l.Len() != 0 {
			t.Errorf("Read(%q) = %+v, %v; want empty", in, l, err)
		}
	}
	l := mustRead(t, "{\n")
	if !l.Issues.Empty || l.Issues.Malformed != 1 {
		t.Errorf("only malformed lines: issues %+v, want empty and 1 malformed", l.Issues)
	}
}

func TestReadPairs(t *testing.T) {
	in := "id1\tid2\tlabel\tjaccard\n" +
		"a\tb\t1\t0.9\n" +
		"b\tc\t1\t0.8\n" +
		"c\td\t0\t0.7\n" + // negative: d stays alone
		"e\tf\t1\n" +
		"a\tc\t0\n" + // negative inside a component: transitivity wins
		"b\ta\t1\n" + // repeated pair: counted again
		"g\n" + // malformed
		"\tx\t1\n" // malformed: empty id
	l := mustRead(t, in)
	if l.Format != PairsTSV {
		t.Fatalf("format %v, want PairsTSV", l.Format)
	}
	if want := []string{"a", "b", "c", "d", "e", "f"}; !slices.Equal(l.IDs, want) {
		t.Errorf("IDs %q, want %q", l.IDs, want)
	}
	if want := []int32{0, 0, 0, 1, 2, 2}; !slices.Equal(l.Cluster, want) || l.NumClusters != 3 {
		t.Errorf("Cluster %v (%d), want %v (3)", l.Cluster, l.NumClusters, want)
	}
	if l.Issues.Duplicates != 0 || l.Issues.Malformed != 2 ||
		!strings.HasPrefix(l.Issues.MalformedLines[0], "test:8:") || !strings.HasPrefix(l.Issues.MalformedLines[1], "test:9: empty id") {
		t.Errorf("issues %+v", l.Issues)
	}
	if len(l.Pairs) != 6 || !slices.Equal(l.PairLabels, []string{"1", "0"}) || !slices.Equal(l.Positive, []bool{true, false}) {
		t.Errorf("pairs %v labels %q positive %v", l.Pairs, l.PairLabels, l.Positive)
	}

	// Categories.
	l = mustReadOpts(t, "ID1\tID2\tLabel\nx\to\tcut\ny\to\theavy\n", ReadOptions{Positive: []string{"cut", "light"}})
	if want := []int32{0, 0, 1}; !slices.Equal(l.Cluster, want) {
		t.Errorf("categories: Cluster %v, want %v", l.Cluster, want)
	}

	// A header that is not id1 id2 label.
	if _, err := Read(strings.NewReader("a\tb\tc\nx\ty\t1\n"), "p.tsv", ReadOptions{}); err == nil ||
		!strings.Contains(err.Error(), "p.tsv:1: not JSONL") {
		t.Errorf("bad header: error %v", err)
	}
	// Header only.
	if l := mustRead(t, "id1\tid2\tlabel\n"); !l.Issues.Empty {
		t.Errorf("header only: %+v, want empty", l.Issues)
	}
}

// failReader fails after its data.
type failReader struct{ r *strings.Reader }

func (f failReader) Read(p []byte) (int, error) {
	if f.r.Len() == 0 {
		return 0, errors.New("disk on fire")
	}
	return f.r.Read(p)
}

func TestReadIOError(t *testing.T) {
	for _, in := range []string{`{"id":"a","cluster":"1"}` + "\n", "id1\tid2\tlabel\na\tb\t1\n"} {
		_, err := Read(failReader{strings.NewReader(in)}, "f", ReadOptions{})
		if err == nil || !strings.Contains(err.Error(), "disk on fire") {
			t.Errorf("Read(%q) error = %v, want the I/O error", in, err)
		}
	}
}

// TestSharedData checks the readers and Score on the evaluation corpora
// when they are beside the project: a truth scored against itself, and
// pairs files against the partitions their READMEs say they make.
func TestSharedData(t *testing.T) {
	dir := os.Getenv("NEARDUP_DATA")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "data")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("%s absent", dir)
	}
	open := func(rel string, opts ReadOptions) *Labels {
		t.Helper()
		f, err := os.Open(filepath.Join(dir, rel))
		if err != nil {
			t.Skipf("%v", err)
		}
		defer f.Close()
		l, err := Read(f, rel, opts)
		if err != nil {
			t.Fatal(err)
		}
		if l.Issues.Any() {
			t.Fatalf("%s: %q", rel, l.Issues.Messages(rel))
		}
		return l
	}
	if raceEnabled || testing.Short() {
		t.Log("bible-kjv-family skipped under -race and -short")
	} else {
		bible(t, open)
	}
	scorePairsFiles(t, open)
}

func bible(t *testing.T, open func(string, ReadOptions) *Labels) {
	bible := open("bible-kjv-family/truth.jsonl.gz", ReadOptions{})
	if bible.Len() != 248812 || bible.NumClusters != 31102 {
		t.Errorf("bible truth: %d ids, %d clusters, want 248812 and 31102", bible.Len(), bible.NumClusters)
	}
	res, err := Score(bible, bible)
	if err != nil {
		t.Fatal(err)
	}
	if res.ARI != 1 || res.Pairs.F1 != 1 || res.Docs.MacroF1 != 1 {
		t.Errorf("bible against itself: ARI %v F1 %v macro F1 %v", res.ARI, res.Pairs.F1, res.Docs.MacroF1)
	}
}

func scorePairsFiles(t *testing.T, open func(string, ReadOptions) *Labels) {

	// clough: the truth puts orig, cut and light together.
	pairs := open("clough-plagiarism/pairs.tsv", ReadOptions{Positive: []string{"cut", "light"}})
	truth := open("clough-plagiarism/truth.jsonl", ReadOptions{})
	res, err := Score(pairs, truth)
	if err != nil {
		t.Fatal(err)
	}
	if res.ARI != 1 || res.Extra.Count != truth.Len()-pairs.Len() {
		t.Errorf("clough pairs (cut, light) against truth.jsonl: ARI %v, extra %d (of %d and %d ids)",
			res.ARI, res.Extra.Count, truth.Len(), pairs.Len())
	}

	// pawsx: truth.jsonl is the components of the label-1 pairs.
	pairs = open("pawsx-zh/pairs.tsv.gz", ReadOptions{})
	truth = open("pawsx-zh/truth.jsonl", ReadOptions{})
	res, err = Score(pairs, truth)
	if err != nil {
		t.Fatal(err)
	}
	if res.ARI != 1 || res.Missing.Count != 0 {
		t.Errorf("pawsx pairs against truth.jsonl: ARI %v missing %d", res.ARI, res.Missing.Count)
	}
}

// FuzzRead checks that the readers never panic and always return a
// consistent partition.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"id":"a","cluster":"x"}` + "\n" + `{"id":"b","cluster":"x"}`))
	f.Add([]byte("{\"id\":1,\"cluster\":2}\r\n\n{\"id\":\"a\"}\n{\"id\":\"1\",\"cluster\":\"3\"}\n"))
	f.Add([]byte("id1\tid2\tlabel\na\tb\t1\nb\tc\t0\nc\n"))
	f.Add([]byte("\n id1\tid2\tlabel\tx\n\t\t\n"))
	f.Add([]byte{0x1f, 0x8b, 8, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Read(bytes.NewReader(data), "fuzz", ReadOptions{Positive: []string{"1", "cut"}})
		if err != nil {
			return
		}
		if len(l.IDs) != len(l.Cluster) || l.Issues.Empty != (len(l.IDs) == 0) {
			t.Fatalf("%d ids, %d clusters, empty %v", len(l.IDs), len(l.Cluster), l.Issues.Empty)
		}
		seen := map[string]bool{}
		used := make([]bool, l.NumClusters)
		for k, id := range l.IDs {
			if seen[id] || l.Index(id) != k {
				t.Fatalf("id %q repeated or badly indexed", id)
			}
			seen[id] = true
			c := l.Cluster[k]
			if c < 0 || int(c) >= l.NumClusters {
				t.Fatalf("cluster %d out of [0, %d)", c, l.NumClusters)
			}
			used[c] = true
		}
		if !slices.Equal(used, slices.Repeat([]bool{true}, l.NumClusters)) {
			t.Fatalf("unused cluster numbers: %v", used)
		}
		for _, p := range l.Pairs {
			if int(p.A) >= len(l.IDs) || int(p.B) >= len(l.IDs) || int(p.Label) >= len(l.PairLabels) {
				t.Fatalf("pair %v out of range", p)
			}
		}
		if len(l.IDs) > 0 {
			res, err := Score(l, l)
			if err != nil || res.ARI != 1 {
				t.Fatalf("Score(l, l) = %v, %v; want ARI 1", res, err)
			}
		}
	})
}

// TestReadMalformedIDOnARune: an id that is neither a string nor a number
// is quoted in its line's message cut to 20 columns; the cut was at 20
// bytes, which split a Chinese character (invalid UTF-8 in the warning).
func TestReadMalformedIDOnARune(t *testing.T) {
	l := mustRead(t, `{"id":["a近似重复文档检测近似重复"],"cluster":"x"}`+"\n"+`{"id":"a","cluster":"x"}`)
	if len(l.Issues.MalformedLines) != 1 {
		t.Fatalf("malformed lines %q, want 1", l.Issues.MalformedLines)
	}
	m := l.Issues.MalformedLines[0]
	if !utf8.ValidString(m) || !strings.Contains(m, `not ["a近似重复文档检测…`) {
		t.Errorf("message %q: want the id cut at 20 columns on a rune, with an ellipsis", m)
	}
}
