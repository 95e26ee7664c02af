package dedup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/neardup/neardup/corpus"
)

// badCorpus writes n JSONL lines (about a third repeat an earlier text)
// with, at the given 1-based lines, bad records of every kind the workers
// find: invalid JSON, not an object, no text, a text that is not a
// string, invalid UTF-8, a record over maxDoc bytes (the reader's),
// blank lines.
func badCorpus(n int, bad map[int]string) []byte {
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		if s, ok := bad[i]; ok {
			b.WriteString(s + "\n")
			continue
		}
		txt := fmt.Sprintf("record %d of the corpus: alpha beta gamma delta %d", i, i%97)
		if i%3 == 0 {
			txt = fmt.Sprintf("record %d of the corpus: alpha beta gamma delta %d", i/3, (i/3)%97)
		}
		line, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("d%d", i), "text": txt})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

var badKinds = []string{
	`{"id": "x1", "text": "unterminated}`,
	`["not", "an", "object"]`,
	`{"id": "x3", "body": "no text"}`,
	`{"id": "x4", "text": 42}`,
	"{\"id\": \"x5\", \"text\": \"bad \xff utf-8\"}",
	`{"id": "x6", "text": "` + strings.Repeat("long ", 1000) + `"}`,
	``,
	`   `,
	`{"text": "no id: FILE:LINE names it"}`,
	`{"id": 17, "text": "an id that is a number"}`,
}

// oracle reads files with the corpus readers themselves, which validate
// each record where they read it (the behaviour before records were
// parsed on the workers): the documents' ids and every record error, in
// skippedAndDamaged parts the reader's errors as a run with SkipInvalid
// reports them: the bad records' messages (Stats.SkippedErrors, before
// their limit) and the damaged files (Stats.Damaged).
func skippedAndDamaged(errs []*corpus.RecordError) (skipped []string, damaged []DamagedFile) {
	for _, e := range errs {
		if errors.Is(e, corpus.ErrCorrupt) {
			damaged = append(damaged, DamagedFileOf(e))
		} else {
			skipped = append(skipped, e.Error())
		}
	}
	return skipped, damaged
}

// order.
func oracle(t *testing.T, opts corpus.Options, stdin []byte, files []string) (ids []string, errs []*corpus.RecordError, stop error) {
	t.Helper()
	opts.OnInvalid = func(e *corpus.RecordError) error { errs = append(errs, e); return nil }
	for _, name := range files {
		var rd corpus.Reader
		if name == "-" {
			rd = corpus.NewStream(bytes.NewReader(stdin), "-", opts)
		} else {
			var err error
			if rd, err = corpus.Open(name, opts); err != nil {
				t.Fatal(err)
			}
		}
		for rd.Next() {
			ids = append(ids, rd.Doc().ID)
		}
		if err := rd.Err(); err != nil {
			t.Fatal(err)
		}
		rd.Close()
	}
	return ids, errs, nil
}

