package onmttok

import "strings"

// Casing is a token's case, as the Tokenizer infers it.
type Casing uint8

// The casings.
const (
	CasingNone Casing = iota
	CasingLowercase
	CasingUppercase
	CasingMixed
	CasingCapitalized
)

// tokenType: whether a token is a word or a part of one split by the
// subword model.
type tokenType uint8

const (
	typeWord tokenType = iota
	typeLeadingSubword
	typeTrailingSubword
)

// token is the Tokenizer's annotated token.
type token struct {
	surface   string
	typ       tokenType
	casing    Casing
	joinLeft  bool
	joinRight bool
	spacer    bool
	preserve  bool
}

func (t *token) empty() bool { return t.surface == "" }

func (t *token) isPlaceholder() bool { return isPlaceholder(t.surface) }

// isPlaceholder is the Tokenizer's test: an opening marker followed, at
// least one byte later, by a closing one.
func isPlaceholder(s string) bool {
	i := strings.Index(s, phOpen)
	if i < 0 {
		return false
	}
	from := i + len(phOpen) + 1
	if from > len(s) {
		return false
	}
	return strings.Contains(s[from:], phClose)
}

// substitutes are the characters the Tokenizer replaces in tokens unless
// no_substitution is set: its own markers.
var substitutes = map[rune]string{
	0x2581: "_", // ▁
	0xFFED: "■", // ￭
	0xFFE8: "│", // ￨
	0xFF05: "%", // ％
	0xFF03: "#", // ＃
	0xFF1A: ":", // ：
}

// builder accumulates tokens, as the Tokenizer's TokensBuilder. A token
// made of consecutive characters of the text is a substring of it; one
// with substitutions or escapes is copied into buf.
type builder struct {
	tokens         []token
	noSubstitution bool
	text           string
	cur            token
	curLen         int
	start, end     int    // the current token's bytes in text, while it is a substring
	buf            []byte // the current token, once it is not
	copied         bool
}

func (b *builder) isNewToken() bool { return b.start == b.end && !b.copied }

func (b *builder) previous() *token { return &b.tokens[len(b.tokens)-1] }

func (b *builder) segment() {
	if b.isNewToken() {
		return
	}
	if b.copied {
		b.cur.surface = string(b.buf)
	} else {
		b.cur.surface = b.text[b.start:b.end]
	}
	b.tokens = append(b.tokens, b.cur)
	b.cur = token{}
	b.buf = b.buf[:0]
	b.copied = false
	b.start, b.end = 0, 0
	b.curLen = 0
}

// copyOut moves the current token into buf.
func (b *builder) copyOut() {
	if !b.copied {
		b.buf = append(b.buf[:0], b.text[b.start:b.end]...)
		b.copied = true
	}
}

// appendString appends text that is not the text's own bytes.
func (b *builder) appendString(s string) {
	b.copyOut()
	b.buf = append(b.buf, s...)
	b.curLen++
}

// appendChar appends one character of the text.
func (b *builder) appendChar(c char) {
	b.curLen++
	if !b.copied {
		if b.start == b.end {
			b.start, b.end = c.off, c.off+len(c.s)
			return
		}
		if b.end == c.off {
			b.end += len(c.s)
			return
		}
		b.copyOut()
	}
	b.buf = append(b.buf, c.s...)
}

func (b *builder) appendChars(cs []char) {
	for _, c := range cs {
		b.appendChar(c)
	}
}

func (b *builder) safeAppend(c char) {
	if !b.noSubstitution && (c.v == 0x2581 || c.v >= 0xFF03) {
		if s, ok := substitutes[c.v]; ok {
			b.appendString(s)
			return
		}
	}
	b.appendChar(c)
}

func (b *builder) escapeAppend(c char) {
	if b.noSubstitution {
		b.appendChar(c)
		return
	}
	b.appendString(escapePrefix + hex4(c.v))
}

// hex4 is a code point in lower-case hexadecimal, at least 4 digits.
func hex4(v rune) string {
	const digits = "0123456789abcdef"
	var buf [8]byte
	i := len(buf)
	for v > 0 || len(buf)-i < 4 {
		i--
		buf[i] = digits[v&15]
		v >>= 4
	}
	return string(buf[i:])
}
