package translate

import (
	"slices"
	"testing"
)

// TestRowOOV: a row's words outside the vocabulary get ids from the
// vocabulary's size up, in the order they first occur, the same word the
// same id; each row numbers its own from the same base, so an id says
// nothing outside its row.
func TestRowOOV(t *testing.T) {
	var a, b []string
	oa, ob := rowOOV(100, &a), rowOOV(100, &b)
	var ids []int64
	for _, w := range []string{"Jofe", "977494", "Jofe", "Leeds"} {
		ids = append(ids, oa(w))
	}
	if want := []int64{100, 101, 100, 102}; !slices.Equal(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
	if want := []string{"Jofe", "977494", "Leeds"}; !slices.Equal(a, want) {
		t.Errorf("words %q, want %q", a, want)
	}
	if id := ob("Okonkwo"); id != 100 || !slices.Equal(b, []string{"Okonkwo"}) {
		t.Errorf("another row's first word: id %d, words %q; want 100, [Okonkwo]", id, b)
	}
}
