package text

// EnglishStopWords returns a copy of the built-in English stop word list: articles,
// pronouns, auxiliary and modal verbs, prepositions, conjunctions and common
// adverbs, in the form the normaliser produces (lowercase, apostrophes
// removed by punctuation folding, so "don't" appears as "don" and "t").
// Written for neardup.
func EnglishStopWords() []string { return append([]string(nil), englishStopWords...) }

var englishStopWords = []string{
	"a", "about", "above", "after", "again", "against", "all", "am", "an",
	"and", "any", "are", "as", "at", "be", "because", "been", "before",
	"being", "below", "between", "both", "but", "by", "can", "could", "did",
	"do", "does", "doing", "don", "down", "during", "each", "few", "for",
	"from", "further", "had", "has", "have", "having", "he", "her", "here",
	"hers", "herself", "him", "himself", "his", "how", "i", "if", "in",
	"into", "is", "it", "its", "itself", "just", "ll", "me", "might", "more",
	"most", "must", "my", "myself", "no", "nor", "not", "now", "of", "off",
	"on", "once", "only", "or", "other", "our", "ours", "ourselves", "out",
	"over", "own", "re", "s", "same", "shall", "she", "should", "so", "some",
	"such", "t", "than", "that", "the", "their", "theirs", "them",
	"themselves", "then", "there", "these", "they", "this", "those",
	"through", "to", "too", "under", "until", "up", "ve", "very", "was", "we",
	"were", "what", "when", "where", "which", "while", "who", "whom", "why",
	"will", "with", "would", "you", "your", "yours", "yourself",
	"yourselves",
}

// ChineseStopWords returns a copy of the built-in Chinese stop word list, in
// Simplified characters. Written for neardup.
//
// Its single characters are modal and structural particles; they are removed
// wherever they occur in text, because Chinese is written without spaces
// between words. That is lossy inside words (了解 loses 了), which matters
// little for duplicate detection because both sides lose the same
// characters. Its multi-character words only match whole space-delimited
// tokens, so they take effect on text that was segmented into words before
// normalisation.
func ChineseStopWords() []string { return append([]string(nil), chineseStopWords...) }

var chineseStopWords = []string{
	// particles, removed anywhere
	"的", "了", "吗", "呢", "吧", "啊", "呀", "嘛", "哦", "啦", "之", "乎", "矣", "焉", "哉", "兮",
	// function words, removed as whole tokens
	"我们", "你们", "他们", "她们", "它们", "这个", "那个", "这些", "那些", "因为", "所以",
	"但是", "如果", "虽然", "而且", "然后", "还是", "就是", "已经", "可以", "没有", "一个",
	"什么", "怎么", "这样", "那样", "以及", "或者", "并且", "不过", "只是",
}
