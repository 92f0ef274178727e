package translate

import (
	"strings"
	"testing"
)

// TestCopyWordsBounded: words outside the vocabulary get ids above it,
// the same word the same id within a generation; a generation ends at
// copyGeneration words or copyGenerationBytes bytes, the one before it
// stays readable and the one before that is forgotten.
func TestCopyWordsBounded(t *testing.T) {
	c := newCopyWords(100)
	a, b := c.id("Jofe"), c.id("977494")
	if a != 100 || b != 101 || c.id("Jofe") != a {
		t.Fatalf("ids %d %d, again %d: want 100, 101, 100", a, b, c.id("Jofe"))
	}
	if w, ok := c.word(b); !ok || w != "977494" {
		t.Errorf("word(%d) = %q, %v", b, w, ok)
	}
	if _, ok := c.word(99); ok {
		t.Error("an id of the vocabulary read as a copied word")
	}
	// Bytes: with the 10 bytes above, a fourth word of 1 MiB passes
	// 4 MiB and starts a generation.
	big := func(i int) string { return strings.Repeat(string(rune('a'+i)), 1<<20) }
	first := c.id(big(0))
	for i := 1; i < 3; i++ {
		c.id(big(i))
	}
	if c.gen != 0 {
		t.Fatalf("generation %d after %d bytes", c.gen, c.bytes)
	}
	fifth := c.id(big(4))
	if c.gen != 1 {
		t.Fatalf("generation %d after more than %d bytes", c.gen, copyGenerationBytes)
	}
	if w, ok := c.word(first); !ok || w != big(0) {
		t.Error("the previous generation's word is lost")
	}
	if c.id(big(0)) == first {
		t.Error("a word of the previous generation kept its id in the new one")
	}
	// Count: a generation of copyGeneration short words.
	for i := 0; c.gen == 1; i++ {
		c.id("w" + strings.Repeat("x", i%7) + string(rune(i)))
	}
	if _, ok := c.word(first); ok {
		t.Error("a word two generations back is still readable")
	}
	if w, ok := c.word(fifth); !ok || w != big(4) {
		t.Error("the previous generation's word is lost")
	}
	if len(c.words[0])+len(c.words[1]) > 2*copyGeneration {
		t.Errorf("%d words kept", len(c.words[0])+len(c.words[1]))
	}
}
