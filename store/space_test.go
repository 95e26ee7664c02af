package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/neardup/neardup/internal/smallfs"
	"github.com/neardup/neardup/sketch"
)

// fillIndex adds batches of random documents to s until a write is
// refused with ErrDiskFull, failing on any other error; it returns the ids
// acknowledged.
func fillIndex(t *testing.T, s *Store, prefix string, maxBatches int) []string {
	t.Helper()
	sk, _ := s.NewSketcher()
	r := rand.New(rand.NewPCG(uint64(len(prefix)), 7))
	var acked []string
	for i := range maxBatches {
		docs := make([]Doc, 50)
		for j := range docs {
			docs[j] = Doc{ID: fmt.Sprintf("%s-%d-%d", prefix, i, j), Sketch: sk.Sketch(strings.Join(words(r, 60), " "))}
		}
		rs, err := s.AddBatch(docs)
		if errors.Is(err, ErrDiskFull) {
			return acked
		}
		if err != nil {
			t.Fatalf("batch %d: %v, want nil or ErrDiskFull", i, err)
		}
		for j, res := range rs {
			if !res.Added {
				t.Fatalf("%s not added: %v", docs[j].ID, res.Err)
			}
			acked = append(acked, docs[j].ID)
		}
	}
	t.Fatalf("%d batches and the disk is not full: the test does not fill it", maxBatches)
	return nil
}

// settle waits, at most 10 s, until the index has no flush or compaction
// in progress and no obsolete table left to delete, and the free space of
// dir has not moved for 100 ms: under load (the race detector, CI) a
// compaction could otherwise free space after the test filled the disk
// (TestDiskFull once saw an Add accepted after Health refused).
func settle(t *testing.T, s *Store, dir string) {
	t.Helper()
	var last int64 = -1
	stable := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		m := s.db.Metrics()
		free, err := smallfs.Free(dir)
		if err != nil {
			t.Fatal(err)
		}
		if m.Compact.NumInProgress > 0 || m.Flush.NumInProgress > 0 || m.Table.ObsoleteCount > 0 || free != last {
			last, stable = free, 0
			continue
		}
		if stable++; stable == 2 {
			return
		}
	}
	t.Logf("the index did not settle in 10 s; going on")
}

