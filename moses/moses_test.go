package moses

import (
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
)

func readLines(t *testing.T, path string) []string { return testenv.Lines(t, path) }

// TestMatchesSacremoses compares the tokenizer and the detokenizer with
// sacremoses' output (testdata/make_fixtures.py) line by line, for
// English (with and without escaping, with aggressive dash splits),
// German, French, Czech, Finnish, Chinese and a language without prefixes.
func TestMatchesSacremoses(t *testing.T) {
	corpus := readLines(t, "../subword/testdata/corpus.txt")
	var lines []string
	for i := 0; i < len(corpus); i += 5 {
		lines = append(lines, corpus[i])
	}
	lines = append(lines, readLines(t, "testdata/input.txt")...)
	for _, name := range []string{"en", "en-aggressive", "en-noescape", "de", "fr", "cs", "fi", "zh", "xx"} {
		t.Run(name, func(t *testing.T) {
			lang, _, _ := strings.Cut(name, "-")
			tok, detok := NewTokenizer(lang), NewDetokenizer(lang)
			tok.AggressiveDash = name == "en-aggressive"
			tok.NoEscape = name == "en-noescape"
			wantTok := readLines(t, filepath.Join("testdata", name+".tok"))
			wantDetok := readLines(t, filepath.Join("testdata", name+".detok"))
			if len(wantTok) != len(lines) || len(wantDetok) != len(lines) {
				t.Fatalf("%d/%d expected lines for %d inputs", len(wantTok), len(wantDetok), len(lines))
			}
			bad := 0
			for i, l := range lines {
				got := tok.Tokenize(l)
				if got != wantTok[i] {
					if bad++; bad <= 4 {
						t.Errorf("tokenize line %d %q:\n got  %q\n want %q", i+1, l, got, wantTok[i])
					}
					continue
				}
				if d := detok.Detokenize(strings.Fields(wantTok[i])); d != wantDetok[i] {
					if bad++; bad <= 4 {
						t.Errorf("detokenize line %d %q:\n got  %q\n want %q", i+1, wantTok[i], d, wantDetok[i])
					}
				}
			}
			if bad > 0 {
				t.Fatalf("%d of %d lines differ from sacremoses", bad, len(lines))
			}
			t.Logf("%d lines identical to sacremoses (tokenize and detokenize)", len(lines))
		})
	}
}

// TestNoPanics feeds random bytes, invalid UTF-8 included, to every
// language's tokenizer and detokenizer.
func TestNoPanics(t *testing.T) {
	alphabet := []string{"a", "Z", "9", ".", "..", ",", "'", "\"", "-", "@-@", " ", "\t", "&amp;", "&", "<", "[", "é", "日", "\xff", "\xc3", "„", "“", ":", "$", "(", "n't", "DOTMULTI", "Mr."}
	rng := rand.New(rand.NewSource(1))
	for _, lang := range append(Languages(), "ja", "ko", "cjk", "zz") {
		tok, detok := NewTokenizer(lang), NewDetokenizer(lang)
		tok.AggressiveDash = rng.Intn(2) == 0
		for i := 0; i < 200; i++ {
			var b strings.Builder
			for n := rng.Intn(30); n > 0; n-- {
				b.WriteString(alphabet[rng.Intn(len(alphabet))])
			}
			out := tok.Tokenize(b.String())
			detok.Detokenize(strings.Fields(out))
			detok.Detokenize(strings.Fields(b.String()))
		}
	}
}

// TestLongestWord counts words as the tokenizer sees them: Python's white
// space (tab, line breaks, U+001C..U+001F, Unicode's spaces) splits, the
// other ASCII control characters vanish and join the words around them.
func TestLongestWord(t *testing.T) {
	tok := NewTokenizer("en")
	for _, tc := range []struct {
		text string
		want int
	}{
		{"hello\tworld", 5},
		{"hello\x01world", 10},
		{"ab\x1ccd\u00a0e\u3000fg\r\nh", 2},
		{"a\x00b\x7fc", 4},
		{"", 0},
		{"\t\x02\n", 0},
	} {
		if got := LongestWord(tc.text); got != tc.want {
			t.Errorf("LongestWord(%q) = %d, want %d", tc.text, got, tc.want)
		}
		longest := 0
		for _, w := range strings.Fields(tok.Tokenize(tc.text)) {
			longest = max(longest, len([]rune(w)))
		}
		if longest > tc.want {
			t.Errorf("%q: a token of %d characters, more than LongestWord's %d", tc.text, longest, tc.want)
		}
	}
	if got, want := tok.Tokenize("a\x01b\x02c\td"), "abc d"; got != want {
		t.Errorf("control characters: %q, want %q", got, want)
	}
}
