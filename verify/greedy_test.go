package verify

import (
	"github.com/attnx/attnx/internal/testenv"
	"slices"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/compare"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/onnxrun"
)

// TestGreedyGraphMatchesPyTorch runs greedy.onnx (encoder plus an ONNX Loop
// over the decoder step) on every fixture: its tokens must equal PyTorch's
// greedy decoding and the step loop's, its attention the step loop's.
func TestGreedyGraphMatchesPyTorch(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	for _, f := range fixtures.List(t) {
		t.Run(f.Name, func(t *testing.T) {
			d := fixtures.Load(t, f.Path(t, ""))
			w, enc, dec := openModel(t, f.Path(t, "checkpoint.pt"))
			ids := sourceTensor(t, d)
			free, err := Run(enc, dec, ids, d.Lengths, d.StepInputs)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Compare(free, d.Expected, Tolerance)
			if err != nil {
				t.Fatal(err)
			}
			checkGreedy(t, w, enc, dec, ids, d.Lengths, d.Expected,
				attention.Special{SOS: f.SOS, EOS: f.EOS, PAD: f.PAD, UNK: -1}, int64(f.MaxLen), rep)
		})
	}
}

// checkGreedy builds greedy.onnx from w, decodes ids with it and with the
// step loop over the sessions enc and dec (w's encoder and decoder), and
// compares both with the reference's greedy_tokens: identical, except rows
// that part from PyTorch's at a near tie found by free (the free-running
// comparison on the reference's greedy tokens), which are counted and
// returned. greedy.onnx's attention must be the step loop's where both
// follow PyTorch.
func checkGreedy(t *testing.T, w *attention.Weights, encS, decS *onnxrun.Session, ids *onnxrun.Tensor, lens []int64, want map[string]*builder.Tensor, sp attention.Special, maxLen int64, free *Report) int {
	t.Helper()
	m, err := attention.Greedy(w, sp, attention.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := openCheckedOn(t, m, encS.Backend())
	B := int64(len(lens))
	out, err := s.Run(map[string]*onnxrun.Tensor{
		attention.InSourceIDs:     ids,
		attention.InSourceLengths: onnxrun.NewInt64([]int64{B}, lens),
		attention.InMaxLen:        onnxrun.Scalar(maxLen),
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := out[attention.OutOutputIDs].Int64s()
	gotAttn, _ := out[attention.OutAttentions].Float32s()
	T := out[attention.OutOutputIDs].Shape[1]
	refTokens, err := referenceGreedy(want)
	if err != nil {
		t.Fatal(err)
	}
	S := ids.Shape[1]

	steps, err := Greedy(encS, decS, ids, lens, sp.SOS, sp.EOS, int(maxLen), nil)
	if err != nil {
		t.Fatal(err)
	}
	loopTokens := make([][]int64, B)
	for b := range B {
		// A row ends after its EOS (then PAD fills it), or runs the whole
		// loop without one.
		row := got[b*T : (b+1)*T]
		if i := slices.Index(row, sp.EOS); i >= 0 {
			row = row[:i+1]
		}
		loopTokens[b] = row
	}
	ties := 0
	for _, c := range []GreedyCheck{compareGreedy("greedy.onnx", loopTokens, refTokens, free), compareGreedy("the step loop", steps.Tokens, refTokens, free)} {
		if !c.Identical {
			t.Fatalf("%s against PyTorch: %s", c.Graph, c.Detail)
		}
		for _, n := range c.NearTies {
			t.Logf("%s: near tie at %s", c.Graph, n)
		}
		ties += len(c.NearTies)
	}
	for b := range B {
		if !slices.Equal(loopTokens[b], refTokens[b]) || !slices.Equal(steps.Tokens[b], refTokens[b]) {
			continue // parted from PyTorch at a near tie, counted above
		}
		for step := int64(0); step < T; step++ {
			row := gotAttn[(b*T+step)*S : (b*T+step+1)*S]
			// The step loop gives the row's own positions; the rest is zero,
			// as it is everywhere once the row has finished.
			ref := make([]float32, S)
			if step < int64(len(steps.Attention[b])) {
				copy(ref, steps.Attention[b][step])
			}
			if r := compare.Float32(row, ref, []int64{S}, Tolerance); !r.OK {
				t.Fatalf("row %d step %d attention vs the step loop: %s", b, step, r)
			}
		}
	}
	return ties
}
