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

// TestMosesPretokenizer: with the Moses pretokenizer, BPE pieces are those
// of the Moses-tokenised text, and decoding gives back what Moses'
// detokenizer makes of it (sacremoses' outputs, ../moses/testdata).
func TestMosesPretokenizer(t *testing.T) {
	tok, err := Open(Spec{Kind: KindSubwordNMT, File: "testdata/bpe.codes", Pretokenizer: PretokenizeMoses, Lang: "en"}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := LoadBPE("testdata/bpe.codes", BPEOptions{})
	if err != nil {
		t.Fatal(err)
	}
	corpus := readLines(t, "testdata/corpus.txt")
	var lines []string
	for i := 0; i < len(corpus); i += 5 {
		lines = append(lines, corpus[i])
	}
	lines = append(lines, readLines(t, "../moses/testdata/input.txt")...)
	mosesTok := readLines(t, "../moses/testdata/en.tok")
	want := readLines(t, "../moses/testdata/en.detok")
	for i, l := range lines {
		pieces := tok.Encode(l)
		if strings.Join(pieces, " ") != strings.Join(plain.Encode(mosesTok[i]), " ") {
			t.Fatalf("line %d %q: pieces %q, want BPE of %q", i+1, l, pieces, mosesTok[i])
		}
		if got := tok.Decode(pieces); got != want[i] {
			t.Fatalf("line %d: decoded %q, want %q", i+1, got, want[i])
		}
	}
	if d := Describe(tok); !strings.Contains(d, "after the Moses tokenizer (en, escaped)") {
		t.Errorf("Describe: %s", d)
	}
}
