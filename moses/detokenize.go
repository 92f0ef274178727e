package moses

import (
	"regexp"
	"strings"
)

// Detokenizer joins tokens back into text as Moses' detokenizer.perl does
// for one language (sacremoses' MosesDetokenizer.detokenize).
type Detokenizer struct {
	lang string
	// NoUnescape leaves &amp; and the other escapes as they are.
	NoUnescape bool
}

// NewDetokenizer returns the detokenizer of a language.
func NewDetokenizer(lang string) *Detokenizer { return &Detokenizer{lang: lang} }

var (
	unescapes = [][2]string{{"&bar;", "|"}, {"&#124;", "|"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&bra;", "["}, {"&ket;", "]"},
		{"&quot;", "\""}, {"&apos;", "'"}, {"&#91;", "["}, {"&#93;", "]"}, {"&amp;", "&"}}
	isCurrency      = regexp.MustCompile(`^[` + isSc.expr + `\(\[\{\x{bf}\x{a1}]+$`)
	isEnContraction = regexp.MustCompile(`^['][` + isAlphaPlain.expr + `]`)
	isFrContraction = regexp.MustCompile(`[` + isAlphaPlain.expr + `][']$`)
	startsWithAlpha = regexp.MustCompile(`^[` + isAlphaPlain.expr + `]`)
	isPunct         = regexp.MustCompile(`^[\,\.\?\!\:\;\\\%\}\]\)]+$`)
	isOpenQuote     = regexp.MustCompile("^['\"\u201e\u201c`]+$")
	curlyQuotes     = regexp.MustCompile("^[\u201e\u201c\u201d]+$")
	frSpacedPunct   = regexp.MustCompile(`^[\?\!\:\;\\\%]$`)
	allDigits       = regexp.MustCompile(`^[0-9]+$`)
	dotOrComma      = regexp.MustCompile(`^[.,]$`)
	dash            = regexp.MustCompile("^[-\u2013]$")
	liOrMail        = regexp.MustCompile(`(?i)^li$|^mail.*`)
	endsWithS       = regexp.MustCompile(`[s]$`)
	endsWithColon   = regexp.MustCompile(`:$`)
	finnish         = regexp.MustCompile("^(N|n|A|a|\u00c4|\u00e4|ssa|Ssa|ss\u00e4|Ss\u00e4|sta|st\u00e4|Sta|St\u00e4|hun|Hun|hyn|Hyn|han|Han|h\u00e4n|H\u00e4n|h\u00f6n|H\u00f6n|un|Un|yn|Yn|an|An|\u00e4n|\u00c4n|\u00f6n|\u00d6n|seen|Seen|lla|Lla|ll\u00e4|Ll\u00e4|lta|Lta|lt\u00e4|Lt\u00e4|lle|Lle|ksi|Ksi|kse|Kse|tta|Tta|ine|Ine)(ni|si|mme|nne|nsa)?(ko|k\u00f6|han|h\u00e4n|pa|p\u00e4|kaan|k\u00e4\u00e4n|kin)$")
	oneSpace        = mk(` {2,}`, " ")
)

// cjkRanges are sacremoses' CJK blocks; a character counts when it lies
// strictly inside one (its is_cjk).
var cjkRanges = [][2]rune{{4352, 4607}, {11904, 42191}, {43072, 43135}, {44032, 55215}, {63744, 64255}, {65072, 65103},
	{65381, 65500}, {94208, 101119}, {110592, 110895}, {110960, 111359}, {131072, 196607}}

func isCJK(r rune) bool {
	for _, c := range cjkRanges {
		if r < c[1] {
			return r > c[0]
		}
	}
	return false
}

// Detokenize joins tokens into text.
func (d *Detokenizer) Detokenize(tokens []string) string {
	text := " " + strings.Join(tokens, " ") + " "
	text = strings.ReplaceAll(text, " @-@ ", "-")
	if !d.NoUnescape {
		for _, u := range unescapes {
			text = strings.ReplaceAll(text, u[0], u[1])
		}
	}
	quotes := map[string]int{}
	prepend := " "
	var out strings.Builder
	toks := pyFields(text)
	first := func(s string) rune { return []rune(s)[0] }
	last := func(s string) rune { r := []rune(s); return r[len(r)-1] }
	for i := 0; i < len(toks); i++ {
		tok := toks[i]
		switch {
		case isCJK(first(tok)) && d.lang != "ko":
			if i > 0 && isCJK(last(toks[i-1])) {
				out.WriteString(tok)
			} else {
				out.WriteString(prepend + tok)
			}
			prepend = " "
		case isCurrency.MatchString(tok):
			out.WriteString(prepend + tok)
			prepend = ""
		case isPunct.MatchString(tok):
			if d.lang == "fr" && frSpacedPunct.MatchString(tok) {
				out.WriteString(" ")
			}
			out.WriteString(tok)
			prepend = " "
		case d.lang == "en" && i > 0 && isEnContraction.MatchString(tok):
			out.WriteString(tok)
			prepend = " "
		case d.lang == "cs" && i > 1 && allDigits.MatchString(toks[len(toks)-2]) && dotOrComma.MatchString(toks[len(toks)-1]) && allDigits.MatchString(tok):
			out.WriteString(tok)
			prepend = " "
		case (d.lang == "fr" || d.lang == "it" || d.lang == "ga") && i <= len(toks)-2 && isFrContraction.MatchString(tok) && startsWithAlpha.MatchString(toks[i+1]):
			out.WriteString(prepend + tok)
			prepend = ""
		case d.lang == "cs" && i <= len(toks)-3 && isFrContraction.MatchString(tok) && dash.MatchString(toks[i+1]) && liOrMail.MatchString(toks[i+2]):
			// sacremoses writes the dash too but, iterating over a list,
			// does not skip it: it comes again as the next token
			out.WriteString(prepend + tok + toks[i+1])
			prepend = ""
		case isOpenQuote.MatchString(tok):
			q := tok
			if curlyQuotes.MatchString(tok) {
				q = "\""
			}
			if d.lang == "cs" && tok == "\u201e" {
				quotes[q] = 0
			}
			if d.lang == "cs" && tok == "\u201c" {
				quotes[q] = 1
			}
			if quotes[q]%2 == 0 {
				if d.lang == "en" && tok == "'" && i > 0 && endsWithS.MatchString(toks[i-1]) {
					out.WriteString(tok)
					prepend = " "
				} else {
					out.WriteString(prepend + tok)
					prepend = ""
					quotes[q]++
				}
			} else {
				out.WriteString(tok)
				prepend = " "
				quotes[q]++
			}
		case d.lang == "fi" && endsWithColon.MatchString(toks[(i+len(toks)-1)%len(toks)]) && finnish.MatchString(tok):
			// (the token before; before the first, sacremoses looks at the last)
			out.WriteString(prepend + tok)
			prepend = " "
		default:
			out.WriteString(prepend + tok)
			prepend = " "
		}
	}
	return pyStrip(oneSpace.apply(out.String()))
}
