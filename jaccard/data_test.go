package jaccard

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// readDocs reads the lower-cased "text" of up to max documents (all when max
// <= 0) of a gzipped JSONL file of the evaluation data.
func readDocs(path string, max int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	var docs []string
	for line := 1; sc.Scan() && (max <= 0 || len(docs) < max); line++ {
		var d struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		docs = append(docs, strings.ToLower(d.Text))
	}
	return docs, sc.Err()
}