// TestParseOnWorkersAsTheReader: with JSONL parsed on the workers, a run
// skipping bad records reports exactly what the corpus readers report when
// they validate every record themselves (the skipped records' errors in
// order, the damaged files with the line and offset, the documents and
// their ids), and without SkipInvalid stops with the first error; the
// same for 1, 2, 3 and 8 workers, byte for byte. The inputs: plain, gzip
// and zstd files, standard input, a text file, and a gzip file with a bad
// record followed by damage (reported as the damage, at the bad record's
// line, as the reader does after checking the stream ahead).
func TestParseOnWorkersAsTheReader(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := map[int]string{}
	for k, s := range badKinds {
		bad[3+k*41] = s
	}
	plain := write("a.jsonl", badCorpus(600, bad))
	gz := write("b.jsonl.gz", gzipped(t, badCorpus(700, map[int]string{5: badKinds[0], 650: badKinds[3]})))
	zst := write("c.jsonl.zst", zstded(t, badCorpus(900, map[int]string{1: badKinds[4], 899: badKinds[1]})))
	txt := write("d.txt", []byte("one line\n\nanother line\none line\n"))
	// A bad record, then the stream cut short: the damage is reported at
	// the bad record's line and nothing after it is used.
	whole := gzipped(t, badCorpus(3000, map[int]string{100: badKinds[2]}))
	cut := write("e.jsonl.gz", whole[:len(whole)*3/4])
	stdin := zstded(t, badCorpus(500, map[int]string{250: badKinds[0]}))
	files := []string{plain, gz, "-", zst, txt, cut}
	opts := corpus.Options{MaxDocBytes: 4096}

	ids, errs, _ := oracle(t, opts, stdin, files)
	wantSkipped, wantDamaged := skippedAndDamaged(errs)
	if len(wantDamaged) != 1 || wantDamaged[0].Record != 100 || !strings.Contains(wantDamaged[0].Error, "found by checking the stream ahead") {
		t.Fatalf("the fixture's damage is not found from the bad record: %+v", wantDamaged)
	}

	var first string
	for _, j := range []int{1, 2, 3, 8} {
		out := filepath.Join(dir, fmt.Sprintf("clusters-%d.jsonl", j))
		cfg := Options{Workers: j}
		cfg.Method = "exact"
		st, err := Run(context.Background(), cfg, Input{Files: files, Options: opts, SkipInvalid: true, Stdin: bytes.NewReader(stdin)}, Outputs{Clusters: out})
		if err != nil {
			t.Fatalf("-j %d: %v", j, err)
		}
		if st.Skipped != len(wantSkipped) || !slices.Equal(st.SkippedErrors, wantSkipped[:min(10, len(wantSkipped))]) {
			t.Errorf("-j %d: skipped %d %q\nwant %d %q", j, st.Skipped, st.SkippedErrors, len(wantSkipped), wantSkipped)
		}
		if !slices.Equal(st.Damaged, wantDamaged) {
			t.Errorf("-j %d: damaged %+v\nwant %+v", j, st.Damaged, wantDamaged)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var c struct{ ID string }
			json.Unmarshal([]byte(line), &c)
			got = append(got, c.ID)
		}
		if !slices.Equal(got, ids) {
			t.Errorf("-j %d: %d documents, want %d as the readers give them", j, len(got), len(ids))
		}
		if j == 1 {
			first = string(data)
		} else if string(data) != first {
			t.Errorf("-j %d: clusters differ from -j 1", j)
		}

		// Without SkipInvalid: the first bad record, as the reader says it.
		_, err = Run(context.Background(), cfg, Input{Files: files, Options: opts, Stdin: bytes.NewReader(stdin)}, Outputs{})
		var re *corpus.RecordError
		if !errors.As(err, &re) || err.Error() != errs[0].Error() {
			t.Errorf("-j %d: err = %v, want %v", j, err, errs[0])
		}
		// Only the damaged file: the bad record's line names the damage.
		_, err = Run(context.Background(), cfg, Input{Files: []string{cut}, Options: opts}, Outputs{})
		if err == nil || err.Error() != strings.TrimSpace(wantDamaged[0].Error) {
			t.Errorf("-j %d: err = %v\nwant %s", j, err, wantDamaged[0].Error)
		}
	}
}

// TestWorkerErrorsInInputOrder: a document that fails on a worker (here a
// missing --key-field) stops the run with its own error even when the
// reader has read on to a bad record after it: errors come in input
// order, whatever the number of workers. (When the reader validated the
// records, the later bad record usually won the race.)
func TestWorkerErrorsInInputOrder(t *testing.T) {
	var b bytes.Buffer
	for i := 1; i <= 2000; i++ {
		switch i {
		case 250:
			fmt.Fprintf(&b, `{"id": "d%d", "text": "no url here"}`+"\n", i)
		case 300:
			b.WriteString("{not json\n")
		default:
			fmt.Fprintf(&b, `{"id": "d%d", "url": "https://example.com/%d", "text": "document %d"}`+"\n", i, i%500, i)
		}
	}
	path := filepath.Join(t.TempDir(), "keys.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, j := range []int{1, 2, 3, 8} {
		for range 5 {
			cfg := Options{Workers: j, KeyField: "url"}
			cfg.Method = "bloom"
			_, err := Run(context.Background(), cfg, Input{Files: []string{path}}, Outputs{})
			var rec *corpus.RecordError
			if !errors.As(err, &rec) || rec.Record != 250 || rec.ID != "d250" || !strings.Contains(err.Error(), `missing field "url"`) {
				t.Fatalf("-j %d: err = %v, want line 250's (d250) missing url as a bad record", j, err)
			}
		}
	}
}

