package corpus

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorNumbers: the counts and byte sizes in the readers' errors
// have thousands separators, as the hints after them write them (the
// size error said "(19465 bytes, limit 10000)" where its hint said
// 19,465).
func TestErrorNumbers(t *testing.T) {
	if got, want := (&SizeError{Length: 19465, Limit: 10000}).Error(), "record exceeds the size limit (19,465 bytes, limit 10,000)"; got != want {
		t.Errorf("SizeError: %q, want %q", got, want)
	}
	if got, want := (&SizeError{Limit: 16 << 20}).Error(), "record exceeds the size limit (more than the limit of 16,777,216 bytes)"; got != want {
		t.Errorf("SizeError without a length: %q, want %q", got, want)
	}

	dir := t.TempDir()
	record := func(uri string, length int, block string) string {
		return fmt.Sprintf("WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: %s\r\nContent-Length: %d\r\n\r\n%s", uri, length, block)
	}
	body := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + strings.Repeat("x", 15000)
	manyHeaders := "WARC/1.0\r\nWARC-Type: response\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 1000)+"\r\n", 1100) + "Content-Length: 0\r\n\r\n"
	parquetFooter := "PAR1" + strings.Repeat("\x00", 12000) + "\x50\xc3\x00\x00" + "PAR1" // a footer length of 50,000
	for _, c := range []struct {
		name, data, want string
	}{
		// A block cut short by the end of the file.
		{"cut.warc", record("http://a/", 20000, body), "record truncated: 15,045 of 20,000 bytes"},
		// A Content-Length past the next record: the bytes after the
		// header are scanned again.
		{"long.warc", record("http://a/", 40000, body+"\r\n\r\n"+record("http://b/", 5, "HTTP/")), "Content-Length 40000 is wrong: the input ends 15,134 bytes after the header"},
		{"line.warc", "WARC/1.0\r\nX-Long: " + strings.Repeat("l", 70000) + "\r\n\r\n", "header line longer than 65,536 bytes"},
		{"header.warc", manyHeaders, "header longer than 1,048,576 bytes"},
		{"footer.parquet", parquetFooter, "footer of 50,000 bytes in a file of 12,012 bytes"},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		var msgs []string
		r, err := Open(p, Options{OnInvalid: func(e *RecordError) error { msgs = append(msgs, e.Error()); return nil }})
		if err == nil {
			for r.Next() {
			}
			if err = r.Err(); err != nil {
				msgs = append(msgs, err.Error())
			}
			r.Close()
		} else {
			msgs = append(msgs, err.Error())
		}
		if !strings.Contains(strings.Join(msgs, "\n"), c.want) {
			t.Errorf("%s: %q, want %q", c.name, msgs, c.want)
		}
	}

	// A file that changed since its documents were counted.
	p := filepath.Join(dir, "changed.jsonl")
	if err := os.WriteFile(p, []byte(strings.Repeat(`{"text":"a line of the corpus"}`+"\n", 400)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(p, Options{Start: Position{Size: 20000}})
	if want := "changed.jsonl: 12,800 bytes, where it had 20,000 when its documents were counted"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("changed file: %v, want %q", err, want)
	}
}
