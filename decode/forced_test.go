package decode

import (
	"slices"
	"testing"
)

// TestForced feeds a reference through Advance: each step records the
// log-prob of the reference's next token, feeds that token (SOS first),
// and the row finishes after the last one, whatever the argmax.
func TestForced(t *testing.T) {
	for _, c := range []struct {
		name   string
		tokens []int64
		feeds  []int64 // the inputs written after each step but the last
	}{
		{"eos only", []int64{1}, nil},
		{"three", []int64{3, 2, 1}, []int64{3, 2}},
		{"repeats", []int64{2, 2, 2, 1}, []int64{2, 2, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &Forced{SOS: 0, Tokens: c.tokens}
			if f.Width() != 1 || f.First() != 0 {
				t.Fatalf("Width %d First %d, want 1 and SOS 0", f.Width(), f.First())
			}
			var feeds []int64
			var want []float32
			for step := 0; ; step++ {
				// log_probs over 4 tokens: token v scores -(v+1) - step/10,
				// so token 0 is always the argmax.
				lp := make([]float32, 4)
				for v := range lp {
					lp[v] = -float32(v+1) - float32(step)/10
				}
				want = append(want, lp[c.tokens[step]])
				in, par := []int64{-1}, []int{-1}
				n := f.Advance(NewSlots(1, 4, lp, 1, 1, []float32{1}), in, par)
				if n == 0 {
					break
				}
				if n != 1 || par[0] != 0 {
					t.Fatalf("step %d: %d slots, parent %d: want 1 slot continuing slot 0", step, n, par[0])
				}
				feeds = append(feeds, in[0])
			}
			if !slices.Equal(feeds, c.feeds) {
				t.Errorf("fed %v, want the reference's tokens %v", feeds, c.feeds)
			}
			if !slices.Equal(f.Scores(), want) {
				t.Errorf("scores %v, want %v", f.Scores(), want)
			}
			f.Reset()
			if len(f.Scores()) != 0 {
				t.Errorf("after Reset: %v", f.Scores())
			}
		})
	}
}
