package decode_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/bench"
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

// BenchmarkBeamStep decodes batches of rows with beams of width 4 and 8
// and greedily, on a realistic model size, every row running all steps
// (EOS suppressed): ms per sentence, allocs/op (0 once warmed up).
func BenchmarkBeamStep(b *testing.B) {
	needORT(b)
	const srcLen, steps, H, V = 12, 20, 256, 10000
	sd, err := bench.RandomStateDict(attention.Bahdanau, H, 1, V, V, 1)
	if err != nil {
		b.Fatal(err)
	}
	if sd, err = bench.SuppressEOS(sd, eos); err != nil {
		b.Fatal(err)
	}
	w, _, err := attention.FromStateDict(sd, attention.Options{})
	if err != nil {
		b.Fatal(err)
	}
	enc, _ := attention.Encoder(w)
	dec, _ := attention.Decoder(w)
	p := open(b, "realistic", enc, dec, V, V)
	for _, batch := range []int{1, 32} {
		for _, k := range []int{1, 4, 8} {
			b.Run(fmt.Sprintf("batch=%d/K=%d", batch, k), func(b *testing.B) {
				r := rand.New(rand.NewPCG(uint64(batch), 1))
				rows := make([][]int64, batch)
				for i := range rows {
					rows[i] = make([]int64, srcLen)
					for j := range rows[i] {
						rows[i][j] = int64(4 + r.IntN(V-4))
					}
				}
				limits := slices.Repeat([]int{steps}, batch)
				var ss []decode.Search
				var reset []func()
				if k == 1 {
					gs, s := greedies(limits, false)
					ss = s
					for _, g := range gs {
						reset = append(reset, g.Reset)
					}
				} else {
					bs, s := beams(limits, k, 1, false)
					ss = s
					for _, x := range bs {
						reset = append(reset, x.Reset)
					}
				}
				ex, err := p.m.NewExecutor(batch*k, batch*k*srcLen)
				if err != nil {
					b.Fatal(err)
				}
				defer ex.Close()
				bt := decode.NewBatch(ex)
				ctx := context.Background()
				run := func() {
					bt.Reset()
					for _, f := range reset {
						f()
					}
					if err := bt.Add(rows, ss); err != nil {
						b.Fatal(err)
					}
					if err := bt.Run(ctx); err != nil {
						b.Fatal(err)
					}
				}
				run()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					run()
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N*batch), "ms/sentence")
			})
		}
	}
}
