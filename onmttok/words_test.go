package onmttok

import "testing"

// TestLongestWord counts words as the Tokenizer splits them, mode by mode:
// a tab or another control character joins the words around it (issue
// 53's "hello\tworld" is one word of 10 characters), a separator of
// Unicode's Z classes splits, mode space keeps control characters, mode
// none keeps the whole text (but SentencePiece's words end at spaces).
func TestLongestWord(t *testing.T) {
	conservative := Config{Options: Options{Mode: ModeConservative}, SubwordType: SubwordBPE, SubwordModel: "bpe.codes"}
	for _, tc := range []struct {
		name string
		c    Config
		text string
		want int
	}{
		{"tab joins", conservative, "hello\tworld", 10},
		{"controls join", conservative, "ab\x01\x02\r\n\v\fcd\ufeffe ab", 5},
		{"space splits", conservative, "hello world", 5},
		{"no-break and ideographic spaces split", conservative, "abc\u00a0abcd\u3000ab", 4},
		{"NUL ends the text", conservative, "abc\x00abcdefgh", 3},
		{"invalid UTF-8 is skipped", conservative, "ab\xffcd", 4},
		{"empty", conservative, "", 0},
		{"aggressive", Config{Options: Options{Mode: ModeAggressive}}, "a\tb\tc d", 3},
		{"space mode keeps controls", Config{Options: Options{Mode: ModeSpace}}, "hello\tworld x", 11},
		{"none mode: one token", Config{Options: Options{Mode: ModeNone}, SubwordType: SubwordBPE}, "hello world\tx", 13},
		{"none mode, SentencePiece", Config{Options: Options{Mode: ModeNone}, SubwordType: SubwordSentencePiece}, "hello world\tx", 7},
	} {
		if got := tc.c.LongestWord(tc.text); got != tc.want {
			t.Errorf("%s: LongestWord(%q) = %d, want %d", tc.name, tc.text, got, tc.want)
		}
	}
}

// TestLongestWordIsTheTokens checks LongestWord against the Tokenizer: no
// token of a text is longer than its longest word, and a text that is one
// word made of letters and dropped characters comes out as that one token.
func TestLongestWordIsTheTokens(t *testing.T) {
	for _, mode := range []string{ModeConservative, ModeAggressive, ModeSpace} {
		c := Config{Options: Options{Mode: mode}}
		tok, err := New(c.Options, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{"hello\tworld", "a\x01b\x1fc\ufeffd", "ab\u2028cd\u00a0e f"} {
			longest := 0
			for _, tk := range tok.Tokenize(text) {
				longest = max(longest, len([]rune(tk)))
			}
			if n := c.LongestWord(text); longest > n {
				t.Errorf("mode %s %q: a token of %d characters, LongestWord %d", mode, text, longest, n)
			}
		}
		if mode != ModeSpace {
			if got := tok.Tokenize("hello\tworld"); len(got) != 1 || got[0] != "helloworld" {
				t.Errorf("mode %s: %q, want the one token helloworld", mode, got)
			}
		}
	}
}
