package verify

import (
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/compare"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/runtime"
)

// TestGreedyGraphMatchesPyTorch runs greedy.onnx (encoder plus an ONNX Loop
// over the decoder step) on every fixture: its tokens must equal PyTorch's
// greedy decoding and the step loop's, its attention the step loop's.
func TestGreedyGraphMatchesPyTorch(t *testing.T) {
	if err := runtime.Init(); err != nil {
		t.Fatalf("ONNX Runtime: %v", err)
	}
	for _, f := range fixtures.List(t) {
		t.Run(f.Name, func(t *testing.T) {
			d := fixtures.Load(t, f.Path(t, ""))
			w, enc, dec := openModel(t, f.Path(t, "checkpoint.pt"))
			checkGreedy(t, w, enc, dec, sourceTensor(t, d), d.Lengths, d.Expected,
				attention.Special{SOS: f.SOS, EOS: f.EOS, PAD: f.PAD, UNK: -1}, int64(f.MaxLen))
		})
	}
}

// checkGreedy builds greedy.onnx from w, decodes ids with it and with the
// step loop over the sessions enc and dec (w's encoder and decoder), and
// compares both with the reference's greedy_tokens.
func checkGreedy(t *testing.T, w *attention.Weights, encS, decS *runtime.Session, ids *runtime.Tensor, lens []int64, want map[string]*builder.Tensor, sp attention.Special, maxLen int64) {
	t.Helper()
	m, err := attention.Greedy(w, sp, attention.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := openChecked(t, m)
	B := int64(len(lens))
	out, err := s.Run(map[string]*runtime.Tensor{
		attention.InSourceIDs:     ids,
		attention.InSourceLengths: runtime.NewInt64([]int64{B}, lens),
		attention.InMaxLen:        runtime.Scalar(maxLen),
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := out[attention.OutOutputIDs].Int64s()
	gotAttn, _ := out[attention.OutAttentions].Float32s()
	T := out[attention.OutOutputIDs].Shape[1]
	wantTok, _ := want["greedy_tokens"].Int64s()
	refLen := want["greedy_tokens"].Dims[1]
	S := ids.Shape[1]

	steps, err := Greedy(encS, decS, ids, lens, sp.SOS, sp.EOS, int(maxLen))
	if err != nil {
		t.Fatal(err)
	}
	for b := int64(0); b < B; b++ {
		for step := int64(0); step < refLen; step++ {
			g := sp.PAD
			if step < T {
				g = got[b*T+step]
			}
			if w := wantTok[b*refLen+step]; g != w {
				t.Fatalf("row %d step %d: greedy.onnx token %d, PyTorch %d", b, step, g, w)
			}
			s := sp.PAD
			if step < int64(len(steps.Tokens[b])) {
				s = steps.Tokens[b][step]
			}
			if s != g {
				t.Fatalf("row %d step %d: greedy.onnx token %d, step loop %d", b, step, g, s)
			}
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
}
