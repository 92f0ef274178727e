package subword

import (
	"strings"
	"testing"

	"github.com/attnx/attnx/onmttok"
)

// TestSpecLongestWord: each kind's words as its tokenizer splits them.
// Issue 53's bypass was a tab, which serve took for a space: apply_bpe
// and onmttok keep "hello\tworld" in one word.
func TestSpecLongestWord(t *testing.T) {
	onmt := &onmttok.Config{Options: onmttok.Options{Mode: onmttok.ModeConservative}, SubwordType: onmttok.SubwordBPE, SubwordModel: "bpe.codes"}
	for _, tc := range []struct {
		name string
		spec Spec
		text string
		want int
	}{
		{"subword-nmt", Spec{Kind: KindSubwordNMT}, "hello\tworld x", 11},
		{"subword-nmt, spaces", Spec{Kind: KindSubwordNMT}, "a bb  ccc", 3},
		{"sentencepiece", Spec{Kind: KindSentencePiece}, "hello\vworld\u00a0x y", 13},
		{"moses", Spec{Kind: KindSubwordNMT, Pretokenizer: PretokenizeMoses}, "hello\tworld\x01s x", 6},
		{"onmt_tokenize", Spec{Kind: KindOpenNMT, OpenNMT: onmt}, "hello\tworld\x01s x", 11},
		{"onmt_tokenize, separators", Spec{Kind: KindOpenNMT, OpenNMT: onmt}, "ab\u2029cde\u3000f", 3},
		{"chatbot", Spec{Kind: KindChatbot}, "hello\tworld", 5},
	} {
		if got := tc.spec.LongestWord(tc.text); got != tc.want {
			t.Errorf("%s: LongestWord(%q) = %d, want %d", tc.name, tc.text, got, tc.want)
		}
	}
}

// TestSpecLongestWordBoundsPieces: a word of 200 letters cut by tabs or
// control characters is one word of 200 for subword-nmt and onmttok,
// which segment it whole (the pieces show it: one joined run), and 40 for
// the Moses pretokenizer, which splits at tabs.
func TestSpecLongestWordBoundsPieces(t *testing.T) {
	text := strings.TrimSuffix(strings.Repeat("abcdefghij"+"klmnopqrst"+"uvwxyzabcd"+"efghijklmn\t", 5), "\t")
	for _, tc := range []struct {
		name string
		spec Spec
		dir  string
		want int
	}{
		{"subword-nmt", Spec{Kind: KindSubwordNMT, File: "bpe.codes"}, "testdata", 204},
		{"subword-nmt+moses", Spec{Kind: KindSubwordNMT, File: "bpe.codes", Pretokenizer: PretokenizeMoses}, "testdata", 40},
		{"onmt_tokenize", Spec{Kind: KindOpenNMT, OpenNMT: &onmttok.Config{Options: onmttok.Options{Mode: onmttok.ModeConservative, JoinerAnnotate: true}, SubwordType: onmttok.SubwordBPE, SubwordModel: "bpe.codes"}}, "../onmttok/testdata", 200},
	} {
		tok, err := Open(tc.spec, tc.dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := tc.spec.LongestWord(text); got != tc.want {
			t.Errorf("%s: LongestWord %d, want %d", tc.name, got, tc.want)
		}
		// The longest run of pieces the tokenizer joins into one word.
		longest, run := 0, 0
		for _, p := range tok.Encode(text) {
			core := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(p, onmttok.JoinerMarker), onmttok.JoinerMarker), DefaultSeparator)
			run += len([]rune(core))
			longest = max(longest, run)
			if !strings.HasSuffix(p, onmttok.JoinerMarker) && !strings.HasSuffix(p, DefaultSeparator) {
				run = 0
			}
		}
		if longest > tc.want || longest < tc.want-4 {
			t.Errorf("%s: the tokenizer's longest word is %d characters, LongestWord %d", tc.name, longest, tc.want)
		}
	}
}
