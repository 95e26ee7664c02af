package corpus

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// damage flips bytes in the middle of the deflate data of member k of a
// per-record gzip file made by gzipMembers.
func damage(t *testing.T, records []string, k int) (data []byte, start int64) {
	t.Helper()
	for i, r := range records {
		m := []byte(gzipMembers(r))
		if i == k {
			start = int64(len(data))
			if len(m) < 30 {
				t.Fatalf("member %d is too short to damage", k)
			}
			for j := 12; j < len(m)-8; j += 3 {
				m[j] ^= 0x5a
			}
		}
		data = append(data, m...)
	}
	return data, start
}

func TestWARCGzipResync(t *testing.T) {
	body := func(n int) string { return strings.Repeat(fmt.Sprintf("record %d has some text. ", n), 20) }
	var records []string
	for i := range 5 {
		records = append(records, response(fmt.Sprintf("http://%d/", i), "Content-Type: text/plain\r\n", body(i)))
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		data  func() ([]byte, int64)
		want  []string // ids read when skipping
		gaps  int
		first string // the error without skipping names this offset
	}{
		{"damaged-member", func() ([]byte, int64) { return damage(t, records, 2) }, []string{"http://0/", "http://1/", "http://3/", "http://4/"}, 1, ""},
		{"damaged-first", func() ([]byte, int64) { return damage(t, records, 0) }, []string{"http://1/", "http://2/", "http://3/", "http://4/"}, 1, ""},
		{"garbage-between", func() ([]byte, int64) {
			a, b := []byte(gzipMembers(records[0], records[1])), []byte(gzipMembers(records[2], records[3], records[4]))
			return append(append(a, "\x1f\x8b\x08 not a member at all \x1f\x8b"...), b...), int64(len(a))
		}, []string{"http://0/", "http://1/", "http://2/", "http://3/", "http://4/"}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, start := tc.data()
			path := filepath.Join(dir, tc.name+".warc.gz")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			// Without skipping: the first damage stops the file, naming
			// the member's compressed offset.
			rd, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = readAll(rd)
			var re *RecordError
			if !errors.As(err, &re) || !errors.Is(err, ErrCorrupt) || re.File != path ||
				!strings.Contains(err.Error(), fmt.Sprintf("compressed offset %d", start)) {
				t.Fatalf("err = %v, want a RecordError of %s wrapping ErrCorrupt at compressed offset %d", err, path, start)
			}
			// Skipping: one report, and every record of an intact member.
			var reports []*RecordError
			rd, _ = Open(path, Options{OnInvalid: func(e *RecordError) error { reports = append(reports, e); return nil }})
			docs, err := readAll(rd)
			var ids []string
			for _, d := range docs {
				ids = append(ids, d.ID)
				if !strings.HasPrefix(d.Text, "record ") {
					t.Errorf("%s: text %q", d.ID, clip([]byte(d.Text), 40))
				}
			}
			if err != nil || fmt.Sprint(ids) != fmt.Sprint(tc.want) || len(reports) != tc.gaps {
				t.Errorf("skipping: read %v, %v, reports %v; want %v and %d report(s)", ids, err, reports, tc.want, tc.gaps)
			}
		})
	}
}

// TestMemberReaderTruncated: a file cut inside its last member is an
// error that ends it, also when skipping.
func TestMemberReaderTruncated(t *testing.T) {
	data := []byte(gzipMembers("one\n", strings.Repeat("two ", 500)))
	path := filepath.Join(t.TempDir(), "t.gz")
	os.WriteFile(path, data[:len(data)-20], 0o644)
	f, _ := os.Open(path)
	defer f.Close()
	got, err := io.ReadAll(newMemberReader(f, -1))
	if !errors.Is(err, ErrCorrupt) || errors.Is(err, errGzipGap) || !strings.Contains(err.Error(), "truncated") || !strings.HasPrefix(string(got), "one\ntwo") {
		t.Errorf("read %q, %v; want the data before the cut and a truncation error", clip(got, 20), err)
	}
}

// FuzzMemberReader: on intact input the member reader gives what the
// multistream gzip reader gives; on any input it ends, never panics, and
// after each gap goes on.
func FuzzMemberReader(f *testing.F) {
	f.Add([]byte(gzipMembers("a", "bb", "ccc")), uint16(0), byte(0))
	f.Add([]byte(gzipMembers("first record\n", "second record\n")), uint16(15), byte(0xff))
	f.Add([]byte("\x1f\x8b\x08\x00garbage\x1f\x8b\x08"), uint16(2), byte(1))
	f.Fuzz(func(t *testing.T, data []byte, at uint16, flip byte) {
		path := filepath.Join(t.TempDir(), "f.gz")
		damaged := bytes.Clone(data)
		if len(damaged) > 0 {
			damaged[int(at)%len(damaged)] ^= flip
		}
		if err := os.WriteFile(path, damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		file, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		m := newMemberReader(file, -1)
		var got []byte
		buf := make([]byte, 4096)
		for reads := 0; ; reads++ {
			if reads > 1<<20 {
				t.Fatal("no end")
			}
			n, err := m.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF || (err != nil && !errors.Is(err, errGzipGap)) {
				break
			}
			if len(got) > 64<<20 {
				return // a tiny header may claim a huge stream: not our concern here
			}
		}
		if flip != 0 {
			return
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		want, err := io.ReadAll(io.LimitReader(zr, 64<<20))
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("member reader gave %q, gzip %q", clip(got, 60), clip(want, 60))
		}
	})
}

// TestWARCGzipResyncSample damages one member of a real archive,
// recompressed with one gzip member per record as Common Crawl writes
// them: skipping, only that member's record is lost.
func TestWARCGzipResyncSample(t *testing.T) {
	f, err := os.Open(filepath.Join(sampleDir, "clueweb09-en0000-00.warc.gz"))
	if err != nil {
		t.Skip("no sample archive:", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	var starts []int
	for len(plain) > 0 {
		end := len(plain)
		if i := bytes.Index(plain[1:], []byte("\n\nWARC/0.18\n")); i >= 0 {
			end = i + 3 // after the blank line that ends the record
		}
		starts = append(starts, len(data))
		data = append(data, gzipMembers(string(plain[:end]))...)
		plain = plain[end:]
	}
	if len(starts) < 10 {
		t.Fatalf("%d records", len(starts))
	}
	read := func(b []byte) (ids []string, reports int) {
		path := filepath.Join(t.TempDir(), "s.warc.gz")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		rd, err := Open(path, Options{OnInvalid: func(*RecordError) error { reports++; return nil }})
		if err != nil {
			t.Fatal(err)
		}
		docs, err := readAll(rd)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			ids = append(ids, d.ID)
		}
		return ids, reports
	}
	all, _ := read(data)
	k := len(starts) / 2
	damaged := bytes.Clone(data)
	for j := starts[k] + 20; j < starts[k+1]-10; j += 7 {
		damaged[j] ^= 0xa5
	}
	got, reports := read(damaged)
	if reports != 1 || len(got) < len(all)-1 || got[len(got)-1] != all[len(all)-1] {
		t.Errorf("damaged member %d of %d: read %d of %d documents (last %q, want %q), %d reports; want at most one lost and one report",
			k, len(starts), len(got), len(all), got[len(got)-1], all[len(all)-1], reports)
	}
}
