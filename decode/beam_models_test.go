package decode_test

import (
	"context"
	"github.com/attnx/attnx/onnxrun"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/attnx/attnx/decode"
)

func beams(limits []int, k int, alpha float64, keepAttention bool) ([]*decode.Beam, []decode.Search) {
	bs := make([]*decode.Beam, len(limits))
	ss := make([]decode.Search, len(limits))
	for i, n := range limits {
		bs[i] = &decode.Beam{SOS: sos, EOS: eos, K: k, MaxLen: n, LengthPenalty: alpha, KeepAttention: keepAttention}
		ss[i] = bs[i]
	}
	return bs, ss
}

// TestBeamWidthOneIsGreedyOnModels decodes ragged batches with K = 1 and
// with Greedy on the executor: the same tokens and attention, row by row.
func TestBeamWidthOneIsGreedyOnModels(t *testing.T) {
	for _, p := range testPairs(t) {
		t.Run(p.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, 11))
			rows := randomRows(r, 7, p.vs, 9)
			limits := []int{1, 3, 12, 20, 7, 30, 5}
			gs, gss := greedies(limits, true)
			bs, bss := beams(limits, 1, 1, true)
			ex, err := p.m.NewExecutor(1, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Close()
			for _, ss := range [][]decode.Search{gss, bss} {
				if err := decode.Decode(context.Background(), ex, rows, ss); err != nil {
					t.Fatal(err)
				}
			}
			for i := range rows {
				h := bs[i].Hypotheses(0)
				if len(h) != 1 {
					t.Fatalf("row %d: %d hypotheses with K = 1", i, len(h))
				}
				if !slices.Equal(h[0].Tokens, gs[i].Tokens()) || !reflect.DeepEqual(bs[i].Attention(0), gs[i].Attention()) {
					t.Errorf("row %d: beam %v, greedy %v", i, h[0].Tokens, gs[i].Tokens())
				}
			}
		})
	}
}

// TestBeamBatchMatchesLoneRows decodes a ragged batch of beams of several
// widths and length limits (rows leave the batch at different steps, slots
// expand, reorder and shrink) and each row alone: the same n-best lists,
// scores and attention.
func TestBeamBatchMatchesLoneRows(t *testing.T) {
	for _, p := range testPairs(t) {
		t.Run(p.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(12, 12))
			rows := randomRows(r, 6, p.vs, 8)
			limits := []int{4, 9, 2, 14, 6, 11}
			ex, err := p.m.NewExecutor(1, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Close()
			for _, k := range []int{2, 5} {
				bs, ss := beams(limits, k, 0.7, true)
				if err := decode.Decode(context.Background(), ex, rows, ss); err != nil {
					t.Fatal(err)
				}
				for i, row := range rows {
					alone, as := beams(limits[i:i+1], k, 0.7, true)
					if err := decode.Decode(context.Background(), ex, [][]int64{row}, as); err != nil {
						t.Fatal(err)
					}
					got, want := bs[i].Hypotheses(0), alone[0].Hypotheses(0)
					if len(got) != len(want) || len(got) < k {
						t.Fatalf("K %d row %d: %d hypotheses in the batch, %d alone", k, i, len(got), len(want))
					}
					for j := range got {
						if !slices.Equal(got[j].Tokens, want[j].Tokens) || !close32(got[j].Score, want[j].Score) {
							t.Errorf("K %d row %d hypothesis %d: %v %v in the batch, %v %v alone", k, i, j,
								got[j].Tokens, got[j].Score, want[j].Tokens, want[j].Score)
							continue
						}
						ga, wa := bs[i].Attention(j), alone[0].Attention(j)
						for s := range ga {
							if !within(ga[s], wa[s]) {
								t.Errorf("K %d row %d hypothesis %d step %d: attention differs", k, i, j, s)
							}
						}
					}
				}
			}
		})
	}
}

func close32(a, b float32) bool { return a == b || (a-b < 1e-5 && b-a < 1e-5) }

// TestBeamScoresAreForcedLogProbs checks each hypothesis' score against
// its tokens fed to a plain Session.Run loop: the float32 sum of the
// log_probs of its tokens, in step order.
func TestBeamScoresAreForcedLogProbs(t *testing.T) {
	for _, p := range testPairs(t) {
		r := rand.New(rand.NewPCG(13, 13))
		src := randomRows(r, 1, p.vs, 8)[0]
		b := &decode.Beam{SOS: sos, EOS: eos, K: 3, MaxLen: 6, LengthPenalty: 0}
		ex, err := p.m.NewExecutor(1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := decode.Decode(context.Background(), ex, [][]int64{src}, []decode.Search{b}); err != nil {
			t.Fatal(err)
		}
		ex.Close()
		for _, h := range b.Hypotheses(0) {
			var sum float32
			for j, tok := range h.Tokens {
				lp := p.forced(t, src, append([]int64{sos}, h.Tokens[:j]...))
				sum += lp[tok]
			}
			if !close32(sum, h.Score) {
				t.Errorf("%s: %v scored %v, forced log_probs sum to %v", p.name, h.Tokens, h.Score, sum)
			}
		}
	}
}

// TestBeamStepDoesNotAllocate runs beams of widths 1, 4 and 8 beside a
// greedy row, rows joining between steps: once warmed up, a whole decode
// allocates nothing.
func TestBeamStepDoesNotAllocate(t *testing.T) {
	if testBackend != onnxrun.BackendORT {
		t.Skip("zero allocations per step is ONNX Runtime's IoBinding; the native backend makes its results' tensor headers and shape slices per step (its arena reuses the float32 data)")
	}
	for _, p := range testPairs(t) {
		t.Run(p.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			rows := randomRows(r, 3, p.vs, 6)
			later := randomRows(r, 2, p.vs, 9)
			b1, s1 := beams([]int{5, 9, 3}, 4, 1, true)
			b8, s8 := beams([]int{7}, 8, 0.5, false)
			gs, gss := greedies([]int{6}, false)
			first := append(s1[:2:2], gss...)
			second := append(s8, s1[2])
			resets := []func(){gs[0].Reset}
			for _, b := range append(b1, b8...) {
				resets = append(resets, b.Reset)
			}
			checkNoAllocs(t, p, [][]int64{rows[0], rows[1], rows[2]}, first, later, second, resets)
			if b8[0].Len() < 8 {
				t.Errorf("the K = 8 row has %d hypotheses", b8[0].Len())
			}
		})
	}
}
