// Package sample embeds a small public-domain corpus for the demo run and
// for tests: 256 Bible verses in six English revisions of the King James
// family and the Chinese Union Version in Traditional and Simplified script.
// Each verse in each language group is a near-duplicate cluster. See NOTICE
// for provenance and license.
package sample

import _ "embed"

// Name is the file name the sample corpus reports in ids and errors.
const Name = "sample/bible.jsonl"

// JSONL is the corpus, one {"id","text","lang","version","verse"} object per
// line.
//
//go:embed bible.jsonl
var JSONL []byte
