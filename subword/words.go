package subword

import "github.com/attnx/attnx/moses"

// LongestWord returns the characters of text's longest word as the
// Spec's tokenizer splits text into the words its subword model segments
// one at a time (serve's --max-word-chars bounds it): the Moses
// pretokenizer's words (moses.LongestWord), the OpenNMT Tokenizer's
// (onmttok.Config.LongestWord), the chatbot tutorial's runs without white
// space; else runs without a space, since apply_bpe splits at the space
// character alone ("hello\tworld" is one word) and every SentencePiece
// normaliser makes a space a word's start (nmt_nfkc makes a tab one too;
// an identity normaliser does not).
func (s Spec) LongestWord(text string) int {
	switch {
	case s.Kind == KindOpenNMT && s.OpenNMT != nil:
		return s.OpenNMT.LongestWord(text)
	case s.Pretokenizer == PretokenizeMoses:
		return moses.LongestWord(text)
	case s.Kind == KindChatbot:
		return longestRun(text, pySpace)
	}
	return longestRun(text, func(r rune) bool { return r == ' ' })
}

// longestRun returns the characters of text's longest run without a
// character that breaks.
func longestRun(text string, breaks func(rune) bool) int {
	longest, n := 0, 0
	for _, r := range text {
		if breaks(r) {
			n = 0
			continue
		}
		n++
		longest = max(longest, n)
	}
	return longest
}
