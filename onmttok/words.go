package onmttok

// dropped reports whether the Tokenizer drops a character from the text
// it splits (in every mode but none and space): the control characters
// below U+0020, tab and line breaks among them, and the byte order mark.
// The words on either side of one join ("hello\tworld" is one word).
func dropped(r rune) bool { return r < 32 || r == 0xFEFF }

// LongestWord returns the characters of the longest run of text that the
// configuration's subword model segments as one word: the Tokenizer's
// runs without separators (Unicode's Zs, Zl and Zp), counting no dropped
// character; in mode space, runs without separators, every character
// counted; in mode none, the whole text, which the Tokenizer leaves in one
// token (SentencePiece's words end at spaces, as package subword counts
// them). It counts what chars reads: the text up to a NUL, valid UTF-8.
// The word's tokens, after the mode splits it further, are no longer.
func (c Config) LongestWord(text string) int {
	var breaks, skips func(r rune) bool
	switch c.Options.Mode {
	case ModeNone:
		breaks, skips = func(rune) bool { return false }, func(rune) bool { return false }
		if c.SubwordType == SubwordSentencePiece {
			breaks = func(r rune) bool { return r == ' ' }
		}
	case ModeSpace:
		breaks, skips = isSeparator, func(rune) bool { return false }
	default:
		breaks, skips = isSeparator, dropped
	}
	longest, n := 0, 0
	forChars(text, func(r rune, _ int) {
		switch {
		case breaks(r):
			n = 0
		case !skips(r):
			n++
			longest = max(longest, n)
		}
	})
	return longest
}

// isSeparator reports whether the Tokenizer's classes make r a separator.
func isSeparator(r rune) bool {
	t, _ := classify(r)
	return t == ctSeparator
}
