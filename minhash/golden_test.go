package minhash

import (
	"encoding/binary"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/text"
)

// goldenTexts are the texts whose normalised forms, shingle hashes and
// signatures TestSigningPathGolden pins: the 180 verses of
// testdata/pairs.tsv and a few texts that exercise the non-ASCII steps.
func goldenTexts(t *testing.T) []string {
	var texts []string
	for _, p := range pairTexts(t) {
		texts = append(texts, p[0], p[1])
	}
	return append(texts,
		"",
		"The QUICK brown fox, jumps; over the lazy dog! It's 3.5% -- \"quoted\"\tTAB\r\nnew line",
		"Über café naïve façade résumé, cafe\u0301 and ﬁne ﬃ ① ™ STRAẞE straße ΣΊΣΥΦΟΣ İstanbul",
		"這是一個測試，乾隆年間的計畫。臺灣的「資訊」與『網路』！ＡＢＣ１２３：我們的軟體；說明書……",
		"在 Go 语言中, the map 是 a hash table: 哈希表。Ｈｅｌｌｏ　Ｗｏｒｌｄ",
		"zero\u200Bwidth\u00ADsoft e\u0301\u0301 a\x00b\x1bc \xff\xfe invalid \u0085nel\u2028ls",
		"a b c d e f g h i j k l m n o p q r s t u v w x y z 0 1 2 3 4 5 6 7 8 9",
		"Ⅻ ℌ ㎒ ｶﾀｶﾅ ﾞ Ǆ ǅ ǆ ᾼ ﬀ ＤＯＣＵＭＥＮＴ",
	)
}

// TestSigningPathGolden pins every value of the signing path (normalise
// with the default options, shingle, sign with each family at 128 slots)
// on goldenTexts, as digests computed before the ASCII fast paths: any
// change to a normalised text, a shingle hash or a signature fails it.
func TestSigningPathGolden(t *testing.T) {
	texts := goldenTexts(t)
	norm, err := text.New(text.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	word5, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: 5})
	char3, _ := shingle.New(shingle.Options{Unit: shingle.Char, N: 3})
	hashers := map[Family]*Hasher{}
	for _, f := range families {
		hashers[f], _ = New(Options{Family: f})
	}
	var normD, word5D, char3D []byte
	sigD := map[Family][]byte{}
	var buf []byte
	var hashes []uint64
	var sig Signature
	for _, s := range texts {
		buf = norm.Append(buf[:0], s)
		normD = append(append(normD, buf...), 0)
		hashes = word5.AppendHashes(hashes[:0], string(buf))
		word5D = appendUint64s(word5D, hashes)
		for _, f := range families {
			sig = hashers[f].Sign(sig, hashes)
			for _, v := range sig {
				sigD[f] = binary.LittleEndian.AppendUint32(sigD[f], v)
			}
		}
		char3D = appendUint64s(char3D, char3.AppendHashes(hashes[:0], string(buf)))
	}
	for _, c := range []struct {
		name string
		data []byte
		want uint64
	}{
		{"normalised texts", normD, 0xc581609442e41399},
		{"word 5-gram hashes", word5D, 0x7d6ce5ef1d1ed28c},
		{"char 3-gram hashes", char3D, 0xb752b7d156276e0d},
		{"permutation signatures", sigD[Permutation], 0x3ab1a9d8e655da9d},
		{"multiply-shift signatures", sigD[MultiplyShift], 0x255bd95dc7cc1401},
		{"oph signatures", sigD[OPH], 0xc49bd49e8843030e},
	} {
		if got := xxh3.Hash(c.data); got != c.want {
			t.Errorf("%s: digest %#x, want %#x", c.name, got, c.want)
		}
	}
}

func appendUint64s(dst []byte, v []uint64) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(v)))
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint64(dst, x)
	}
	return dst
}
