package sketch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/text"
)

// The serialised form of a Spec (docs/format/sketch.md). Every field is
// explicit, so that the meaning of a stored Spec does not follow later
// changes of the Go structs. The store's format-2 parameters are this form
// without "version" and without SimHash "weights" (which were counts).
type specJSON struct {
	Version   *int           `json:"version,omitempty"`
	Method    string         `json:"method"`
	Normalize normalizeJSON  `json:"normalize"`
	Shingle   *shingleJSON   `json:"shingle,omitempty"`
	Threshold float64        `json:"threshold,omitempty"`
	MinHash   *minhashJSON   `json:"minhash,omitempty"`
	SimHash   *simhashJSON   `json:"simhash,omitempty"`
	KSentence *ksentenceJSON `json:"ksentence,omitempty"`
}

type normalizeJSON struct {
	NFKC            bool   `json:"nfkc"`
	CaseFold        bool   `json:"case_fold"`
	Whitespace      bool   `json:"whitespace"`
	KeepNewlines    bool   `json:"keep_newlines"`
	Punctuation     bool   `json:"punctuation"`
	PunctuationMode string `json:"punctuation_mode"`
	Invisible       bool   `json:"invisible"`
	HTML            bool   `json:"html"`
	// HTMLAll is written when HTML is on. Absent with HTML on (a Spec
	// written before issue 31), it means true: the whole-page text that
	// the HTML step extracted then.
	HTMLAll      *bool    `json:"html_all,omitempty"`
	T2S          bool     `json:"t2s"`
	StopWords    bool     `json:"stop_words"`
	StopWordList []string `json:"stop_word_list,omitempty"`
}

type shingleJSON struct {
	Unit string `json:"unit"`
	N    int    `json:"n"`
	Seed uint64 `json:"seed"`
}

type minhashJSON struct {
	NumPerm int    `json:"num_perm"`
	Family  string `json:"family"`
	Seed    uint64 `json:"seed"`
	Bands   int    `json:"bands"`
	Rows    int    `json:"rows"`
	// Threshold is where format-2 store parameters kept the threshold.
	Threshold float64 `json:"threshold,omitempty"`
}

type simhashJSON struct {
	Bits     int    `json:"bits"`
	Distance int    `json:"distance"`
	Weights  string `json:"weights,omitempty"`
	Seed     uint64 `json:"seed"`
	Blocks   int    `json:"blocks"`
}

type ksentenceJSON struct {
	K int `json:"k"`
}

var punctModes = map[text.PunctuationMode]string{text.PunctSpace: "space", text.PunctCanonical: "canonical"}

