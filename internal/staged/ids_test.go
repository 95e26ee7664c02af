package staged

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/objstore"
)

// TestDuplicateIDsMatchDedup: the duplicate ids counted from sign runs
// partitioned by hash (several shards, several runs a shard, as a sign
// task that spilled writes them) are dedup's count and list, in dedup's
// order (by each id's second document), for inputs with many repeated ids.
func TestDuplicateIDsMatchDedup(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 11))
		ids := make([]string, 2000+rng.IntN(2000))
		pool := 500 + rng.IntN(3000)
		for i := range ids {
			ids[i] = fmt.Sprintf("id-%d", rng.IntN(pool))
			if rng.IntN(50) == 0 {
				ids[i] = "" // an empty id is an id
			}
		}
		const shards, parts = 4, 3
		work, err := objstore.Open(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		j := &Job{Work: work, Plan: &Plan{Tasks: parts}}
		off := make([]int64, shards+1)
		runs := make([]int, shards)
		for s := range shards {
			off[s+1] = int64(len(ids)) * int64(s+1) / shards
			if s == 1 {
				off[s+1] = off[s] // an empty shard
			}
			// The shard in runs cut at random documents.
			lo := off[s]
			for lo < off[s+1] || runs[s] == 0 {
				hi := min(lo+1+rng.Int64N(700), off[s+1])
				var arena []byte
				part := make([][]idEntry, parts)
				for i := lo; i < hi; i++ {
					at := len(arena)
					arena = append(arena, ids[i]...)
					e := idEntry{hash: idHash(arena[at:]), doc: uint32(i - off[s]), at: uint32(at), n: uint32(len(ids[i]))}
					part[e.hash%parts] = append(part[e.hash%parts], e)
				}
				err := work.Put(ctx, signBuckets(s, runs[s]), func(w io.Writer) error {
					pw := newPackWriter(w, 2*parts)
					for q := range parts {
						pw.section(2*q + 1)
						if _, err := pw.Write(appendIDRun(nil, part[q], arena)); err != nil {
							return err
						}
					}
					return pw.finish()
				})
				if err != nil {
					t.Fatal(err)
				}
				runs[s]++
				lo = hi
			}
		}
		for q := range parts {
			packs := make([][]*packIndex, shards)
			for s := range shards {
				for r := range runs[s] {
					px, err := j.readPack(ctx, signBuckets(s, r), 2*parts, 2*q, 2)
					if err != nil {
						t.Fatal(err)
					}
					packs[s] = append(packs[s], px)
				}
			}
			d, err := j.countDupIDs(ctx, q, packs, off, 4096)
			if err != nil {
				t.Fatal(err)
			}
			if err := work.PutBytes(ctx, bucketIDs(q), d.marshal()); err != nil {
				t.Fatal(err)
			}
		}
		n, first, err := j.duplicateIDs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantN, wantFirst := dedup.DuplicateIDs(ids)
		if n != wantN || !slices.Equal(first, wantFirst) {
			t.Errorf("seed %d (%d runs): %d duplicate ids %q, want %d %q", seed, runs, n, first, wantN, wantFirst)
		}
		if wantN <= maxListed {
			t.Errorf("seed %d: only %d duplicate ids: the list is not cut", seed, wantN)
		}
	}
}
