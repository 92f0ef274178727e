package subword

import (
	"strings"
	"testing"
)

// TestChatbotMatchesTutorial compares Normalize with the chatbot
// tutorial's normalizeString, line by line (testdata/README.md).
func TestChatbotMatchesTutorial(t *testing.T) {
	lines := append(readLines(t, "testdata/corpus.txt"), readLines(t, "testdata/chatbot_extra.txt")...)
	want := readLines(t, "testdata/chatbot_normalized.txt")
	if len(want) != len(lines) {
		t.Fatalf("%d expected lines for %d inputs", len(want), len(lines))
	}
	var c ChatbotWords
	bad := 0
	for i, l := range lines {
		if got := c.Normalize(l); got != want[i] {
			if bad++; bad <= 5 {
				t.Errorf("line %d %q:\n got  %q\n want %q", i+1, l, got, want[i])
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d lines differ", bad, len(lines))
	}
	if got := c.Encode("  Hello...   WORLD?! "); strings.Join(got, "|") != "hello|.|.|.|world|?|!" {
		t.Errorf("Encode: %q", got)
	}
	if c.Encode(" 123 ") != nil || c.Decode([]string{"hi", "there", "."}) != "hi there ." {
		t.Error("Encode of nothing, or Decode")
	}
	t.Logf("%d lines identical to the tutorial's normalizeString", len(lines))
}
