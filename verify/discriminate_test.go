package verify

import (
	"math/rand/v2"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
)

// openWeights builds, checks and opens the encoder and decoder of w.
func openWeights(t *testing.T, w *attention.Weights) (enc, dec *onnxrun.Session) {
	t.Helper()
	return openWeightsOn(t, w, "")
}

// openWeightsOn is openWeights on backend ("" for the default).
func openWeightsOn(t *testing.T, w *attention.Weights, backend string) (enc, dec *onnxrun.Session) {
	t.Helper()
	var sessions []*onnxrun.Session
	for _, build := range []func(*attention.Weights, attention.BuildOptions) (*builder.Model, error){attention.Encoder, attention.Decoder} {
		m, err := build(w, attention.BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, openCheckedOn(t, m, backend))
	}
	return sessions[0], sessions[1]
}

// edit returns a copy of x with f applied to its values.
func edit(t *testing.T, x *builder.Tensor, f func([]float32)) *builder.Tensor {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	f(v)
	return builder.FloatTensor(x.Dims, v)
}

// swapBlocks swaps row blocks i and j (of rows rows each, cols wide) of
// one direction of an ONNX recurrent weight: two gates trade places.
func swapBlocks(v []float32, rows, cols, i, j int) {
	n := rows * cols
	a, b := v[i*n:(i+1)*n], v[j*n:(j+1)*n]
	for k := range a {
		a[k], b[k] = b[k], a[k]
	}
}

// TestStepIsolatedDiscriminates shows that the step-isolated verdict tells
// bugs from rounding. Against the reference outputs of the unchanged
// model: one decoder bias or classifier weight off by 1e-3, or the
// decoder's first two gates swapped, fail at the first decoder step; one
// input weight of a recurrent layer off by 1e-3 fails at the first step
// whose input gives it weight; the unchanged model with 1e-6
// relative noise added to every state and encoder output it is fed, at
// every step, passes, and so does its free-running decode with that noise
// added to its own states each step (its tokens equal PyTorch's up to
// counted near ties). The models are an LSTM and a GRU fixture.
func TestStepIsolatedDiscriminates(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	for _, name := range []string{"luong-general_b4_l2", "bahdanau_b1_l1"} {
		var f *fixtures.Fixture
		for _, x := range fixtures.List(t) {
			if x.Name == name {
				f = &x
			}
		}
		if f == nil {
			t.Fatalf("no fixture %s", name)
		}
		d := fixtures.Load(t, f.Path(t, ""))
		ids := sourceTensor(t, d)
		bugs := []struct {
			name string
			// anyStep: the weight multiplies an input, so its error shows
			// at the first step whose input makes it matter, not always
			// the first.
			anyStep bool
			break_  func(w *attention.Weights)
		}{
			{"one input weight of the top decoder layer off by 1e-3", true, func(w *attention.Weights) {
				top := &w.Decoder[len(w.Decoder)-1]
				top.W = edit(t, top.W, func(v []float32) { v[len(v)/3] += 1e-3 })
			}},
			{"one bias of the first decoder layer off by 1e-3", false, func(w *attention.Weights) {
				l := &w.Decoder[0]
				l.B = edit(t, l.B, func(v []float32) { v[1] += 1e-3 })
			}},
			{"one classifier weight off by 1e-3", false, func(w *attention.Weights) {
				for k, p := range w.Params {
					if k == "decoder.classifier.weight" {
						w.Params[k] = edit(t, p, func(v []float32) { v[7] += 1e-3 })
					}
				}
			}},
			{"the decoder's first two gates swapped", false, func(w *attention.Weights) {
				l := &w.Decoder[0]
				H := w.Config.Hidden
				for _, x := range []**builder.Tensor{&l.W, &l.R} {
					cols := int((*x).Dims[2])
					*x = edit(t, *x, func(v []float32) { swapBlocks(v, H, cols, 0, 1) })
				}
				l.B = edit(t, l.B, func(v []float32) {
					swapBlocks(v, H, 1, 0, 1)
					gates := len(v) / (2 * H)
					swapBlocks(v[gates*H:], H, 1, 0, 1)
				})
			}},
		}
		for _, bug := range bugs {
			t.Run(name+"/"+bug.name, func(t *testing.T) {
				w := fixtures.Weights(t, f.Path(t, "checkpoint.pt"))
				if _, ok := w.Params["decoder.classifier.weight"]; !ok && bug.name == "one classifier weight off by 1e-3" {
					t.Fatalf("%s has no decoder.classifier.weight", name)
				}
				bug.break_(w)
				enc, dec := openWeights(t, w)
				tr, err := RunIsolated(enc, dec, ids, d.Lengths, d.StepInputs, d.Expected)
				if err != nil {
					t.Fatal(err)
				}
				rep, err := Compare(tr, d.Expected, Tolerance)
				if err != nil {
					t.Fatal(err)
				}
				first := -2
				for _, r := range rep.Rows {
					if !r.OK && r.Step >= 0 {
						first = r.Step
						t.Logf("fails at step %d: %s %s", r.Step, r.Output, r.Detail)
						break
					}
				}
				if rep.OK || first < 0 || (first != 0 && !bug.anyStep) {
					t.Errorf("step-isolated check: ok %v, first failing decoder step %d; want a failure at step 0", rep.OK, first)
				}
			})
		}

		t.Run(name+"/1e-6 relative noise", func(t *testing.T) {
			w := fixtures.Weights(t, f.Path(t, "checkpoint.pt"))
			enc, dec := openWeights(t, w)
			rng := rand.New(rand.NewPCG(5, uint64(len(name))))
			noise := func(v []float32) {
				for i := range v {
					v[i] *= 1 + 1e-6*float32(rng.NormFloat64())
				}
			}
			feed := isolatedFeed(d.Expected)
			noisy := func(t int, ex *decode.Executor) error {
				if err := feed(t, ex); err != nil {
					return err
				}
				if t == 0 {
					noise(ex.EncoderOutputs())
				}
				for k := range ex.Model().States() {
					noise(ex.State(k))
				}
				return nil
			}
			tr, err := run(enc, dec, ids, d.Lengths, d.StepInputs, noisy)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Compare(tr, d.Expected, Tolerance)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rep.Rows {
				if !r.OK {
					t.Errorf("step-isolated with noise: step %d %s: %s", r.Step, r.Output, r.Detail)
				}
			}
			free, err := run(enc, dec, ids, d.Lengths, d.StepInputs, func(t int, ex *decode.Executor) error {
				for k := range ex.Model().States() {
					noise(ex.State(k))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			frep, err := Compare(free, d.Expected, Tolerance)
			if err != nil {
				t.Fatal(err)
			}
			if !frep.TokensIdentical {
				for _, r := range frep.Rows {
					if r.Output == "tokens" && !r.OK {
						t.Errorf("free-running with noise: step %d: %s", r.Step, r.Detail)
					}
				}
			}
			t.Logf("isolated max abs %v; free-running drift %v, %d near ties", rep.MaxAbs, frep.MaxAbs, len(frep.NearTies))
		})
	}
}
