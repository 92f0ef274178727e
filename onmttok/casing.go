package onmttok

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// updateCasing is the casing of a token after one more letter.
func updateCasing(cur Casing, c caseType, index int) Casing {
	switch cur {
	case CasingNone:
		if index == 0 {
			if c == caseLower {
				return CasingLowercase
			}
			if c == caseUpper {
				return CasingCapitalized
			}
		} else if c != caseNone {
			return CasingMixed
		}
	case CasingLowercase:
		if c != caseLower {
			return CasingMixed
		}
	case CasingCapitalized:
		if index == 1 {
			if c == caseLower {
				return CasingCapitalized
			}
			if c == caseUpper {
				return CasingUppercase
			}
		} else if c != caseLower {
			return CasingMixed
		}
	case CasingUppercase:
		if c != caseUpper {
			return CasingMixed
		}
	}
	return cur
}

// lowercaseToken lowercases a token's letters and says what its casing was.
// With a language, the text is lowercased by that language's rules, as
// ICU does (casemap.go).
func lowercaseToken(s, lang string) (string, Casing) {
	casing := CasingNone
	index := 0
	upper := false
	forChars(s, func(r rune, _ int) {
		if t, cs := classify(r); t == ctLetter {
			casing = updateCasing(casing, cs, index)
			index++
			upper = upper || cs == caseUpper
		}
	})
	if lang != "" {
		return icuLower(s, caseLocaleOf(lang)), casing
	}
	if !upper {
		return s, casing
	}
	b := make([]byte, 0, len(s))
	forChars(s, func(r rune, n int) {
		if t, cs := classify(r); t == ctLetter && cs == caseUpper {
			b = utf8.AppendRune(b, unicode.ToLower(r))
		} else {
			b = utf8.AppendRune(b, r)
		}
	})
	return string(b), casing
}

// restoreCasing gives a lower-case token its casing back. The Tokenizer
// cannot restore a mixed casing (it raises); the token is left as it is.
func restoreCasing(s string, casing Casing, lang string) string {
	if s == "" || casing == CasingLowercase || casing == CasingNone || casing == CasingMixed {
		return s
	}
	if lang != "" {
		loc := caseLocaleOf(lang)
		if casing == CasingCapitalized {
			return icuTitle(s, loc)
		}
		return icuUpper(s, loc)
	}
	b := make([]byte, 0, len(s)+4)
	first := true
	forChars(s, func(r rune, _ int) {
		if first || casing == CasingUppercase {
			b = utf8.AppendRune(b, unicode.ToUpper(r))
		} else {
			b = utf8.AppendRune(b, r)
		}
		first = false
	})
	return string(b)
}

// Case markup.
type markupType uint8

const (
	markupNone markupType = iota
	markupModifier
	markupRegionBegin
	markupRegionEnd
)

const (
	markupModifierPrefix = "mrk_case_modifier_"
	markupBeginPrefix    = "mrk_begin_case_region_"
	markupEndPrefix      = "mrk_end_case_region_"
)

func casingChar(c Casing) byte {
	switch c {
	case CasingLowercase:
		return 'L'
	case CasingUppercase:
		return 'U'
	case CasingMixed:
		return 'M'
	case CasingCapitalized:
		return 'C'
	}
	return 'N'
}

func charCasing(b byte) Casing {
	switch b {
	case 'L':
		return CasingLowercase
	case 'U':
		return CasingUppercase
	case 'M':
		return CasingMixed
	case 'C':
		return CasingCapitalized
	}
	return CasingNone
}

// placeholderStartsWith: a placeholder whose name is prefix and one more
// byte.
func placeholderStartsWith(ph, prefix string) bool {
	n := len(ph) - len(phOpen) - len(phClose)
	return n == len(prefix)+1 && strings.HasPrefix(ph[len(phOpen):], prefix)
}

func readCaseMarkup(w string) markupType {
	if !isPlaceholder(w) {
		return markupNone
	}
	switch {
	case placeholderStartsWith(w, markupModifierPrefix):
		return markupModifier
	case placeholderStartsWith(w, markupBeginPrefix):
		return markupRegionBegin
	case placeholderStartsWith(w, markupEndPrefix):
		return markupRegionEnd
	}
	return markupNone
}

func casingFromMarkup(w string) Casing {
	return charCasing(w[len(w)-1-len(phClose)])
}

func writeCaseMarkup(m markupType, c Casing) string {
	var p string
	switch m {
	case markupModifier:
		p = markupModifierPrefix
	case markupRegionBegin:
		p = markupBeginPrefix
	case markupRegionEnd:
		p = markupEndPrefix
	default:
		return ""
	}
	return phOpen + p + string(casingChar(c)) + phClose
}

type caseMarkup struct {
	prefix, suffix markupType
	casing         Casing
}

// connectedUppercase: the tokens after offset reach an upper-case one (or
// a capital letter alone) through case-less ones only.
func connectedUppercase(toks []token, offset int) bool {
	for j := offset + 1; j < len(toks); j++ {
		t := &toks[j]
		if t.casing == CasingUppercase || (t.casing == CasingCapitalized && utf8Len(t.surface) == 1) {
			return true
		} else if t.casing != CasingNone {
			break
		}
	}
	return false
}

func numbersOnly(s string) bool {
	for _, c := range chars(s, nil) {
		if c.typ != ctNumber {
			return false
		}
	}
	return true
}

// caseMarkups places the case markup around tokens: a modifier before a
// capitalized one, regions around upper-case runs (soft regions take in
// case-less tokens between upper-case ones).
func caseMarkups(toks []token, soft bool) []caseMarkup {
	ms := make([]caseMarkup, 0, len(toks))
	inRegion := false
	for i := 0; i < len(toks); i++ {
		t := &toks[i]
		casing := t.casing
		prefix, suffix := markupNone, markupNone
		if inRegion {
			if (!soft && casing == CasingUppercase && t.typ == typeTrailingSubword) ||
				(soft && (casing == CasingUppercase ||
					(casing == CasingCapitalized && utf8Len(t.surface) == 1) ||
					(casing == CasingNone && !t.isPlaceholder() && (connectedUppercase(toks, i) || numbersOnly(t.surface))))) {
				casing = CasingUppercase
			} else {
				ms[len(ms)-1].suffix = markupRegionEnd
				inRegion = false
				i--
				continue
			}
		} else {
			if casing == CasingUppercase || (soft && casing == CasingCapitalized && utf8Len(t.surface) == 1 && connectedUppercase(toks, i)) {
				casing = CasingUppercase
				prefix = markupRegionBegin
				inRegion = true
			} else if casing == CasingCapitalized {
				prefix = markupModifier
			}
		}
		ms = append(ms, caseMarkup{prefix, suffix, casing})
	}
	if inRegion {
		ms[len(ms)-1].suffix = markupRegionEnd
	}
	return ms
}
