package dedup

import (
	"encoding/json"
	"testing"

	"github.com/neardup/neardup/ksentence"
)

func TestKSentenceFinder(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Method, cfg.KSentences = "ksentence", 2
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
	cfg.KSentences = -1
	if _, err := NewMethod(cfg); err == nil {
		t.Error("--k-sentences -1 accepted")
	}
	if d := m.Describe(); d["k_sentences"] != 2 {
		t.Errorf("Describe k_sentences = %v, want 2", d["k_sentences"])
	}
}
