package wordcache

import (
	"fmt"
	"strings"
	"testing"
)

// TestBound: a cache full of short words drops the oldest to stay within
// its bytes.
func TestBound(t *testing.T) {
	c := New(10 * (EntryOverhead + 40))
	for i := range 100 {
		w := fmt.Sprintf("word%03d", i)
		c.Add(w, []string{w[:4], w[4:]})
		if st := c.Stats(); st.Bytes > st.MaxBytes {
			t.Fatalf("after %d words: %d bytes held, more than the bound %d", i+1, st.Bytes, st.MaxBytes)
		}
	}
	if _, ok := c.Get("word099"); !ok {
		t.Error("the newest word was dropped")
	}
	if _, ok := c.Get("word000"); ok {
		t.Error("the oldest word is still held")
	}
	if got, ok := c.Get("word098"); !ok || strings.Join(got, " ") != "word 098" {
		t.Errorf("word098: %q, %v", got, ok)
	}
}
