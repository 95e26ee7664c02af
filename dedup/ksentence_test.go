package dedup

import (
	"encoding/json"
	"testing"

	"github.com/neardup/neardup/ksentence"
	"github.com/neardup/neardup/text"
)

func TestKSentenceFinder(t *testing.T) {
	cfg := Options{}
	cfg.Method, cfg.Spec.KSentence.K = "ksentence", 2
	m, err := NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{
		"第一句很长很长很长。第二句也很长很长。短。",      // 0
		"第一句很长很长很长。第二句也很长很长。另一个短句子！", // 1: the extra sentence is not among the 2 longest? it is 6 runes; both long ones are 8 and 9
		"第一句很长很长很长。第二句也很长很长吗。短。",     // 2: an edited long sentence
		"第二句也很长很长\n第一句很长很长很长",        // 3: same sentences, other order and separator
		"", // 4: nothing
		"第一句很长很长很长。第二句也很长很长。短。", // 5: copy of 0
	}
	sk, pairs := runMethod(t, m, texts, nil)
	want := []Pair{{A: 0, B: 1, Similarity: 1, Distance: -1}, {A: 0, B: 3, Similarity: 1, Distance: -1}, {A: 0, B: 5, Similarity: 1, Distance: -1}}
	if len(pairs) != len(want) {
		t.Fatalf("pairs %+v, want %+v", pairs, want)
	}
	for i := range want {
		if pairs[i] != want[i] {
			t.Errorf("pair %d = %+v, want %+v", i, pairs[i], want[i])
		}
	}
	// The oracle: the library's fingerprint, written as hex.
	h, _ := ksentence.New(ksentence.Options{K: 2})
	var s string
	if err := json.Unmarshal(sk[2].AppendJSON(nil), &s); err != nil || s != h.Sum([]byte(texts[2])).String() {
		t.Errorf("sketch JSON %s (%v), want %q", sk[2].AppendJSON(nil), err, h.Sum([]byte(texts[2])).String())
	}
	cfg.Spec.KSentence.K = -1
	if _, err := NewMethod(cfg); err == nil {
		t.Error("--k-sentences -1 accepted")
	}
	if d := m.Facts(); d.KSentences != 2 {
		t.Errorf("facts: k_sentences = %v, want 2", d.KSentences)
	}
}

// TestKSentenceNormalisation checks the normalisation this method needs:
// with KeepNewlines and PunctCanonical the sentences survive, so texts
// that differ only in punctuation variants, case and spacing get the same
// fingerprint, while the default normalisation (punctuation and newlines
// folded) leaves one sentence per document.
func TestKSentenceNormalisation(t *testing.T) {
	opts := text.DefaultOptions()
	opts.KeepNewlines = true
	opts.PunctuationMode = text.PunctCanonical
	norm, err := text.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	a := "床前明月光，疑是地上霜。举头望明月！低头思故乡？\nThe Moon Is Bright. Short."
	b := "床前明月光,疑是地上霜．举头望明月!  低头思故乡?\r\nthe moon is   bright.短。"
	h, _ := ksentence.New(ksentence.Options{K: 3})
	na, nb := norm.Append(nil, a), norm.Append(nil, b)
	if got := len(ksentence.AppendSentences(nil, na)); got != 5 {
		t.Errorf("normalised text %q has %d sentences, want 5", na, got)
	}
	if h.Sum(na) != h.Sum(nb) {
		t.Errorf("same 3 longest sentences after normalisation, different fingerprints:\n%q\n%q", h.AppendLongest(nil, na), h.AppendLongest(nil, nb))
	}
	def, _ := text.New(text.DefaultOptions())
	if got := len(ksentence.AppendSentences(nil, def.Append(nil, a))); got != 1 {
		t.Errorf("default normalisation: %d sentences, want 1 (punctuation and newlines folded)", got)
	}
}
