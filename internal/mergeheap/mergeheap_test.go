package mergeheap

import (
	"math/rand"
	"sort"
	"testing"
)

// TestOrder pushes random pairs, many with equal scores, and pops them in
// the order of a sort: highest score first, the leftmost among equals.
func TestOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, n := range []int{0, 1, 2, 7, 100, 1000} {
		var h Heap
		want := make([]Pair, n)
		for i := range want {
			want[i] = Pair{Left: i, Right: i + 1, Score: float64(rng.Intn(5) - 2), Size: rng.Intn(9)}
		}
		for _, i := range rng.Perm(n) {
			h.Push(want[i])
		}
		sort.SliceStable(want, func(i, j int) bool { return want[i].Score > want[j].Score })
		if h.Len() != n {
			t.Fatalf("%d pushed, Len %d", n, h.Len())
		}
		for i, w := range want {
			if top := h.Top(); top != w {
				t.Fatalf("n=%d pop %d: Top %+v, want %+v", n, i, top, w)
			}
			if got := h.Pop(); got != w {
				t.Fatalf("n=%d pop %d: %+v, want %+v", n, i, got, w)
			}
		}
		if h.Len() != 0 {
			t.Fatalf("n=%d: %d left after popping all", n, h.Len())
		}
	}
}
