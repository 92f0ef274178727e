package subword

import (
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// KindChatbot is the word tokenizer of PyTorch's chatbot tutorial: its
// normalizeString (lowercase, accents stripped, only ASCII letters and
// . ! ? kept, each of those three split off), then words at spaces. It has
// no file.
const KindChatbot = "chatbot-normalize"

// ChatbotWords is KindChatbot's Tokenizer.
type ChatbotWords struct{}

var (
	chatbotPunct = regexp.MustCompile(`([.!?])`)
	chatbotOther = regexp.MustCompile(`[^a-zA-Z.!?]+`)
)

// Normalize is the tutorial's normalizeString: lowercased, stripped, NFD
// with combining marks (Mn) dropped, a space before each of . ! ?, every
// run of other characters one space, trimmed.
func (ChatbotWords) Normalize(s string) string {
	s = strings.TrimFunc(strings.ToLower(s), pySpace)
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	s = chatbotPunct.ReplaceAllString(b.String(), " $1")
	s = chatbotOther.ReplaceAllString(s, " ")
	return strings.Join(strings.FieldsFunc(s, pySpace), " ")
}

// Encode returns the normalised text's words.
func (c ChatbotWords) Encode(text string) []string {
	s := c.Normalize(text)
	if s == "" {
		return nil
	}
	return strings.Split(s, " ")
}

// Decode joins words with spaces, as the tutorial prints its answers.
func (ChatbotWords) Decode(words []string) string { return strings.Join(words, " ") }

// pySpace is Python's str.isspace (what strip and \s match): Unicode white
// space and the separators U+001C..U+001F.
func pySpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

var chatbotWord = regexp.MustCompile(`^[a-z.!?]+$`)
