package onmttok

import (
	"sort"
	"strings"
	"unicode"
)

// With a lang, the Tokenizer lowercases, uppercases and titlecases tokens
// with ICU's string casing for that locale (icu::UnicodeString's toLower,
// toUpper and toTitle with U_TITLECASE_WHOLE_STRING). This file does what
// ICU 72 does there: the full case mappings of each code point
// (casing_table.go, generated from ICU), the conditional mappings of
// SpecialCasing.txt (final sigma everywhere; Turkish and Azeri dotted and
// dotless i; Lithuanian's dot above kept after i and j before accents),
// Dutch IJ titlecasing, Eastern Armenian's ech-yiwn, and Greek
// uppercasing, which drops accents and breathings but keeps dialytika and
// the disjunctive ή's tonos.

// caseLocale is a locale whose case mappings ICU treats specially.
type caseLocale uint8

const (
	caseRoot caseLocale = iota
	caseTurkic
	caseLithuanian
	caseGreek
	caseDutch
	caseArmenian
)

// caseLocaleOf is the case-mapping locale of a language tag, as ICU reads
// it from the locale's language subtag (two or three letters, any case).
func caseLocaleOf(lang string) caseLocale {
	l := strings.ToLower(lang)
	if i := strings.IndexAny(l, "-_@"); i >= 0 {
		l = l[:i]
	}
	switch l {
	case "tr", "tur", "az", "aze":
		return caseTurkic
	case "lt", "lit":
		return caseLithuanian
	case "el", "ell":
		return caseGreek
	case "nl", "nld":
		return caseDutch
	case "hy", "hye":
		return caseArmenian
	}
	return caseRoot
}

// casePropRange is a range of code points with the same case properties
// (prop* flags) and canonical combining class.
type casePropRange struct {
	lo, hi     rune
	flags, ccc uint8
}

const (
	propCased      = 1
	propIgnorable  = 2
	propSoftDotted = 4
)

func caseProp(r rune) (flags, ccc uint8) {
	i := sort.Search(len(caseProps), func(i int) bool { return caseProps[i].hi >= r })
	if i < len(caseProps) && caseProps[i].lo <= r {
		return caseProps[i].flags, caseProps[i].ccc
	}
	return 0, 0
}

// dotType is what the SpecialCasing conditions look for around a letter.
type dotType uint8

const (
	dotNone  dotType = iota // a base character
	dotSoft                 // Soft_Dotted (i, j, ...)
	dotAbove                // combining class 230
	dotOther                // another nonzero combining class
)

func dotOf(r rune) dotType {
	flags, ccc := caseProp(r)
	switch {
	case flags&propSoftDotted != 0:
		return dotSoft
	case ccc == 230:
		return dotAbove
	case ccc != 0:
		return dotOther
	}
	return dotNone
}

// casedAround: the text on one side of rs[i] (dir 1 after, -1 before)
// reaches a cased character through case-ignorable ones only.
func casedAround(rs []rune, i, dir int) bool {
	for j := i + dir; j >= 0 && j < len(rs); j += dir {
		flags, _ := caseProp(rs[j])
		if flags&propIgnorable != 0 {
			continue
		}
		return flags&propCased != 0
	}
	return false
}

// afterSoftDotted: the last base character before rs[i] is soft-dotted,
// with no accent above between.
func afterSoftDotted(rs []rune, i int) bool {
	for j := i - 1; j >= 0; j-- {
		switch dotOf(rs[j]) {
		case dotSoft:
			return true
		case dotOther:
			continue
		}
		return false
	}
	return false
}

// afterI: the last base character before rs[i] is I, with no accent
// above between.
func afterI(rs []rune, i int) bool {
	for j := i - 1; j >= 0; j-- {
		if rs[j] == 'I' {
			return true
		}
		if dotOf(rs[j]) != dotOther {
			return false
		}
	}
	return false
}

// moreAbove: an accent above follows rs[i] in its combining sequence.
func moreAbove(rs []rune, i int) bool {
	for j := i + 1; j < len(rs); j++ {
		switch dotOf(rs[j]) {
		case dotAbove:
			return true
		case dotOther:
			continue
		}
		return false
	}
	return false
}

// beforeDot: U+0307 follows rs[i], with no other accent above between.
func beforeDot(rs []rune, i int) bool {
	for j := i + 1; j < len(rs); j++ {
		if rs[j] == 0x307 {
			return true
		}
		if dotOf(rs[j]) != dotOther {
			return false
		}
	}
	return false
}

