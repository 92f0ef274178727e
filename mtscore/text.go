package mtscore

import (
	"regexp"
	"strings"
	"unicode"
)

// isSpace is Python's str.isspace, which str.split() splits at: Unicode
// white space and the separators U+001C..U+001F.
func isSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// fields splits s as Python's str.split() does.
func fields(s string) []string { return strings.FieldsFunc(s, isSpace) }

// Tokenizer names (sacreBLEU's --tokenize).
const (
	Tokenize13a  = "13a"
	TokenizeNone = "none"
)

var re13a = []struct {
	re   *regexp.Regexp
	repl string
}{
	// punctuation and symbols become tokens of their own
	{regexp.MustCompile("([\\{-\\~\\[-\\x60 -\\&\\(-\\+\\:-\\@\\/])"), " ${1} "},
	// a period or comma is split off unless a digit is on both sides
	{regexp.MustCompile(`([^0-9])([\.,])`), "${1} ${2} "},
	{regexp.MustCompile(`([\.,])([^0-9])`), " ${1} ${2}"},
	// a dash after a digit
	{regexp.MustCompile(`([0-9])(-)`), "${1} ${2} "},
}

// Tokenize13a tokenizes a line as mteval-v13a (and sacreBLEU's "13a"):
// HTML entities for quotes, ampersands and angle brackets are decoded, then
// punctuation is split off.
func tokenize13a(line string) string {
	line = strings.ReplaceAll(line, "<skipped>", "")
	line = strings.ReplaceAll(line, "-\n", "")
	line = strings.ReplaceAll(line, "\n", " ")
	if strings.Contains(line, "&") {
		line = strings.ReplaceAll(line, "&quot;", "\"")
		line = strings.ReplaceAll(line, "&amp;", "&")
		line = strings.ReplaceAll(line, "&lt;", "<")
		line = strings.ReplaceAll(line, "&gt;", ">")
	}
	line = " " + line + " "
	for _, r := range re13a {
		line = r.re.ReplaceAllString(line, r.repl)
	}
	return strings.Join(fields(line), " ")
}

// lower is Python's str.lower for the scripts that matter here.
func lower(s string) string { return strings.ToLower(s) }