// MarshalJSON writes the resolved Spec in its serialised form, with its
// version. An invalid Spec is an error.
func (s Spec) MarshalJSON() ([]byte, error) {
	r, err := s.Resolve()
	if err != nil {
		return nil, err
	}
	n := r.Normalize
	mode, ok := punctModes[n.PunctuationMode]
	if !ok {
		return nil, fmt.Errorf("%w: punctuation mode %d", ErrSpec, n.PunctuationMode)
	}
	v := r.Version
	j := specJSON{
		Version: &v,
		Method:  r.Method.String(),
		Normalize: normalizeJSON{
			NFKC: n.NFKC, CaseFold: n.CaseFold, Whitespace: n.Whitespace, KeepNewlines: n.KeepNewlines,
			Punctuation: n.Punctuation, PunctuationMode: mode, Invisible: n.Invisible, HTML: n.HTML,
			T2S: n.T2S, StopWords: n.StopWords, StopWordList: n.StopWordList,
		},
		Threshold: r.Threshold,
	}
	if n.HTML {
		all := n.HTMLAll
		j.Normalize.HTMLAll = &all
	}
	if r.usesShingles() {
		j.Shingle = &shingleJSON{Unit: r.Shingle.Unit.String(), N: r.Shingle.N, Seed: r.Shingle.Seed}
	}
	switch r.Method {
	case MinHash:
		m := r.MinHash
		j.MinHash = &minhashJSON{NumPerm: m.NumPerm, Family: m.Family.String(), Seed: m.Seed, Bands: m.Bands, Rows: m.Rows}
	case SimHash:
		m := r.SimHash
		j.SimHash = &simhashJSON{Bits: m.Bits, Distance: m.MaxDistance(), Weights: m.Weights.String(), Seed: m.Seed, Blocks: m.Blocks}
	case KSentence:
		j.KSentence = &ksentenceJSON{K: r.KSentence.K}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a serialised Spec, or the parameters of a format-2
// store index. Unknown fields, unknown names, missing values and
// parameters that do not validate wrap ErrSpec; a newer version wraps
// ErrVersion. The result is resolved.
func (s *Spec) UnmarshalJSON(b []byte) error {
	var j specJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("%w: %v", ErrSpec, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data", ErrSpec)
	}
	legacy := j.Version == nil
	var q Spec
	if !legacy {
		if *j.Version > Version {
			return fmt.Errorf("%w: version %d (this build reads up to %d)", ErrVersion, *j.Version, Version)
		}
		if *j.Version < 1 {
			return fmt.Errorf("%w: version %d", ErrSpec, *j.Version)
		}
		q.Version = *j.Version
	}
	m, err := ParseMethod(j.Method)
	if err != nil {
		return err
	}
	q.Method = m
	n := j.Normalize
	norm := text.Options{NFKC: n.NFKC, CaseFold: n.CaseFold, Whitespace: n.Whitespace, KeepNewlines: n.KeepNewlines,
		Punctuation: n.Punctuation, Invisible: n.Invisible, HTML: n.HTML, T2S: n.T2S, StopWords: n.StopWords,
		StopWordList: n.StopWordList}
	switch {
	case n.HTMLAll != nil && !n.HTML:
		return fmt.Errorf("%w: html_all without html", ErrSpec)
	case n.HTMLAll != nil:
		norm.HTMLAll = *n.HTMLAll
	case n.HTML:
		norm.HTMLAll = true // written before main-content extraction
	}
	found := false
	for mode, name := range punctModes {
		if name == n.PunctuationMode {
			norm.PunctuationMode, found = mode, true
		}
	}
	if !found {
		return fmt.Errorf("%w: unknown punctuation mode %q", ErrSpec, n.PunctuationMode)
	}
	q.Normalize = &norm
	if q.usesShingles() != (j.Shingle != nil) {
		return fmt.Errorf("%w: method %s with the shingle section %s", ErrSpec, m, presence(j.Shingle != nil))
	}
	if j.Shingle != nil {
		u, err := shingle.ParseUnit(j.Shingle.Unit)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrSpec, err)
		}
		if j.Shingle.N == 0 || j.Shingle.Seed == 0 {
			return fmt.Errorf("%w: a stored shingle parameter is zero (stored specifications are resolved)", ErrSpec)
		}
		q.Shingle = shingle.Options{Unit: u, N: j.Shingle.N, Seed: j.Shingle.Seed}
	}
	q.Threshold = j.Threshold
	if (m == MinHash) != (j.MinHash != nil) || (m == SimHash) != (j.SimHash != nil) || (m == KSentence) != (j.KSentence != nil) {
		return fmt.Errorf("%w: method %s needs exactly its own parameter section", ErrSpec, m)
	}
	switch m {
	case MinHash:
		mj := j.MinHash
		f, err := minhash.ParseFamily(mj.Family)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrSpec, err)
		}
		if mj.Threshold != 0 {
			if !legacy || q.Threshold != 0 {
				return fmt.Errorf("%w: the threshold belongs at the top level", ErrSpec)
			}
			q.Threshold = mj.Threshold
		}
		if mj.NumPerm == 0 || mj.Seed == 0 || mj.Bands == 0 || mj.Rows == 0 || q.Threshold == 0 {
			return fmt.Errorf("%w: a stored MinHash parameter is zero (stored specifications are resolved)", ErrSpec)
		}
		q.MinHash = MinHashSpec{NumPerm: mj.NumPerm, Family: f, Seed: mj.Seed, Bands: mj.Bands, Rows: mj.Rows}
	case SimHash:
		sj := j.SimHash
		w := WeightCount // format-2 store indexes weighed by count
		if sj.Weights != "" || !legacy {
			if w, err = ParseWeighting(sj.Weights); err != nil {
				return err
			}
		}
		if sj.Bits == 0 || sj.Seed == 0 || sj.Blocks == 0 {
			return fmt.Errorf("%w: a stored SimHash parameter is zero (stored specifications are resolved)", ErrSpec)
		}
		d := sj.Distance
		if d == 0 {
			d = ExactDistance
		}
		q.SimHash = SimHashSpec{Bits: sj.Bits, Distance: d, Weights: w, Seed: sj.Seed, Blocks: sj.Blocks}
	case KSentence:
		if j.KSentence.K == 0 {
			return fmt.Errorf("%w: a stored KSentence parameter is zero", ErrSpec)
		}
		q.KSentence.K = j.KSentence.K
		// The stored normalisation is the adjusted one; Resolve adjusts
		// it again, which changes nothing.
	}
	r, err := q.Resolve()
	if err != nil {
		return err
	}
	*s = r
	return nil
}

func presence(b bool) string {
	if b {
		return "present"
	}
	return "missing"
}

// Check returns nil when q, resolved, makes the same sketches and
// duplicates as the resolved Spec s; otherwise an error wrapping
// ErrIncompatible that names the first difference ("index has
// minhash.bands = 16, asked for 13").
func (s Spec) Check(q Spec) error {
	a, err := s.MarshalJSON()
	if err != nil {
		return err
	}
	b, err := q.MarshalJSON()
	if err != nil {
		return err
	}
	if bytes.Equal(a, b) {
		return nil
	}
	// Numbers as written (json.Number): as float64 a 64-bit seed lost its
	// low digits ("asked for 7883954017279371000"), and two seeds that
	// differ only there were "specifications differ".
	var ma, mb map[string]any
	for _, c := range []struct {
		b []byte
		m *map[string]any
	}{{a, &ma}, {b, &mb}} {
		dec := json.NewDecoder(bytes.NewReader(c.b))
		dec.UseNumber()
		_ = dec.Decode(c.m)
	}
	if d := firstDiff("", ma, mb); d != "" {
		return fmt.Errorf("%w: %s", ErrIncompatible, d)
	}
	return fmt.Errorf("%w: specifications differ", ErrIncompatible)
}

func firstDiff(path string, a, b any) string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := make([]string, 0, len(am)+len(bm))
		for k := range am {
			keys = append(keys, k)
		}
		for k := range bm {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range slices.Compact(keys) {
			if d := firstDiff(path+"."+k, am[k], bm[k]); d != "" {
				return d
			}
		}
		return ""
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if bytes.Equal(ja, jb) {
		return ""
	}
	return fmt.Sprintf("index has %s = %s, asked for %s", path[1:], ja, jb)
}
