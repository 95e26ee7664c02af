// Package lsh finds candidate near-duplicates among MinHash signatures by
// banding (locality-sensitive hashing; Indyk and Motwani, STOC 1998; Leskovec,
// Rajaraman and Ullman, "Mining of Massive Datasets", chapter 3).
//
// # Banding
//
// A signature of K slots is cut into b bands of r rows (b*r <= K). Two
// documents are candidates when they agree on every row of at least one
// band. For documents of Jaccard similarity s and independent slots this
// happens with probability
//
//	P(s) = 1 - (1 - s^r)^b
//
// (Params.Probability), an S-curve that rises most steeply near
// (1/b)^(1/r) (Params.Threshold). Seed 002's example: s = 0.4, r = 3,
// b = 100 gives 0.9986585.
//
// # Choosing b and r
//
// Optimal chooses (b, r) for a threshold t the way datasketch's MinHashLSH
// does: it minimises w_fp * ∫_0^t P(s) ds + w_fn * ∫_t^1 (1 - P(s)) ds over
// all b*r <= K (default weights 0.5 and 0.5). With 128 permutations that
// gives 25x5 at t = 0.5, 14x9 at 0.7, 9x13 at 0.8 and 5x25 at 0.9; with 256,
// 42x6, 25x10, 17x15 and 9x28. The areas treat all similarities alike, so
// at high thresholds the rule misses many true pairs: with 5x25,
// P(0.9) = 0.31. ForRecall instead picks the banding with the fewest false
// positives among those with P(t) >= a target recall.
//
// # Index
//
// Index keeps one hash table per band from a 64-bit band key (AppendKeys)
// to a chain of ids. Insert, Query (candidate ids), QuerySimilar (with the
// estimated similarity), and Remove. Query time is the total size of the
// query's b buckets; memory is documented on Index.
//
// # Concurrency and errors
//
// Params and its functions are values and safe for concurrent use. An
// Index may be queried by many goroutines at once while none writes.
// Invalid thresholds, permutations, bandings, weights and recalls are errors
// (ErrThreshold, ErrNumPerm, ErrParams, ErrWeights, ErrRecall), as are
// signatures of the wrong length (ErrLength) and unknown or repeated ids
// (ErrNotFound, ErrExists), and ids above MaxID (ErrID). Nothing panics on
// input.
package lsh
