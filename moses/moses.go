// Package moses is the Moses tokenizer and detokenizer (tokenizer.perl and
// detokenizer.perl of the Moses decoder) as sacremoses, the Python port
// that JoeyNMT and many subword-nmt setups call, computes them: the same
// character classes (Perl's Unicode properties as sacremoses lists them,
// data/Is*.txt) and the same nonbreaking prefixes per language
// (data/nonbreaking_prefix.*). The tests compare every line of a corpus
// with sacremoses' output.
package moses

import (
	"embed"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

//go:embed data
var data embed.FS

// charClass is a set of characters and its regexp class body.
type charClass struct {
	set  map[rune]bool
	expr string // for use inside [...]
}

func loadClass(name string, extra ...rune) charClass {
	b, err := data.ReadFile("data/" + name + ".txt")
	if err != nil {
		panic(err) // embedded: cannot happen
	}
	c := charClass{set: map[rune]bool{}}
	var sb strings.Builder
	for _, r := range append([]rune(string(b)), extra...) {
		if !c.set[r] {
			c.set[r] = true
			fmt.Fprintf(&sb, `\x{%x}`, r)
		}
	}
	c.expr = sb.String()
	return c
}

// loadRanges reads a data/NAME.ranges file (hexadecimal FIRST-LAST lines:
// the characters of sacremoses' perluniprops NAME.txt, compacted).
func loadRanges(name string) []rune {
	b, err := data.ReadFile("data/" + name + ".ranges")
	if err != nil {
		panic(err)
	}
	var out []rune
	for _, line := range strings.Fields(string(b)) {
		var lo, hi rune
		if _, err := fmt.Sscanf(line, "%x-%x", &lo, &hi); err != nil {
			panic(fmt.Sprintf("data/%s.ranges: %q: %v", name, line, err))
		}
		for r := lo; r <= hi; r++ {
			out = append(out, r)
		}
	}
	return out
}

// The Indic viramas and nuktas sacremoses adds to IsAlnum and IsAlpha.
var viramasNuktas = []rune{
	0x094D, 0x09CD, 0x0A4D, 0x0ACD, 0x0B4D, 0x0BCD, 0x0C4D, 0x0CCD, 0x0D3B, 0x0D3C, 0x0D4D, 0x0EBA, 0x1039, 0x1714,
	0x1BAB, 0xA8C4, 0xA8F3, 0xA8F4, 0xA953, 0xAAF6, 0x0DCA,
	0x093C, 0x09BC, 0x0A3C, 0x0ABC, 0x0AFD, 0x0AFE, 0x0AFF, 0x0B3C, 0x0CBC, 0x1C37,
}

var (
	isAlnum = loadClass("IsAlnum", viramasNuktas...)
	isAlpha = loadClass("IsAlpha", viramasNuktas...)
	isN     = loadClass("IsN")
	isSc    = loadClass("IsSc")
	isSo    = loadClass("IsSo")
	isLower = loadClass("IsLower")
	// the detokenizer's classes, without the Indic marks
	isAlphaPlain = loadClass("IsAlpha")
)

// pySpace is Python's str.isspace, what \s, split() and strip() use.
func pySpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

const pySpaceClass = `\t\n\v\f\r \x{1c}-\x{1f}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`

func pyFields(s string) []string { return strings.FieldsFunc(s, pySpace) }

func pyStrip(s string) string { return strings.TrimFunc(s, pySpace) }

// rule is a regular expression and its replacement (Go's $1 syntax).
type rule struct {
	re   *regexp.Regexp
	repl string
}

func (r rule) apply(s string) string { return r.re.ReplaceAllString(s, r.repl) }

func mk(expr, repl string) rule { return rule{regexp.MustCompile(expr), repl} }
