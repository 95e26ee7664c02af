package dedup

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/text"
)

// TestStagedSketchDamage: a damaged or cut staged sketch is an error,
// never a panic, and an intact one decodes to what was encoded.
func TestStagedSketchDamage(t *testing.T) {
	docs := []corpus.Document{{ID: "a", Text: "the quick brown fox jumps over the lazy dog again and again"}, {ID: "b", Text: "   "}}
	var got []SignedDoc
	open := func(name string, opts corpus.Options) (corpus.Reader, error) {
		return Docs(name, docs).Open(opts)
	}
	_, err := SketchRanges(context.Background(), Options{Workers: 1}, Input{}, open, []DocRange{{File: "mem", Lo: 0, Hi: 2}}, func(d *SignedDoc) error {
		got = append(got, SignedDoc{ID: d.ID, Len: d.Len, Sketch: append([]byte(nil), d.Sketch...), Keys: append([]uint64(nil), d.Keys...)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0].Sketch) == 0 || len(got[1].Sketch) != 0 || len(got[0].Keys) == 0 {
		t.Fatalf("signed %+v", got)
	}
	_, st, err := stagedOf(Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := st.(minhashStager).m
	b := got[0].Sketch
	var sk minhashSketch
	if _, err := m.decodeStaged(b, &sk, nil); err != nil {
		t.Fatal(err)
	}
	if again := m.appendStaged(nil, &sk, sk.keys); !bytes.Equal(again, b) {
		t.Errorf("decoded and encoded again: %d bytes, not the %d encoded", len(again), len(b))
	}
	if !slices.Equal(sk.keys, got[0].Keys) {
		t.Errorf("decoded keys %x, signed %x", sk.keys, got[0].Keys)
	}
	for n := range len(b) {
		if _, err := m.decodeStaged(b[:n], &sk, nil); err == nil {
			t.Errorf("cut at %d of %d: no error", n, len(b))
		}
	}
	for k := range len(b) {
		c := append([]byte(nil), b...)
		c[k] ^= 0xff
		m.decodeStaged(c, &sk, nil) // must not panic
	}
	res, err := JoinComponents(context.Background(), Options{}, []JoinDoc{{Doc: 0, ID: "a", Sketch: b}, {Doc: 1, ID: "a2", Sketch: b}}, JoinOptions{Workers: 1, TmpDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 1 || res.Removed[0] != (Removal{Doc: 1, Cluster: "a"}) || res.Pairs != 1 {
		t.Errorf("join of two copies: %+v", res)
	}
}

// TestSignerIsSketchRanges: Signer, given the texts as Run normalises
// them, gives each document the staged sketch and keys that SketchRanges
// gives it, for every staged method and the cascade before minhash and
// simhash (a shard's copies: their content id alone; the copy of a text
// without a sketch: nothing). Signing the shard again after Reset gives
// the same.
func TestSignerIsSketchRanges(t *testing.T) {
	docs := []corpus.Document{
		{ID: "a", Text: "The quick brown fox jumps over the lazy dog again and again. It runs away!"},
		{ID: "b", Text: "the quick brown fox jumps over the lazy dog again and again, it runs away"},
		{ID: "c", Text: "   "},
		{ID: "d", Text: "Something else entirely, with a sentence.\nAnd another line of text here."},
		{ID: "a2", Text: "The quick brown fox jumps over the lazy dog again and again. It runs away!"},
		{ID: "e", Text: "!!!"},
		{ID: "e2", Text: "!!!"},
		{ID: "a3", Text: "the quick brown fox jumps over the lazy dog again and again. it runs away"},
	}
	open := func(name string, opts corpus.Options) (corpus.Reader, error) {
		return Docs(name, docs).Open(opts)
	}
	cfgs := []Options{{Method: "minhash"}, {Method: "simhash"}, {Method: "exact"}, {Method: "ksentence"},
		{Method: "minhash", Cascade: true}, {Method: "simhash", Cascade: true}}
	for _, cfg := range cfgs {
		cfg.Workers = 1
		method := cfg.Method
		if cfg.Cascade {
			method = "cascade --then " + method
		}
		var want []SignedDoc
		_, err := SketchRanges(context.Background(), cfg, Input{}, open, []DocRange{{File: "mem", Lo: 0, Hi: int64(len(docs))}}, func(d *SignedDoc) error {
			want = append(want, SignedDoc{Sketch: slices.Clone(d.Sketch), Keys: slices.Clone(d.Keys), Copy: d.Copy})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sg, err := NewSigner(cfg)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := cfg.ResolveSpec()
		if err != nil {
			t.Fatal(err)
		}
		norm, err := text.New(*spec.Normalize)
		if err != nil {
			t.Fatal(err)
		}
		var sd SignedDoc
		copies := 0
		for range 2 {
			sg.Reset()
			for i, d := range docs {
				if err := sg.Sign(&Doc{Index: i, ID: d.ID, Text: norm.Append(nil, d.Text)}, &sd); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(sd.Sketch, want[i].Sketch) || !slices.Equal(sd.Keys, want[i].Keys) || sd.Copy != want[i].Copy {
					t.Errorf("%s: document %s: Sign gives %d sketch bytes, keys %x and copy %v, SketchRanges %d, %x and %v", method, d.ID, len(sd.Sketch), sd.Keys, sd.Copy, len(want[i].Sketch), want[i].Keys, want[i].Copy)
				}
				if sd.Copy {
					copies++
				}
			}
		}
		if cfg.Cascade && copies == 0 {
			t.Errorf("%s: no copy signed", method)
		}
	}
}

// TestSketchSomeIsSketchRanges: SketchSome sketches each wanted document
// as SketchRanges does, on a shard that starts inside its file and skips
// bad records (--skip-invalid) among its documents, on several workers;
// it counts the same documents; and with nothing skipped it sketches no
// document it was not asked for (the staged scatter's second read sketches
// only the documents of components, nor parses one: their ids are empty).
func TestSketchSomeIsSketchRanges(t *testing.T) {
	var b bytes.Buffer
	docs := 0
	for i := range 400 {
		if i%37 == 5 {
			b.WriteString("{\"id\": broken\n") // a bad record
			continue
		}
		fmt.Fprintf(&b, "{\"id\":\"d%d\",\"text\":\"document %d says %s and more words to shingle here\"}\n", i, i%50, strings.Repeat("w", i%7+1))
		docs++
	}
	for _, bad := range []bool{true, false} {
		data := b.Bytes()
		if !bad {
			data = regexp.MustCompile(`(?m)^\{"id": broken\n`).ReplaceAll(bytes.Clone(data), nil)
		}
		file := filepath.Join(t.TempDir(), "in.jsonl")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		in := Input{SkipInvalid: true}
		ranges := []DocRange{{File: file, Lo: 20, Hi: -1}}
		for _, method := range []string{"minhash", "simhash"} {
			cfg := Options{Method: method, Workers: 3, Verify: method == "simhash"}
			var all [][]byte
			var ids []string
			st, err := SketchRanges(context.Background(), cfg, in, corpus.Open, ranges, func(d *SignedDoc) error {
				all = append(all, slices.Clone(d.Sketch))
				ids = append(ids, d.ID)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if bad && st.Skipped == 0 {
				t.Fatalf("%s: no record skipped", method)
			}
			var want []uint32
			for i := range all {
				if i%3 == 1 || i == len(all)-1 {
					want = append(want, uint32(i))
				}
			}
			n, extra, parsed := 0, 0, 0
			_, err = SketchSome(context.Background(), cfg, in, corpus.Open, ranges, want, st.Skipped, func(d *SignedDoc) error {
				wanted := slices.Contains(want, uint32(n))
				switch {
				case n >= len(all):
				case wanted && !bytes.Equal(d.Sketch, all[n]):
					t.Errorf("%s (bad records %v): document %d (%s): %d sketch bytes, SketchRanges %d", method, bad, n, d.ID, len(d.Sketch), len(all[n]))
				case wanted && d.ID != ids[n]:
					t.Errorf("%s (bad records %v): document %d: id %q, SketchRanges %q", method, bad, n, d.ID, ids[n])
				case !wanted && len(d.Sketch) > 0:
					extra++
				}
				if !wanted && d.ID != "" {
					parsed++
				}
				n++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != len(all) {
				t.Errorf("%s (bad records %v): %d documents, SketchRanges %d", method, bad, n, len(all))
			}
			if !bad && extra > 0 {
				t.Errorf("%s: nothing skipped, yet %d documents not wanted were sketched", method, extra)
			}
			if !bad && parsed > 0 {
				t.Errorf("%s: nothing skipped, yet %d documents not wanted were parsed (they have an id)", method, parsed)
			}
			t.Logf("%s (bad records %v): %d documents, %d wanted, %d more sketched, %d records skipped", method, bad, n, len(want), extra, st.Skipped)
		}
	}
}

// TestStagedIndexHits: SketchRanges looks the new documents up in an index
// (Input.AgainstIndexes) as Run does, and JoinComponents, given the hits,
// removes and names the clusters as Run does: a cluster with a document
// found goes whole, named after its first such document's indexed
// duplicate, and a document found alone counts as a cluster.
func TestStagedIndexHits(t *testing.T) {
	texts := []string{
		"alpha beta gamma delta epsilon zeta eta theta",          // n0: kept alone
		"one two three four five six seven eight nine",           // n1: found as old-1
		"one two three four five six seven eight ten",            // n2: with n1
		"unrelated words that stay in the output alone",          // n3: found alone as old-3
		"red orange yellow green blue indigo violet black",       // n4: kept with n5
		"red orange yellow green blue indigo violet white",       // n5
		"north south east west up down left right forward",       // n6: found as old-6
		"north south east west up down left right backward",      // n7: found as old-7, named old-6
		"lorem ipsum dolor sit amet consectetur adipiscing elit", // n8: alone
	}
	ix := fakeIndex{texts[1]: "old-1", texts[3]: "old-3", texts[6]: "old-6", texts[7]: "old-7"}
	dir := t.TempDir()
	in := writeTexts(t, dir, texts, "n%d")
	for _, method := range []string{"minhash", "exact", "simhash"} {
		cfg := Options{}
		cfg.Method, cfg.Spec.Threshold, cfg.Spec.Shingle.N, cfg.Workers = method, 0.5, 2, 1
		if method == "exact" {
			cfg.Spec.Shingle.N = 0
		}
		out := Outputs{Clusters: filepath.Join(dir, method+".jsonl")}
		st, err := Run(context.Background(), cfg, Input{Files: []string{in}, AgainstIndexes: []Index{ix}}, out)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(out.Clusters)
		if err != nil {
			t.Fatal(err)
		}
		var docs []JoinDoc
		hits := map[int64]string{}
		sst, err := SketchRanges(context.Background(), cfg, Input{AgainstIndexes: []Index{ix}}, corpus.Open, []DocRange{{File: in, Lo: 0, Hi: -1}}, func(d *SignedDoc) error {
			i := int64(len(docs))
			docs = append(docs, JoinDoc{Doc: i, ID: d.ID, Len: d.Len, Sketch: slices.Clone(d.Sketch)})
			if d.Index != "" {
				hits[i] = d.Index
				if d.IndexSimilarity != 0.9 {
					t.Errorf("%s: %s: similarity %v, the index gave 0.9", method, d.ID, d.IndexSimilarity)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 4 || sst.IndexMatches != 4 {
			t.Fatalf("%s: SketchRanges found %d documents in the index (stats %d), want 4: %v", method, len(hits), sst.IndexMatches, hits)
		}
		ids := make([]string, len(docs))
		for i, d := range docs {
			ids[i] = d.ID
		}
		res, err := JoinComponents(context.Background(), cfg, docs, JoinOptions{Workers: 1, TmpDir: t.TempDir(), Hits: hits, Sketched: int64(len(docs)), Documents: int64(len(docs))})
		if err != nil {
			t.Fatal(err)
		}
		removed := map[int64]string{}
		for _, rm := range res.Removed {
			removed[rm.Doc] = rm.Cluster
		}
		var got []byte
		for i, id := range ids {
			cl, rm := removed[int64(i)]
			if !rm {
				cl = id
			}
			got = AppendClusterLine(got, id, cl, !rm)
		}
		if string(got) != string(want) {
			t.Errorf("%s: the join's clusters\n%s\nRun's\n%s", method, got, want)
		}
		if res.Clusters != st.Clusters || len(docs)-len(res.Removed) != st.Kept {
			t.Errorf("%s: the join: %d clusters, %d kept; Run: %d, %d", method, res.Clusters, len(docs)-len(res.Removed), st.Clusters, st.Kept)
		}
	}
}
