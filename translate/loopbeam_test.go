package translate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/fixtures"
)

// TestLoopBeamMatchesSteps beam-searches every fixture's inputs with
// beam.onnx (the loop engine) and with the decoding core (the steps
// engine): the n-best lists must hold the same tokens in the same order,
// with the same scores (within 1e-5: the two run the same float32
// operations in different graphs), and the best hypothesis the same
// attention. It runs with a fixed MaxLen and with the per-row default,
// which makes the loop engine run rows of different limits apart.
func TestLoopBeamMatchesSteps(t *testing.T) {
	needORT(t)
	hyps, rows := 0, 0
	var maxDiff float64
	for _, f := range fixtures.List(t) {
		t.Run(f.Name, func(t *testing.T) {
			w := fixtures.Weights(t, f.Path(t, "checkpoint.pt"))
			dir := t.TempDir()
			writeModelDir(t, dir, w, modelSpec{special: attention.Special{SOS: f.SOS, EOS: f.EOS, PAD: f.PAD, UNK: 3},
				src: charVocab(w.Config.SrcVocab), tgt: charVocab(w.Config.TgtVocab), beam: true})
			src := fixtures.Load(t, f.Path(t, "")).Rows(t)
			for _, c := range []struct {
				k, n, maxLen int
				alpha        *float64
			}{{4, 4, f.MaxLen, nil}, {3, 2, 0, new(0.6)}, {8, 8, f.MaxLen, new(0.0)}} {
				name := fmt.Sprintf("K=%d n=%d max_len=%d", c.k, c.n, c.maxLen)
				var res [2][]Result
				for i, engine := range []string{EngineSteps, EngineLoop} {
					tr, err := Open(dir, Options{Threads: 1, Engine: engine, MaxLen: c.maxLen, Beam: c.k, NBest: c.n, LengthPenalty: c.alpha})
					if err != nil {
						t.Fatalf("%s %s: %v", name, engine, err)
					}
					if tr.Engine() != engine {
						t.Errorf("%s: engine %s, want %s", name, tr.Engine(), engine)
					}
					if res[i], err = tr.TranslateIDs(context.Background(), src); err != nil {
						t.Fatalf("%s %s: %v", name, engine, err)
					}
					tr.Close()
				}
				for r := range src {
					steps, loop := res[0][r], res[1][r]
					rows++
					if len(loop.Hypotheses) != len(steps.Hypotheses) || len(loop.Hypotheses) == 0 {
						t.Fatalf("%s row %d: beam.onnx %d hypotheses, the decoding core %d", name, r, len(loop.Hypotheses), len(steps.Hypotheses))
					}
					for j, h := range loop.Hypotheses {
						g := steps.Hypotheses[j]
						d := max(math.Abs(float64(h.Score-g.Score)), math.Abs(float64(h.NormalizedScore-g.NormalizedScore)))
						maxDiff = max(maxDiff, d)
						hyps++
						if !slices.Equal(h.Tokens, g.Tokens) || h.Text != g.Text || !(d <= 1e-5) {
							t.Errorf("%s row %d hypothesis %d: beam.onnx %v %q %v %v, the decoding core %v %q %v %v", name, r, j,
								h.Tokens, h.Text, h.Score, h.NormalizedScore, g.Tokens, g.Text, g.Score, g.NormalizedScore)
						}
					}
					if !slices.Equal(loop.Tokens, loop.Hypotheses[0].Tokens) || loop.Text != loop.Hypotheses[0].Text {
						t.Errorf("%s row %d: result %v, best hypothesis %v", name, r, loop.Tokens, loop.Hypotheses[0].Tokens)
					}
					checkAttention(t, "loop beam", r, loop, len(src[r]))
					if len(loop.Attention) != len(steps.Attention) {
						t.Fatalf("%s row %d: %d attention rows, the decoding core %d", name, r, len(loop.Attention), len(steps.Attention))
					}
					for j := range loop.Attention {
						for s, a := range loop.Attention[j] {
							if d := math.Abs(float64(a - steps.Attention[j][s])); !(d <= 1e-5) {
								t.Fatalf("%s row %d step %d: attention %v, the decoding core %v", name, r, j, loop.Attention[j], steps.Attention[j])
							}
						}
					}
				}
			}
		})
	}
	t.Logf("beam.onnx against the decoding core: %d rows, %d hypotheses, largest score difference %.2g", rows, hyps, maxDiff)
}
