package store_test

import (
	"slices"
	"testing"

	"github.com/neardup/neardup/internal/redistest"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/store"
)

// testUpgrade: an estimate-only index (what every index made before sets
// were kept is: format 3, records without sets) holding the first half of
// a corpus is upgraded from the same texts, and then decides the second
// half exactly as an index that kept sets from the start.
func testUpgrade(t *testing.T, old, fresh store.Index, reopen func() store.Index) {
	docs := groupsCorpus(40, 4, 120, 3)
	half := len(docs) / 2
	sk, err := store.NewSketcher(old.Spec())
	if err != nil {
		t.Fatal(err)
	}
	var first []store.Doc
	for _, d := range docs[:half] {
		s := sk.Sketch(d.Text)
		s.Sig = slices.Clone(s.Sig)
		first = append(first, store.Doc{ID: d.ID, Sketch: s})
	}
	for _, ix := range []store.Index{old, fresh} {
		if _, err := ix.AddBatch(first); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := old.Stats(); err != nil || st.Sets {
		t.Fatalf("estimate-only stats: sets %v, %v", st.Sets, err)
	}
	if g, err := old.Get(first[0].ID); err != nil || g.Set != nil {
		t.Fatalf("Get of an estimate-only record: set of %d, %v", len(g.Set), err)
	}
	old.Close()
	ix := reopen()
	defer ix.Close()
	changed := store.Doc{ID: first[1].ID, Sketch: sk.Sketch(docs[half+1].Text)}
	changed.Sketch.Sig = slices.Clone(changed.Sketch.Sig)
	in := append(slices.Clone(first[2:]), changed, store.Doc{ID: "nobody", Sketch: first[0].Sketch})
	res, err := ix.Upgrade(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.UpgradeResult{Upgraded: len(first) - 2, Changed: 1, Missing: 1}); res != want {
		t.Errorf("Upgrade = %+v, want %+v", res, want)
	}
	if res, err := ix.Upgrade(first); err != nil || res.Already != len(first)-2 || res.Upgraded != 2 {
		t.Errorf("Upgrade again = %+v, %v; want the 2 left upgraded and the rest already", res, err)
	}
	if st, err := ix.Stats(); err != nil || !st.Sets {
		t.Errorf("stats after Upgrade: sets %v, %v", st.Sets, err)
	}
	if g, err := ix.Get(first[0].ID); err != nil || !slices.Equal(g.Set, first[0].Sketch.Set) {
		t.Errorf("Get after Upgrade: set of %d, %v; want %d", len(g.Set), err, len(first[0].Sketch.Set))
	}
	// The rest decided as by an index that kept sets from the start.
	got := checkAndAddAll(t, ix, docs[half:], 1)
	want := checkAndAddAll(t, fresh, docs[half:], 1)
	if d := diff(got, want); d != "" {
		t.Errorf("after Upgrade the index adds otherwise than one with sets from the start:%s", d)
	}
}

func TestUpgrade(t *testing.T) {
	p := sketch.Default(sketch.MinHash)
	dir := t.TempDir()
	old, err := store.Create(dir, p, store.Options{EstimateOnly: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := store.Create(t.TempDir(), p, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	testUpgrade(t, old, fresh, func() store.Index {
		s, err := store.Open(dir, store.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	s, err := store.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st, _ := s.Stats(); !st.Sets || st.FormatVersion != store.FormatVersion {
		t.Errorf("reopened: sets %v, format %d", st.Sets, st.FormatVersion)
	}
}

func TestRedisUpgrade(t *testing.T) {
	if !redistest.Available() {
		t.Skip("no redis-server")
	}
	srv := redistest.Server(t)
	p := sketch.Default(sketch.MinHash)
	for _, layout := range []string{"one", "spread"} {
		url := srv.URL("up-"+layout) + "&layout=" + layout
		old, err := store.CreateRedis(url, p, store.Options{EstimateOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := store.CreateRedis(srv.URL("fresh-"+layout)+"&layout="+layout, p, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		testUpgrade(t, old, fresh, func() store.Index {
			r, err := store.OpenRedis(url, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return r
		})
		fresh.Close()
	}
}
