package moses

import (
	"bufio"
	"bytes"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Tokenizer splits text into tokens as Moses' tokenizer.perl does for one
// language (sacremoses' MosesTokenizer.tokenize).
type Tokenizer struct {
	lang        string
	prefixes    map[string]bool
	numericOnly map[string]bool
	apostrophe  []rule
	// padNotAlnum and alnum, alpha: the language's IsAlnum and IsAlpha
	// (with its CJK script for zh, ja, ko and cjk)
	padNotAlnum    rule
	alnum          charClass
	alpha          charClass
	AggressiveDash bool // split hyphens between letters or digits as " @-@ "
	// NoEscape leaves & | < > ' " [ ] as they are (escape=False).
	NoEscape bool
}

var (
	deduplicateSpace = mk(`[`+pySpaceClass+`]+`, " ")
	padNotAlnum      = mk(`([^`+isAlnum.expr+pySpaceClass+`\.'\x60,\-])`, " ${1} ")
	comma1           = mk(`([^`+isN.expr+`])[,]`, "${1} , ")
	comma2           = mk(`[,]([^`+isN.expr+`])`, " , ${1}")
	comma3           = mk(`([`+isN.expr+`])[,]$`, "${1} , ")
	enApostrophe     = []rule{
		mk(`([^`+isAlpha.expr+`])[']([^`+isAlpha.expr+`])`, "${1} ' ${2}"),
		mk(`([^`+isAlpha.expr+isN.expr+`])[']([`+isAlpha.expr+`])`, "${1} ' ${2}"),
		mk(`([`+isAlpha.expr+`])[']([^`+isAlpha.expr+`])`, "${1} ' ${2}"),
		mk(`([`+isAlpha.expr+`])[']([`+isAlpha.expr+`])`, "${1} '${2}"),
		mk(`([`+isN.expr+`])[']([s])`, "${1} '${2}"),
	}
	frItApostrophe = []rule{
		mk(`([^`+isAlpha.expr+`])[']([^`+isAlpha.expr+`])`, "${1} ' ${2}"),
		mk(`([^`+isAlpha.expr+`])[']([`+isAlpha.expr+`])`, "${1} ' ${2}"),
		mk(`([`+isAlpha.expr+`])[']([^`+isAlpha.expr+`])`, "${1} ' ${2}"),
		mk(`([`+isAlpha.expr+`])[']([`+isAlpha.expr+`])`, "${1}' ${2}"),
	}
	otherApostrophe  = []rule{mk(`'`, " ' ")}
	trailingDotQuote = mk(`\.' ?$`, " . ' ")
	multiDot1        = mk(`\.([\.]+)`, " DOTMULTI${1}")
	numericOnlyMark  = regexp.MustCompile(`[` + pySpaceClass + `]+(#NUMERIC_ONLY#)`)
	startsWithDigits = regexp.MustCompile(`^[0-9]+`)
)

// escapes are applied one after the other, ampersand first.
var escapes = [][2]string{{"&", "&amp;"}, {"|", "&#124;"}, {"<", "&lt;"}, {">", "&gt;"}, {"'", "&apos;"}, {"\"", "&quot;"}, {"[", "&#91;"}, {"]", "&#93;"}}

// Languages lists the languages with nonbreaking prefixes; any other
// language uses English's, as sacremoses does.
func Languages() []string {
	entries, _ := data.ReadDir("data")
	var out []string
	for _, e := range entries {
		if l, ok := strings.CutPrefix(e.Name(), "nonbreaking_prefix."); ok {
			out = append(out, l)
		}
	}
	return out
}

// NewTokenizer returns the tokenizer of a language ("en", "de", ...).
func NewTokenizer(lang string) *Tokenizer {
	t := &Tokenizer{lang: lang, prefixes: map[string]bool{}, numericOnly: map[string]bool{}}
	b, err := data.ReadFile("data/nonbreaking_prefix." + lang)
	if err != nil {
		b, _ = data.ReadFile("data/nonbreaking_prefix.en")
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := pyStrip(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		t.prefixes[line] = true
		if numericOnlyMark.MatchString(line) {
			if i := strings.LastIndex(line, " "); i >= 0 {
				t.numericOnly[line[:i]] = true
			}
		}
	}
	t.padNotAlnum, t.alnum, t.alpha = padNotAlnum, isAlnum, isAlpha
	var cjk []rune
	if lang == "ko" || lang == "cjk" {
		cjk = append(cjk, loadRanges("Hangul")...)
	}
	if lang == "zh" || lang == "cjk" {
		cjk = append(cjk, loadRanges("Han")...)
	}
	if lang == "ja" || lang == "cjk" {
		cjk = append(cjk, loadRanges("Hiragana")...)
		cjk = append(cjk, loadRanges("Katakana")...)
		cjk = append(cjk, loadRanges("Han")...)
	}
	if cjk != nil {
		t.alnum = loadClass("IsAlnum", append(append([]rune(nil), viramasNuktas...), cjk...)...)
		t.alpha = loadClass("IsAlpha", append(append([]rune(nil), viramasNuktas...), cjk...)...)
		t.padNotAlnum = mk(`([^`+t.alnum.expr+pySpaceClass+`\.'\x60,\-])`, " ${1} ")
	}
	switch lang {
	case "en":
		t.apostrophe = enApostrophe
	case "fr", "it":
		t.apostrophe = frItApostrophe
	default:
		t.apostrophe = otherApostrophe
	}
	return t
}

// Lang is the tokenizer's language.
func (t *Tokenizer) Lang() string { return t.lang }

// Tokenize returns the tokens of text joined by spaces.
func (t *Tokenizer) Tokenize(text string) string {
	text = deduplicateSpace.apply(text)
	text = removeJunk(text)
	text = pyStrip(text)
	text = t.padNotAlnum.apply(text)
	if t.AggressiveDash {
		text = aggressiveHyphens(text, t.alnum)
	}
	text = replaceMultidots(text)
	for _, r := range []rule{comma1, comma2, comma3} {
		text = r.apply(text)
	}
	for _, r := range t.apostrophe {
		text = r.apply(text)
	}
	text = t.nonbreakingPrefixes(text)
	text = pyStrip(deduplicateSpace.apply(text))
	text = trailingDotQuote.apply(text)
	text = restoreMultidots(text)
	if !t.NoEscape {
		for _, e := range escapes {
			text = strings.ReplaceAll(text, e[0], e[1])
		}
	}
	return text
}

// junk reports whether the tokenizer removes a character (after white
// space became single spaces): the ASCII control characters, which so
// join the words on either side ("a\x01b" is "ab").
func junk(c byte) bool { return c <= 0x1f }

// removeJunk removes the junk bytes, leaving any other byte (invalid
// UTF-8 included) as it is.
func removeJunk(s string) string {
	i := 0
	for i < len(s) && !junk(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s[:i])
	for ; i < len(s); i++ {
		if !junk(s[i]) {
			b = append(b, s[i])
		}
	}
	return string(b)
}

// LongestWord returns the characters of text's longest word as the
// tokenizer sees words before it splits them further: runs without
// Python's white space (tab and line breaks included), the control
// characters it removes not counted. The tokens it makes of a word are no
// longer, but for its escapes ("&" is "&amp;").
func LongestWord(text string) int {
	longest, n := 0, 0
	for _, r := range text {
		switch {
		case pySpace(r):
			n = 0
		case r < utf8.RuneSelf && junk(byte(r)):
		default:
			n++
			longest = max(longest, n)
		}
	}
	return longest
}

// aggressiveHyphens splits a hyphen between two IsAlnum characters into
// " @-@ " (the lookahead leaves the right character to start the next
// match).
func aggressiveHyphens(s string, alnum charClass) string {
	r := []rune(s)
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		if r[i] == '-' && i > 0 && i+1 < len(r) && alnum.set[r[i-1]] && alnum.set[r[i+1]] {
			b.WriteString(" @-@ ")
			continue
		}
		b.WriteRune(r[i])
	}
	return b.String()
}

// replaceMultidots marks runs of dots as sacremoses' replace_multidots
// does, in one pass where sacremoses loops once per dot: a run of n > 1
// dots becomes " DOTMULTI" and n-1 dots, then, while any "DOTMULTI."
// remains, "DOTMULTI.x" (x not a dot) becomes "DOTDOTMULTI x" and every
// other "DOTMULTI." becomes "DOTDOTMULTI". So a marker followed by k dots
// becomes k times "DOT", then "DOTMULTI", then a space when a character
// follows, since its last dot goes in the first rule's pass, k passes on.
// The one exception (a text that spells out DOTMULTI can meet it): in the
// first pass, a marker with one dot right after one that the first rule
// took is skipped by that rule (the match ate its first letter), and the
// second rule takes its dot without a space.
func replaceMultidots(s string) string {
	s = multiDot1.apply(s)
	const marker = "DOTMULTI"
	if !strings.Contains(s, marker+".") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*strings.Count(s, "."))
	spacedEnd := -1 // where a one-dot marker the first rule took in its first pass ends
	for pos := 0; ; {
		i := strings.Index(s[pos:], marker)
		if i < 0 {
			b.WriteString(s[pos:])
			return b.String()
		}
		start := pos + i
		end := start + len(marker)
		for end < len(s) && s[end] == '.' {
			end++
		}
		b.WriteString(s[pos:start])
		k := end - start - len(marker)
		if k == 0 {
			b.WriteString(marker)
			pos = end
			continue
		}
		for j := 0; j < k; j++ {
			b.WriteString("DOT")
		}
		b.WriteString(marker)
		spaced := end < len(s) && !(k == 1 && spacedEnd == start)
		if spaced {
			b.WriteByte(' ')
		}
		spacedEnd = -1
		if spaced && k == 1 {
			spacedEnd = end
		}
		pos = end
	}
}