// TestDamageBeyondVerifyAhead: damage further than corpus.VerifyAhead
// after a bad record does not replace it: the record is skipped as bad and
// the damage reported at its own line, as by the reader.
func TestDamageBeyondVerifyAhead(t *testing.T) {
	if testing.Short() {
		t.Skip("40 MB of input")
	}
	var b bytes.Buffer
	b.WriteString(`{"id": "a", "text": "first"}` + "\n" + badKinds[0] + "\n")
	filler := strings.Repeat("lorem ipsum ", 64<<10/12)
	for i := 0; b.Len() < 40<<20; i++ {
		fmt.Fprintf(&b, `{"id": "f%d", "text": "%s %d"}`+"\n", i, filler, i%7)
	}
	whole := gzipped(t, b.Bytes())
	cut := filepath.Join(t.TempDir(), "far.jsonl.gz")
	if err := os.WriteFile(cut, whole[:len(whole)*97/100], 0o644); err != nil {
		t.Fatal(err)
	}
	ids, errs, _ := oracle(t, corpus.Options{}, nil, []string{cut})
	if len(errs) != 2 || errors.Is(errs[0], corpus.ErrCorrupt) || !errors.Is(errs[1], corpus.ErrCorrupt) || errs[0].Record != 2 {
		t.Fatalf("fixture: want a bad record at line 2, then damage; the reader gives %v", errs)
	}
	for _, j := range []int{1, 2} {
		cfg := Options{Workers: j}
		cfg.Method = "exact"
		st, err := Run(context.Background(), cfg, Input{Files: []string{cut}, SkipInvalid: true}, Outputs{})
		if err != nil {
			t.Fatal(err)
		}
		if st.Documents != len(ids) || st.Skipped != 1 || st.SkippedErrors[0] != errs[0].Error() ||
			len(st.Damaged) != 1 || st.Damaged[0] != DamagedFileOf(errs[1]) {
			t.Errorf("-j %d: %d documents, skipped %q, damaged %+v; want %d, %q, %+v", j, st.Documents, st.SkippedErrors, st.Damaged, len(ids), errs[0], DamagedFileOf(errs[1]))
		}
	}
}

// TestManyBadRecords: a run of bad records costs the collector's look
// ahead for damage (damageAhead) a step or two a record, not one for every
// record within corpus.VerifyAhead after each (a file of 165,000 records
// without the text field took minutes), and the outcome is still the
// reader's: in a clean file every bad record skipped, in a damaged one
// the damage reported where the reader reports it.
func TestManyBadRecords(t *testing.T) {
	const bad = 20000
	var b bytes.Buffer
	for i := range 3 {
		fmt.Fprintf(&b, `{"id": "a%d", "text": "a good document number %d"}`+"\n", i, i)
	}
	for i := range bad {
		fmt.Fprintf(&b, `{"id": "b%d", "body": "no text"}`+"\n", i)
	}
	for i := range 3 {
		fmt.Fprintf(&b, `{"id": "c%d", "text": "another good document %d"}`+"\n", i, i)
	}
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean.jsonl")
	if err := os.WriteFile(clean, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	whole := gzipped(t, b.Bytes())
	cut := filepath.Join(dir, "cut.jsonl.gz")
	if err := os.WriteFile(cut, whole[:len(whole)-40], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{clean, cut} {
		ids, errs, _ := oracle(t, corpus.Options{}, nil, []string{name})
		skipped, damaged := skippedAndDamaged(errs)
		if name == clean && len(skipped) != bad {
			t.Fatalf("fixture: the reader skips %d records, want %d", len(skipped), bad)
		}
		if name == cut && len(damaged) != 1 {
			t.Fatalf("fixture: the reader reports %d damaged files, want 1", len(damaged))
		}
		for _, j := range []int{1, 2} {
			before := damageSteps.Load()
			cfg := Options{Workers: j}
			cfg.Method = "exact"
			st, err := Run(context.Background(), cfg, Input{Files: []string{name}, SkipInvalid: true}, Outputs{})
			if err != nil {
				t.Fatal(err)
			}
			if steps := damageSteps.Load() - before; steps > 3*bad {
				t.Errorf("%s -j %d: %d steps looking ahead for damage, want at most %d", filepath.Base(name), j, steps, 3*bad)
			}
			first := skipped[:min(len(skipped), MaxSkippedErrors)]
			if st.Documents != len(ids) || st.Skipped != len(skipped) || !slices.Equal(st.SkippedErrors, first) || !slices.Equal(st.Damaged, damaged) {
				t.Errorf("%s -j %d: %d documents, %d skipped (%q), damaged %+v; the reader: %d, %d (%q), %+v",
					filepath.Base(name), j, st.Documents, st.Skipped, st.SkippedErrors, st.Damaged, len(ids), len(skipped), first, damaged)
			}
		}
	}
}

// TestKeyFieldOtherMethods: KeyField with a method that does not read a
// key is an option error (it required the field on every record, then
// ignored it).
func TestKeyFieldOtherMethods(t *testing.T) {
	for _, m := range []string{"minhash", "simhash", "exact", "jaccard", "ksentence"} {
		cfg := Options{Method: m, KeyField: "url"}
		var oe *OptionError
		if err := cfg.Validate(); !errors.As(err, &oe) || oe.Field != "KeyField" || oe.With != "Method" {
			t.Errorf("%s with KeyField: %v, want an OptionError of KeyField with Method", m, err)
		}
	}
	if err := (&Options{Method: "bloom", KeyField: "url"}).Validate(); err != nil {
		t.Errorf("bloom with KeyField: %v", err)
	}
}
