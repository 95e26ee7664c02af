// Package dedup finds the near-duplicate documents of a corpus and keeps
// one document of each cluster: the batch pipeline behind `neardup dedup`
// and `neardup sign`.
//
// # Pipeline
//
// [Run] reads the documents of [Input] in order (files of any format
// package corpus reads, "-" for standard input, then any [Source]: a
// corpus.Reader from anywhere, reopened for each pass), and then:
//
//  1. normalises and sketches each document on Options.Workers goroutines,
//     through package sketch: Options.Spec says how a document becomes a
//     sketch (normalisation, shingles, the method's parameters, seeds), and
//     the sketches and index keys are exactly those of the persistent
//     index and the HTTP service for the same Spec;
//  2. hands the sketches, in input order, to the method's finder, which
//     reports duplicate pairs: an LSH index with a tiered join (minhash),
//     permuted tables (simhash), hash maps (exact, ksentence), a Bloom
//     filter (bloom, bloom-overlap) or an exact similarity join (jaccard).
//     When the estimated memory exceeds Options.Memory, the keyed methods
//     spill (key, document) entries to sorted runs on disk instead;
//  3. joins the pairs into clusters (connected components, or leader
//     clustering for minhash) and keeps one document of each
//     (Options.Keep);
//  4. writes the outputs of [Outputs] (kept documents, clusters, pairs),
//     each replaced atomically only when the whole run succeeds, and
//     returns the [Stats], which record the resolved sketch.Spec.
//
// [Sign] runs step 1 only and writes every document's sketch.
//
// # Guarantees
//
//   - Deterministic: the clusters, pairs and kept documents depend only
//     on the input and Options, never on Options.Workers or scheduling.
//   - Nothing is lost silently: an invalid record stops the run with a
//     *corpus.RecordError naming file, line and id, unless
//     Input.SkipInvalid counts it; a damaged file is reported in
//     Stats.Damaged.
//   - Outputs are atomic: a failed or cancelled run leaves earlier files
//     untouched and removes its temporary files.
//   - The zero [Options] works: minhash with package sketch's defaults.
//     Invalid options are an [*OptionError] naming the field of Options,
//     wrapping [ErrOptions], [ErrConflict], [ErrUnknownMethod] or
//     sketch.ErrSpec.
//   - Memory stays within Options.Memory for the methods that can spill
//     (Stats.Memory says what was planned).
package dedup
