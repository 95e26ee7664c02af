// Package text normalises documents before they are shingled, hashed or
// compared, so that differences that do not matter for duplicate detection
// (width, case, spacing, punctuation style, markup, Traditional or Simplified
// script) disappear.
//
// # Steps
//
// A [Normalizer] applies the steps its [Options] switch on, in this order:
//
//  1. HTML (off by default): the input is an HTML document; [MainText]
//     extracts its main content (the article or documentation body, without
//     navigation, menus, sidebars, footers and link lists), or with HTMLAll
//     [HTMLToText] its whole visible text. Scripts, styles, templates, the
//     title and similar elements are dropped, comments and markup removed,
//     entities decoded, and block elements become line breaks. Malformed
//     HTML is accepted.
//  2. NFKC (on): Unicode normalisation form KC (golang.org/x/text/unicode/norm).
//     Full-width Latin letters, digits and punctuation become ASCII
//     (ＡＢＣ１２３！ -> ABC123!), ligatures and compatibility forms are
//     expanded (ﬁ -> fi, ① -> 1, ™ -> TM), ideographic space becomes a space,
//     accents are composed.
//  3. T2S (off): Traditional Chinese becomes Simplified Chinese with OpenCC's
//     phrase and character dictionaries (這是一個測試 -> 这是一个测试); see
//     package [github.com/neardup/neardup/text/t2s]. The stable variant of
//     the conversion is used, so that normalisation is idempotent.
//  4. Invisible (on): format characters (zero width space, joiners, soft
//     hyphen, byte order mark, bidirectional marks; category Cf) are
//     removed; other control characters count as whitespace.
//  5. CaseFold (on): each character is replaced by
//     unicode.ToLower(unicode.ToUpper(r)) when r has a case orbit
//     (unicode.SimpleFold). This is Unicode simple case folding (one
//     character to one character; ß stays ß, ẞ becomes ß, final ς becomes
//     σ, ſ becomes s, the Kelvin sign k; Turkish İ and ı stay) with one
//     difference: Cherokee folds to lowercase rather than uppercase. Full
//     case folding (ß -> ss) is not applied, because it changes the length
//     of words and is rarely what distinguishes duplicates.
//  6. Punctuation (on): Unicode punctuation (category P, including
//     full-width CJK punctuation ，。！？；：「」『』《》、…—) becomes a
//     space (PunctSpace, the default) so that words stay apart, or is
//     folded to one canonical ASCII form per family of variants
//     (PunctCanonical: all double quotes and 「」 to '"', dashes to '-',
//     。 to '.', 、 to ',', ...). Symbols (category S) are not
//     punctuation and are kept, except the box-drawing lines that Chinese
//     texts type for a dash (─), which count as dashes.
//  7. Whitespace (on): each run of whitespace (unicode.IsSpace) becomes one
//     ASCII space, and whitespace at both ends is removed. With
//     KeepNewlines, a run that contains a line break becomes one '\n'
//     instead, so that callers can split sentences on lines (the
//     KSentence method does).
//  8. StopWords (off): tokens (maximal runs of characters that are neither
//     whitespace nor punctuation) in the stop list are removed with the
//     space before them; single Han characters in the list (particles
//     such as 的 了 吗) are removed wherever they occur. See
//     [EnglishStopWords] and [ChineseStopWords].
//
// Steps 4 to 8 run together in one pass over the characters.
// The result is always valid UTF-8: invalid bytes in the input become U+FFFD
// before any step runs.
//
// # Idempotence
//
// Without the HTML step, normalising normalised text changes nothing:
// n.String(n.String(s)) == n.String(s). Two steps need care for this to hold.
// Removing a character or case folding can bring a combining mark next to a
// letter it composes with (e, a zero width space and U+0301 become e and
// U+0301, which NFKC composes to é), so when NFKC is on and a pass removed or
// case-folded characters outside ASCII (or lowered an ASCII capital just
// before a non-ASCII character: h and U+0331 compose, H and U+0331 do not),
// the output is checked and, if it is
// not in NFKC, goes through the steps again (at most three rounds, one in
// practice). OpenCC's conversion is not idempotent, which is why the T2S step
// uses the stable variant. The tests check idempotence over every assigned
// character (alone, after a letter, before combining marks) for several
// option sets, and by fuzzing.
//
// # Defaults
//
// [DefaultOptions] switches on NFKC, CaseFold, Whitespace, Punctuation (with
// PunctSpace) and Invisible; KeepNewlines, HTML, T2S and StopWords are off.
// The zero Options switches every step off.
//
// # Performance and concurrency
//
// [Normalizer.Append] is append-style: it writes into the caller's buffer
// and, without the HTML step, does not allocate once warmed up when the
// buffer has room. ASCII takes a fast path: NFKC leaves ASCII alone, so
// with NFKC on (and T2S off) only the non-ASCII islands of a text, each
// with the ASCII byte before it, are checked for valid UTF-8 and copied
// through NFKC, and a text that is all ASCII is neither; each run of ASCII
// in any text is folded by a table built from the Options, without the
// Unicode lookups (tested byte for byte, and for the need of another
// round, against the per-character path). A Normalizer is immutable
// after [New] and safe for concurrent use; its scratch buffers come from a
// sync.Pool.
//
// # Errors
//
// [New] fails, with an error wrapping [ErrOptions], for inconsistent options
// (KeepNewlines or StopWords without Whitespace, an unknown PunctuationMode,
// a stop word that normalises to several tokens), and when the embedded T2S
// dictionaries cannot be decoded. Normalisation itself cannot fail and
// never panics, whatever the input. [HTMLToText] returns only the errors of
// its reader.
package text