// lowerAt is the lowercase of rs[i] in its context.
func lowerAt(rs []rune, i int, loc caseLocale) string {
	c := rs[i]
	switch {
	case loc == caseLithuanian && ((c == 'I' || c == 'J' || c == 'Į') && moreAbove(rs, i) || c == 'Ì' || c == 'Í' || c == 'Ĩ'):
		switch c {
		case 'I':
			return "i\u0307"
		case 'J':
			return "j\u0307"
		case 'Į':
			return "į\u0307"
		case 'Ì':
			return "i\u0307\u0300"
		case 'Í':
			return "i\u0307\u0301"
		}
		return "i\u0307\u0303"
	case loc == caseTurkic && c == 'İ':
		return "i"
	case loc == caseTurkic && c == 0x307 && afterI(rs, i):
		return ""
	case loc == caseTurkic && c == 'I' && !beforeDot(rs, i):
		return "ı"
	case c == 'Σ' && !casedAround(rs, i, 1) && casedAround(rs, i, -1):
		return "ς"
	}
	if m := fullCase[c][0]; m != "" {
		return m
	}
	return string(unicode.ToLower(c))
}

// upperAt is the uppercase (or titlecase) of rs[i] in its context; rs is
// nil where ICU gives no context (Greek uppercasing).
func upperAt(rs []rune, c rune, i int, loc caseLocale, title bool) string {
	switch {
	case loc == caseTurkic && c == 'i':
		return "İ"
	case loc == caseLithuanian && c == 0x307 && rs != nil && afterSoftDotted(rs, i):
		return ""
	case c == 0x587: // ech-yiwn: ech-vew in Eastern Armenian
		switch {
		case loc == caseArmenian && title:
			return "Եվ"
		case loc == caseArmenian:
			return "ԵՎ"
		case title:
			return "Եւ"
		}
		return "ԵՒ"
	}
	k := 1
	if title {
		k = 2
	}
	if m := fullCase[c][k]; m != "" {
		return m
	}
	if title {
		return string(unicode.ToTitle(c))
	}
	return string(unicode.ToUpper(c))
}

// icuLower lowercases s as ICU's UnicodeString::toLower does.
func icuLower(s string, loc caseLocale) string {
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	for i := range rs {
		b.WriteString(lowerAt(rs, i, loc))
	}
	return b.String()
}

// icuUpper uppercases s as ICU's UnicodeString::toUpper does.
func icuUpper(s string, loc caseLocale) string {
	rs := []rune(s)
	if loc == caseGreek {
		return greekUpper(rs)
	}
	var b strings.Builder
	b.Grow(len(s))
	for i, c := range rs {
		b.WriteString(upperAt(rs, c, i, loc, false))
	}
	return b.String()
}

