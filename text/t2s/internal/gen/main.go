// Command gen builds t2s.dat.gz, the Traditional-to-Simplified data embedded
// by package t2s, from OpenCC's dictionaries.
//
// It runs OpenCC's opencc_dict tool (Debian packages opencc and
// libopencc-data) to dump TSPhrases.ocd2 and TSCharacters.ocd2 to text, keeps
// the first candidate of every entry (the one OpenCC's converter uses), sorts
// the entries and writes them, gzip-compressed with a fixed header, in the
// format that package t2s reads:
//
//	neardup-t2s 1
//	# free-form comment lines
//	P <number of phrase entries>
//	<traditional phrase> TAB <simplified phrase>
//	...
//	C <number of character entries>
//	<traditional character> TAB <simplified character>
//	...
//
// Usage (from text/t2s, normally through go generate):
//
//	go run ./internal/gen -o t2s.dat.gz
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("t2s gen: ")
	dir := flag.String("dict-dir", "/usr/share/opencc", "directory holding OpenCC's .ocd2 dictionaries")
	tool := flag.String("opencc-dict", "opencc_dict", "path of OpenCC's opencc_dict tool")
	out := flag.String("o", "t2s.dat.gz", "output file")
	flag.Parse()

	tmp, err := os.MkdirTemp("", "t2s-gen")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	phrases, err := dump(*tool, filepath.Join(*dir, "TSPhrases.ocd2"), tmp)
	if err != nil {
		log.Fatal(err)
	}
	chars, err := dump(*tool, filepath.Join(*dir, "TSCharacters.ocd2"), tmp)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range chars {
		if utf8.RuneCountInString(e[0]) != 1 || utf8.RuneCountInString(e[1]) != 1 {
			log.Fatalf("TSCharacters entry %q -> %q is not one character to one character", e[0], e[1])
		}
	}

	var text bytes.Buffer
	text.WriteString("neardup-t2s 1\n")
	fmt.Fprintf(&text, "# OpenCC %s: TSPhrases.ocd2 and TSCharacters.ocd2, first candidate of each entry.\n", version())
	text.WriteString("# Apache-2.0, Copyright 2010-2022 BYVoid; see LICENSE.OpenCC.\n")
	fmt.Fprintf(&text, "P %d\n", len(phrases))
	for _, e := range phrases {
		fmt.Fprintf(&text, "%s\t%s\n", e[0], e[1])
	}
	fmt.Fprintf(&text, "C %d\n", len(chars))
	for _, e := range chars {
		fmt.Fprintf(&text, "%s\t%s\n", e[0], e[1])
	}

	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		log.Fatal(err)
	}
	// The zero Header (no name, no modification time) keeps the output
	// byte-for-byte reproducible.
	if _, err := zw.Write(text.Bytes()); err != nil {
		log.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, gz.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s: %d phrases, %d characters, %d bytes (%d uncompressed)",
		*out, len(phrases), len(chars), gz.Len(), text.Len())
}

// dump converts one .ocd2 dictionary to text with opencc_dict and returns its
// entries as (key, first candidate) pairs sorted by key.
func dump(tool, ocd2, tmp string) ([][2]string, error) {
	txt := filepath.Join(tmp, strings.TrimSuffix(filepath.Base(ocd2), ".ocd2")+".txt")
	cmd := exec.Command(tool, "-i", ocd2, "-o", txt, "-f", "ocd2", "-t", "text")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w", ocd2, err)
	}
	f, err := os.Open(txt)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var entries [][2]string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		key, vals, ok := strings.Cut(sc.Text(), "\t")
		first, _, _ := strings.Cut(vals, " ")
		if !ok || key == "" || first == "" || !utf8.ValidString(key) || !utf8.ValidString(first) {
			return nil, fmt.Errorf("%s:%d: malformed entry %q", txt, line, sc.Text())
		}
		if seen[key] {
			return nil, fmt.Errorf("%s:%d: duplicate key %q", txt, line, key)
		}
		seen[key] = true
		entries = append(entries, [2]string{key, first})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", txt, err)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s: no entries", txt)
	}
	slices.SortFunc(entries, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return entries, nil
}

// version reports the installed OpenCC data package version, or "unknown".
func version() string {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", "libopencc-data").Output()
	if err != nil || len(out) == 0 {
		return "(version unknown)"
	}
	return "data package libopencc-data " + string(out)
}
