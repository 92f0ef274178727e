package onmttok

//go:generate sh internal/icugen/gen.sh

import (
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// charType is the Tokenizer's class of a character, from its general
// category.
type charType uint8

const (
	ctOther     charType = iota
	ctLetter             // Lu Ll Lt Lm Lo
	ctMark               // Mn Me Mc
	ctNumber             // Nd Nl No
	ctSeparator          // Zs Zl Zp
)

// caseType: Lu is upper, Ll lower, everything else (titlecase letters
// included) has no case.
type caseType uint8

const (
	caseNone caseType = iota
	caseLower
	caseUpper
)

// char is one character of a text: its bytes in the text, its code point
// and classes.
type char struct {
	s   string
	off int // where s starts in the text
	v   rune
	typ charType
	cas caseType
}

func classify(r rune) (charType, caseType) {
	if r < 0x80 {
		switch {
		case 'a' <= r && r <= 'z':
			return ctLetter, caseLower
		case 'A' <= r && r <= 'Z':
			return ctLetter, caseUpper
		case '0' <= r && r <= '9':
			return ctNumber, caseNone
		case r == ' ':
			return ctSeparator, caseNone
		}
		return ctOther, caseNone
	}
	switch {
	case unicode.IsLetter(r):
		if unicode.IsUpper(r) {
			return ctLetter, caseUpper
		}
		if unicode.IsLower(r) {
			return ctLetter, caseLower
		}
		return ctLetter, caseNone
	case unicode.IsMark(r):
		return ctMark, caseNone
	case unicode.IsNumber(r):
		return ctNumber, caseNone
	case unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp):
		return ctSeparator, caseNone
	}
	return ctOther, caseNone
}

// chars splits text into characters as the Tokenizer reads a C string: it
// stops at the first NUL and skips each byte that does not start a valid
// UTF-8 sequence.
func chars(text string, out []char) []char {
	if i := strings.IndexByte(text, 0); i >= 0 {
		text = text[:i]
	}
	if cap(out) < len(text) {
		out = make([]char, 0, len(text))
	}
	for i := 0; i < len(text); {
		if c := text[i]; c < 0x80 {
			t, cs := classify(rune(c))
			out = append(out, char{s: text[i : i+1], off: i, v: rune(c), typ: t, cas: cs})
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && n == 1 {
			i++
			continue
		}
		t, c := classify(r)
		out = append(out, char{s: text[i : i+n], off: i, v: r, typ: t, cas: c})
		i += n
	}
	return out
}

// forChars calls f with each character chars would find (its code point
// and byte length), without making the slice.
func forChars(s string, f func(r rune, n int)) {
	for i := 0; i < len(s); {
		if s[i] == 0 {
			return
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !(r == utf8.RuneError && n == 1) {
			f(r, n)
		}
		i += n
	}
}

// charPool holds the character slices of texts being tokenized.
var charPool = sync.Pool{New: func() any { return new([]char) }}

// utf8Len is the number of characters chars finds.
func utf8Len(s string) int {
	n := 0
	forChars(s, func(rune, int) { n++ })
	return n
}

// Script codes are ICU's (icuScripts' indexes), and two more for the names
// the Tokenizer keeps from its older alphabet list.
const (
	scriptCommon    = 0
	scriptInherited = 1
	scriptKangxi    = len(icuScripts)
	scriptKanbun    = len(icuScripts) + 1
)

type scriptRange struct {
	lo, hi rune
	code   int16
}

type extensionRange struct {
	lo, hi rune
	ext    []int16
}

// scriptRanges is every code point's script, from Go's unicode tables
// (checked against ICU's by the generator), sorted; latin1Scripts the
// first 256 code points'.
var (
	scriptRanges  []scriptRange
	latin1Scripts [256]int16
	scriptCodes   = map[string]int{}
)

func init() {
	for i, n := range icuScripts {
		for _, name := range n {
			scriptCodes[looseName(name)] = i
		}
	}
	scriptCodes[looseName("Kangxi")] = scriptKangxi
	scriptCodes[looseName("Kanbun")] = scriptKanbun
	for name, t := range unicode.Scripts {
		code, ok := scriptCodes[looseName(name)]
		if !ok {
			panic("onmttok: Go's unicode has script " + name + ", which ICU's table lacks: regenerate scripts_table.go")
		}
		add := func(lo, hi, stride rune) {
			if stride == 1 {
				scriptRanges = append(scriptRanges, scriptRange{lo: lo, hi: hi, code: int16(code)})
				return
			}
			for ; lo <= hi; lo += stride {
				scriptRanges = append(scriptRanges, scriptRange{lo: lo, hi: lo, code: int16(code)})
			}
		}
		for _, r := range t.R16 {
			add(rune(r.Lo), rune(r.Hi), rune(r.Stride))
		}
		for _, r := range t.R32 {
			add(rune(r.Lo), rune(r.Hi), rune(r.Stride))
		}
	}
	sort.Slice(scriptRanges, func(i, j int) bool { return scriptRanges[i].lo < scriptRanges[j].lo })
	for r := rune(0); r < 256; r++ {
		latin1Scripts[r] = int16(lookupScript(r))
	}
}

// looseName is a property value name as ICU matches it: case, spaces,
// hyphens and underscores ignored.
func looseName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case ' ', '-', '_', '\t':
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// scriptCode is the code of a script name (long or short, ICU's loose
// matching), or -1.
func scriptCode(name string) int {
	if c, ok := scriptCodes[looseName(name)]; ok {
		return c
	}
	return -1
}

// unknownScript is ICU's code for unassigned code points (Zzzz).
var unknownScript = scriptCode("Zzzz")

func lookupScript(r rune) int {
	i := sort.Search(len(scriptRanges), func(i int) bool { return scriptRanges[i].hi >= r })
	if i < len(scriptRanges) && scriptRanges[i].lo <= r {
		return int(scriptRanges[i].code)
	}
	return unknownScript
}

// scriptOf is the Tokenizer's get_script: a character's script, the
// previous character's for inherited ones, and for common ones the
// previous character's when it is among their script extensions (else
// the first of them).
func scriptOf(r rune, previous int) int {
	switch {
	case r >= 0x2F00 && r <= 0x2FD5:
		return scriptKangxi
	case r >= 0x3190 && r <= 0x319F:
		return scriptKanbun
	}
	var code int
	if r < 256 {
		code = int(latin1Scripts[r])
	} else {
		code = lookupScript(r)
	}
	switch code {
	case scriptInherited:
		return previous
	case scriptCommon:
		i := sort.Search(len(commonExtensions), func(i int) bool { return commonExtensions[i].hi >= r })
		if i == len(commonExtensions) || commonExtensions[i].lo > r {
			return scriptCommon
		}
		ext := commonExtensions[i].ext
		for _, e := range ext {
			if int(e) == previous {
				return previous
			}
		}
		return int(ext[0])
	}
	return code
}