// TestDiskFull fills a small tmpfs with the index, then with another
// file: writes are refused with ErrDiskFull before anything is written,
// queries go on, writes are accepted again once space is freed, and every
// acknowledged document is there after a reopen.
func TestDiskFull(t *testing.T) {
	mnt := smallfs.Mount(t, 6<<20)
	dir := filepath.Join(mnt, "idx")
	opts := Options{CacheSize: 1 << 20, MemTableSize: 256 << 10} // 1 MiB kept free
	s, err := Create(dir, sketch.Default(sketch.MinHash), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	ballast := filepath.Join(mnt, "ballast")
	smallfs.Fill(t, ballast, 4<<20) // 2 MiB to free later

	acked := fillIndex(t, s, "a", 2000)
	if len(acked) == 0 {
		t.Fatal("nothing was added before the disk was full")
	}
	// Pebble compacts and deletes obsolete files in the background,
	// freeing space a small write could then take: let it settle, then
	// keep the disk below the reserve.
	settle(t, s, mnt)
	filler := filepath.Join(mnt, "filler")
	smallfs.Fill(t, filler, 512<<10)
	if err := s.Health(); !errors.Is(err, ErrDiskFull) {
		t.Errorf("Health on a full disk = %v, want ErrDiskFull", err)
	}
	sk, _ := s.NewSketcher()
	if err := s.Add("late", sk.Sketch("a late document")); !errors.Is(err, ErrDiskFull) {
		t.Errorf("Add on a full disk = %v, want ErrDiskFull", err)
	}
	if err := s.Remove(acked[0]); !errors.Is(err, ErrDiskFull) {
		t.Errorf("Remove on a full disk = %v, want ErrDiskFull", err)
	}
	if got := s.Len(); got != int64(len(acked)) {
		t.Errorf("Len = %d, want the %d acknowledged", got, len(acked))
	}
	if _, err := s.Get(acked[len(acked)-1]); err != nil {
		t.Errorf("Get on a full disk: %v", err)
	}

	// Space freed: writes again, without reopening.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := s.Health(); err != nil {
		t.Errorf("Health after freeing space = %v", err)
	}
	if err := s.Add("late", sk.Sketch("a late document")); err != nil {
		t.Fatalf("Add after freeing space: %v", err)
	}
	acked = append(acked, "late")

	// Another process fills the disk to the last byte.
	settle(t, s, mnt)
	smallfs.Fill(t, ballast, 0)
	if err := s.Add("later", sk.Sketch("a later document")); !errors.Is(err, ErrDiskFull) {
		t.Errorf("Add on a disk filled by another file = %v, want ErrDiskFull", err)
	}
	if err := s.Close(); err != nil {
		t.Logf("Close on a full disk: %v", err)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Len(); got != int64(len(acked)) {
		t.Errorf("after reopen Len = %d, want %d", got, len(acked))
	}
	for _, id := range acked {
		if _, err := s.Get(id); err != nil {
			t.Fatalf("acknowledged %s lost: %v", id, err)
		}
	}
}

// TestReopenOnFullDisk reopens an index whose disk is still full after the
// process that filled it stopped: pebble's writable open would replay the
// write-ahead log and retry its flush without end (a process spinning in
// Open, issue 32). Open must return, read-only, answering queries with every
// acknowledged document and refusing writes with ErrDiskFull; once space
// is freed, the next Open is writable again.
func TestReopenOnFullDisk(t *testing.T) {
	mnt := smallfs.Mount(t, 6<<20)
	dir := filepath.Join(mnt, "idx")
	opts := Options{CacheSize: 1 << 20, MemTableSize: 256 << 10} // 1 MiB kept free
	s, err := Create(dir, sketch.Default(sketch.MinHash), opts)
	if err != nil {
		t.Fatal(err)
	}
	ballast := filepath.Join(mnt, "ballast")
	smallfs.Fill(t, ballast, 3<<20)
	acked := fillIndex(t, s, "a", 2000)
	smallfs.Fill(t, filepath.Join(mnt, "filler"), 64<<10)
	if err := s.Close(); err != nil {
		t.Logf("Close on a full disk: %v", err)
	}

	type opened struct {
		s   *Store
		err error
	}
	done := make(chan opened, 1)
	go func() {
		s, err := Open(dir, opts)
		done <- opened{s, err}
	}()
	var o opened
	select {
	case o = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("Open on a full disk did not return in 2 minutes")
	}
	if o.err != nil {
		t.Fatalf("Open on a full disk: %v, want a read-only index", o.err)
	}
	s = o.s
	if err := s.Health(); !errors.Is(err, ErrDiskFull) || !errors.Is(err, ErrOpenedFull) {
		t.Errorf("Health of an index opened on a full disk = %v, want ErrDiskFull and ErrOpenedFull", err)
	}
	if got := s.Len(); got != int64(len(acked)) {
		t.Errorf("Len = %d, want the %d acknowledged", got, len(acked))
	}
	for _, id := range acked {
		if _, err := s.Get(id); err != nil {
			t.Fatalf("acknowledged %s not found on the read-only index: %v", id, err)
		}
	}
	sk, _ := s.NewSketcher()
	if err := s.Add("late", sk.Sketch("a late document")); !errors.Is(err, ErrDiskFull) {
		t.Errorf("Add to an index opened on a full disk = %v, want ErrDiskFull", err)
	}
	if err := s.Remove(acked[0]); !errors.Is(err, ErrDiskFull) {
		t.Errorf("Remove = %v, want ErrDiskFull", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close of the read-only index: %v", err)
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Health(); err != nil {
		t.Errorf("Health after freeing space = %v", err)
	}
	if err := s.Add("late", sk.Sketch("a late document")); err != nil {
		t.Fatalf("Add after freeing space: %v", err)
	}
	if got := s.Len(); got != int64(len(acked))+1 {
		t.Errorf("Len = %d, want %d", got, len(acked)+1)
	}
}

// TestHealthAtReserve: with exactly the reserve free, a write is refused,
// so Health must not say the index is writable (issue 32 item 4).
func TestHealthAtReserve(t *testing.T) {
	mnt := smallfs.Mount(t, 6<<20)
	dir := filepath.Join(mnt, "idx")
	opts := Options{CacheSize: 1 << 20, MemTableSize: 256 << 10}
	s, err := Create(dir, sketch.Default(sketch.MinHash), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	smallfs.Fill(t, filepath.Join(mnt, "filler"), s.space.minFree)
	sk, _ := s.NewSketcher()
	addErr := s.Add("x", sk.Sketch("one document at the reserve"))
	if !errors.Is(addErr, ErrDiskFull) {
		t.Fatalf("Add with %d bytes free = %v, want ErrDiskFull: the fill missed the reserve", s.space.minFree, addErr)
	}
	if err := s.Health(); !errors.Is(err, ErrDiskFull) {
		t.Errorf("Health with exactly the reserve free = %v, while Add gets %v", err, addErr)
	}
}