// restoreMultidots undoes replaceMultidots' marks as sacremoses'
// restore_multidots does, in one pass where sacremoses loops: it turns
// "DOTDOTMULTI" into "DOTMULTI." until none is left, then every
// "DOTMULTI" into a dot, so n times "DOT" before "MULTI" become n dots.
func restoreMultidots(s string) string {
	const dot, multi = "DOT", "MULTI"
	if !strings.Contains(s, dot+multi) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for pos := 0; ; {
		i := strings.Index(s[pos:], dot)
		if i < 0 {
			b.WriteString(s[pos:])
			return b.String()
		}
		start := pos + i
		end := start
		for strings.HasPrefix(s[end:], dot) {
			end += len(dot)
		}
		b.WriteString(s[pos:start])
		if strings.HasPrefix(s[end:], multi) {
			b.WriteString(strings.Repeat(".", (end-start)/len(dot)))
			end += len(multi)
		} else {
			b.WriteString(s[start:end])
		}
		pos = end
	}
}

// nonbreakingPrefixes splits the final period off a token unless the token
// is a known abbreviation, holds another period and a letter, or the next
// token starts lowercase (or, for numeric-only prefixes, with a digit).
func (t *Tokenizer) nonbreakingPrefixes(s string) string {
	toks := pyFields(s)
	for i, tok := range toks {
		prefix, ok := strings.CutSuffix(tok, ".")
		if !ok || prefix == "" {
			continue
		}
		switch {
		case strings.Contains(prefix, ".") && anyIn(prefix, t.alpha),
			t.prefixes[prefix] && !t.numericOnly[prefix],
			i+1 < len(toks) && isLower.set[[]rune(toks[i+1])[0]]:
		case t.numericOnly[prefix] && i+1 < len(toks) && startsWithDigits.MatchString(toks[i+1]):
		default:
			toks[i] = prefix + " ."
		}
	}
	return strings.Join(toks, " ")
}

func anyIn(s string, c charClass) bool {
	for _, r := range s {
		if c.set[r] {
			return true
		}
	}
	return false
}
