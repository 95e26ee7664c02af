package corpus

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRoundTrip reads every input format, writes the documents in every
// output format and reads them again: the ids, texts and records (as JSON
// values) must be the same.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	wget, err := os.ReadFile("testdata/wget.warc.gz")
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]string{
		"in.jsonl":     writeFile(t, dir, "in.jsonl", []byte(mixedJSONL)),
		"in.jsonl.zst": writeFile(t, dir, "in.jsonl.zst", []byte(mixedJSONL)),
		"in.txt.gz":    writeFile(t, dir, "in.txt.gz", []byte("line one\nline \"two\"\n\n日本語 three\n")),
		"wget.warc.gz": writeFile(t, dir, "wget.warc", wget), // gzip recognised by content
		"in.arc": writeFile(t, dir, "in.arc", []byte(arcFiledesc+
			arcRecord("http://h/", "text/html", "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>arc page</p>")+
			arcRecord("http://i/", "text/plain", "no envelope"))),
	}
	pq := filepath.Join(dir, "in.parquet")
	copyAll(t, inputs["in.jsonl"], pq)
	inputs["in.parquet"] = pq
	for name, src := range inputs {
		want, err := readFile(t, src, Options{})
		if err != nil || len(want) == 0 {
			t.Fatalf("%s: %d docs, %v", name, len(want), err)
		}
		for _, out := range []string{"out.jsonl", "out.jsonl.gz", "out.jsonl.zst", "out.parquet"} {
			t.Run(name+"->"+out, func(t *testing.T) {
				dst := filepath.Join(dir, name+"-"+out)
				copyAll(t, src, dst)
				got, err := readFile(t, dst, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("%d documents, want %d", len(got), len(want))
				}
				for i := range want {
					if got[i].ID != want[i].ID || got[i].Text != want[i].Text || !jsonEqual(got[i].Raw, want[i].Raw) {
						t.Errorf("document %d:\n got %+v\nwant %+v", i, got[i], want[i])
					}
				}
			})
		}
	}
}