// titleStartable: ICU starts titlecasing at the first letter (a modifier
// letter only if cased), number, symbol or private-use character.
func titleStartable(r rune) bool {
	if unicode.Is(unicode.Lm, r) {
		flags, _ := caseProp(r)
		return flags&propCased != 0
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsSymbol(r) || unicode.Is(unicode.Co, r)
}

// icuTitle titlecases s as one word, as ICU's UnicodeString::toTitle does
// with U_TITLECASE_WHOLE_STRING: what comes before the first letter,
// number or symbol is kept, that one is titlecased, the rest lowercased.
func icuTitle(s string, loc caseLocale) string {
	rs := []rune(s)
	start := 0
	for start < len(rs) && !titleStartable(rs[start]) {
		start++
	}
	if start == len(rs) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteString(string(rs[:start]))
	t := upperAt(rs, rs[start], start, loc, true)
	b.WriteString(t)
	limit := start + 1
	if loc == caseDutch && limit < len(rs) && (t == "I" || t == "Í") {
		limit = dutchIJ(&b, rs, []rune(t)[0], limit)
	}
	for i := limit; i < len(rs); i++ {
		b.WriteString(lowerAt(rs, i, loc))
	}
	return b.String()
}

// dutchIJ titlecases the j of a Dutch IJ after the titlecased I (c, an I
// or an I with acute) at rs[start-1]: a plain i/I followed by a plain j/J,
// or an I with acute (precomposed or combining) followed by a j/J with a
// combining acute, and no further combining mark. It writes what follows
// the I up to the end of the IJ and returns the index after it, or writes
// nothing and returns start.
func dutchIJ(b *strings.Builder, rs []rune, c rune, start int) int {
	const acute = 0x301
	i := start
	withAcute := false
	keep1, keep2 := 0, 0 // characters kept before and after the j
	titleJ := false
	c2 := rs[i]
	i++
	if c == 'I' {
		if c2 == acute {
			withAcute = true
			keep1 = 1
			if i == len(rs) {
				return start
			}
			c2 = rs[i]
			i++
		}
	} else {
		withAcute = true
	}
	switch c2 {
	case 'j':
		titleJ = true
	case 'J':
		keep1++
	default:
		return start
	}
	if withAcute {
		if i == len(rs) || rs[i] != acute {
			return start
		}
		i++
		if titleJ {
			keep2 = 1
		} else {
			keep1++
		}
	}
	if i < len(rs) && unicode.Is(unicode.M, rs[i]) {
		return start
	}
	b.WriteString(string(rs[start : start+keep1]))
	start += keep1
	if titleJ {
		b.WriteByte('J')
		start++
	}
	b.WriteString(string(rs[start : start+keep2]))
	return i
}

// greekLetter is a Greek letter's entry for Greek uppercasing: the capital
// of its base letter and greek* flags.
type greekLetter struct {
	upper rune
	flags uint8
}

const (
	greekVowel = 1 << iota
	greekAccent
	greekDialytika
	greekYpogegrammeni
	greekOtherDiacritic
	greekCombiningDialytika // a U+0308 (or U+0344) after the letter
)

// greekDiacritic is what Greek uppercasing makes of a combining mark after
// a Greek letter (0: not one it takes).
func greekDiacritic(r rune) uint8 {
	switch r {
	case 0x300, 0x301, 0x342, 0x302, 0x303, 0x311: // varia, tonos, perispomeni and look-alikes
		return greekAccent
	case 0x308:
		return greekCombiningDialytika
	case 0x344: // dialytika tonos
		return greekCombiningDialytika | greekAccent
	case 0x345:
		return greekYpogegrammeni
	case 0x304, 0x306, 0x313, 0x314, 0x343: // macron, breve, breathings, koronis
		return greekOtherDiacritic
	}
	return 0
}

// greekUpper uppercases Greek text as ICU 72 does for el: a letter's
// capital without its accents and breathings (the marks after it are
// dropped too), with its dialytika (precomposed where it was, combining
// where it was), an iota subscript as a capital iota after it; a
// precomposed dialytika on an iota or upsilon after a vowel with an accent
// and no precomposed dialytika (the accent showed that they are not a
// diphthong); and ή alone (the disjunctive
// "or") keeps its tonos, as a combining one after Η.
func greekUpper(rs []rune) string {
	var b strings.Builder
	b.Grow(len(rs) * 2)
	afterCased, afterAccent := false, false
	for i := 0; i < len(rs); {
		c := rs[i]
		next := i + 1
		flags, _ := caseProp(c)
		nextCased, nextAccent := flags&propCased != 0, false
		if flags&propIgnorable != 0 {
			nextCased = afterCased
		}
		g, ok := greekLetters[c]
		if !ok {
			b.WriteString(upperAt(nil, c, i, caseGreek, false))
			i, afterCased, afterAccent = next, nextCased, false
			continue
		}
		upper, data := g.upper, g.flags
		if data&greekVowel != 0 && afterAccent && (upper == 'Ι' || upper == 'Υ') {
			data |= greekDialytika
		}
		ypogegrammeni := 0
		if data&greekYpogegrammeni != 0 {
			ypogegrammeni = 1
		}
		for next < len(rs) {
			d := greekDiacritic(rs[next])
			if d == 0 {
				break
			}
			data |= d
			if d&greekYpogegrammeni != 0 {
				ypogegrammeni++
			}
			next++
		}
		if data&(greekVowel|greekAccent|greekDialytika) == greekVowel|greekAccent {
			nextAccent = true
		}
		addTonos := false
		if upper == 'Η' && data&greekAccent != 0 && ypogegrammeni == 0 && !afterCased && !casedAround(rs, next-1, 1) {
			addTonos = true
		} else if data&greekDialytika != 0 {
			// A precomposed (or added) dialytika stays precomposed.
			switch upper {
			case 'Ι':
				upper, data = 'Ϊ', data&^(greekDialytika|greekCombiningDialytika)
			case 'Υ':
				upper, data = 'Ϋ', data&^(greekDialytika|greekCombiningDialytika)
			}
		}
		b.WriteRune(upper)
		if data&(greekDialytika|greekCombiningDialytika) != 0 {
			b.WriteRune(0x308)
		}
		if addTonos {
			b.WriteRune(0x301)
		}
		for ; ypogegrammeni > 0; ypogegrammeni-- {
			b.WriteRune('Ι')
		}
		i, afterCased, afterAccent = next, nextCased, nextAccent
	}
	return b.String()
}
