package verify

import (
	"fmt"
	"github.com/attnx/attnx/internal/testenv"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// beamConfigs are every architecture with every cell it supports.
func beamConfigs() []attention.Config {
	var out []attention.Config
	for _, a := range attention.StateDictArchs {
		for _, c := range attention.Cells {
			if slices.Contains(attention.TutorialArchs, a) && c != attention.GRU {
				continue // the tutorial's decoders are GRU only
			}
			out = append(out, attention.Config{Arch: a, Cell: c})
		}
	}
	return out
}

// writeInputs writes a ragged batch of source rows (ids 4..vs-1, padded
// with 0) for reference.py, one row at full length.
func writeInputs(t *testing.T, path string, r *rand.Rand, batch, srcLen, vs int) {
	t.Helper()
	ids := make([]int64, batch*srcLen)
	lens := make([]int64, batch)
	for b := range lens {
		lens[b] = int64(1 + r.IntN(srcLen))
		if b == batch/2 {
			lens[b] = int64(srcLen)
		}
		for j := range int(lens[b]) {
			ids[b*srcLen+j] = int64(4 + r.IntN(vs-4))
		}
	}
	err := checkpoint.WriteSafetensors(path, map[string]*builder.Tensor{
		"source_ids":     builder.Int64Tensor([]int64{int64(batch), int64(srcLen)}, ids),
		"source_lengths": builder.Int64Tensor([]int64{int64(batch)}, lens),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
}

// TestBeamParityWithPyTorch has PyTorch make a model of every architecture
// and cell and beam-search a ragged batch with K = 1, 4 and 8; the Go
// engine decodes the batch and every row alone, and beam.onnx (translate's
// loop engine) the batch for K > 1: the n-best lists must be the
// reference's, up to the near-tie swaps the spec allows (counted), scores
// within ScoreTolerance. K = 1 is also checked against greedy
// decoding (these models meet no float32 rounding tie, see
// decode.TestBeamWidthOneFollowsFloat32Sums).
func TestBeamParityWithPyTorch(t *testing.T) {
	requireTorch(t)
	testenv.ORT(t, onnxrun.Init())
	const batch, srcLen, vs, vt, maxLen = 5, 7, 19, 17, 12
	sp := attention.DefaultSpecial
	ks := []struct {
		k     int
		alpha float64
	}{{1, 1}, {4, 1}, {8, 0.6}}
	var table []string
	finished, total := 0, 0
	for i, cfg := range beamConfigs() {
		t.Run(fmt.Sprintf("%s-%s", cfg.Arch, cfg.Cell), func(t *testing.T) {
			dir := t.TempDir()
			ckpt, in := filepath.Join(dir, "m.safetensors"), filepath.Join(dir, "in.safetensors")
			writeInputs(t, in, rand.New(rand.NewPCG(uint64(i), 9)), batch, srcLen, vs)
			calls := [][]string{{"make-model", "--arch", string(cfg.Arch), "--cell", string(cfg.Cell), "--hidden", "11",
				"--layers", strconv.Itoa(1 + i%2), "--src-vocab", strconv.Itoa(vs), "--tgt-vocab", strconv.Itoa(vt),
				"--seed", strconv.Itoa(300 + i), "--std", "0.9", "--format", "safetensors", "--out", ckpt}}
			for _, kc := range ks {
				calls = append(calls, []string{"beam", "--checkpoint", ckpt, "--inputs", in, "--beam", strconv.Itoa(kc.k),
					"--max-len", strconv.Itoa(maxLen), "--length-penalty", fmt.Sprint(kc.alpha),
					"--sos", fmt.Sprint(sp.SOS), "--eos", fmt.Sprint(sp.EOS), "--pad", fmt.Sprint(sp.PAD),
					"--out", filepath.Join(dir, fmt.Sprintf("beam%d.safetensors", kc.k))})
			}
			fixtures.ReferenceBatch(t, calls)
			_, enc, dec := openModel(t, ckpt)
			model := filepath.Join(dir, "model")
			if _, err := modeldir.Export(ckpt, model, modeldir.Options{Beam: true, SOS: &sp.SOS, EOS: &sp.EOS, PAD: &sp.PAD, UNK: &sp.UNK}); err != nil {
				t.Fatal(err)
			}
			inSD, err := checkpoint.LoadSafetensors(in)
			if err != nil {
				t.Fatal(err)
			}
			ids, lens, err := sourceInputs(inSD.Tensors, in)
			if err != nil {
				t.Fatal(err)
			}
			rows, _, err := sourceRows(ids, lens)
			if err != nil {
				t.Fatal(err)
			}
			for _, kc := range ks {
				exp, err := checkpoint.LoadSafetensors(filepath.Join(dir, fmt.Sprintf("beam%d.safetensors", kc.k)))
				if err != nil {
					t.Fatal(err)
				}
				want, err := ReferenceBeam(exp.Tensors)
				if err != nil {
					t.Fatal(err)
				}
				got, err := Beam(enc, dec, ids, lens, sp.SOS, sp.EOS, kc.k, maxLen, kc.alpha, nil)
				if err != nil {
					t.Fatal(err)
				}
				checks := []BeamCheck{CompareBeam("batch", kc.k, kc.alpha, got.Hypotheses, got.NearestTie, 0, want)}
				var alone [][]decode.Hypothesis
				var ties []float64
				for r, row := range rows {
					one := onnxrun.NewInt64([]int64{1, int64(len(row))}, row)
					d, err := Beam(enc, dec, one, lens[r:r+1], sp.SOS, sp.EOS, kc.k, maxLen, kc.alpha, nil)
					if err != nil {
						t.Fatal(err)
					}
					alone, ties = append(alone, d.Hypotheses[0]), append(ties, d.NearestTie[0])
				}
				checks = append(checks, CompareBeam("batch 1", kc.k, kc.alpha, alone, ties, 0, want))
				if kc.k > 1 {
					alpha := kc.alpha
					tr, err := translate.Open(model, translate.Options{Threads: 1, Engine: translate.EngineLoop, MaxLen: maxLen, Beam: kc.k, NBest: kc.k, LengthPenalty: &alpha})
					if err != nil {
						t.Fatal(err)
					}
					g, err := LoopBeam(tr, ids, lens)
					tr.Close()
					if err != nil {
						t.Fatal(err)
					}
					checks = append(checks, CompareBeam("beam.onnx", kc.k, kc.alpha, g, got.NearestTie, 0, want))
				}
				for _, c := range checks {
					if !c.Identical {
						t.Errorf("K %d, %s: %s", kc.k, c.Engine, c.Detail)
					}
					table = append(table, fmt.Sprintf("| %s | %s | %d | %s | %d | %.1e | %d | %v |",
						cfg.Arch, cfg.Cell, kc.k, c.Engine, c.Hypotheses, c.MaxScoreDiff, c.Swaps, c.Identical))
				}
				for _, hs := range want {
					for _, h := range hs {
						total++
						if len(h.Tokens) > 0 && h.Tokens[len(h.Tokens)-1] == sp.EOS {
							finished++
						}
					}
				}
				if kc.k == 1 {
					g, err := Greedy(enc, dec, ids, lens, sp.SOS, sp.EOS, maxLen, nil)
					if err != nil {
						t.Fatal(err)
					}
					for r := range rows {
						if !slices.Equal(got.Hypotheses[r][0].Tokens, g.Tokens[r]) {
							t.Errorf("row %d: K = 1 gave %v, greedy %v", r, got.Hypotheses[r][0].Tokens, g.Tokens[r])
						}
					}
				}
			}
		})
	}
	if finished == 0 || finished == total {
		t.Errorf("%d of %d reference hypotheses end in EOS: the models should stop some hypotheses and not others", finished, total)
	}
	t.Logf("beam parity (%d of %d hypotheses finished with EOS):\n| arch | cell | K | engine | hypotheses | max score diff | near-tie swaps | identical |\n|---|---|---|---|---|---|---|---|\n%s",
		finished, total, strings.Join(table, "\n"))
}

// TestCompareBeam checks the comparison's rules on hand-made lists.
func TestCompareBeam(t *testing.T) {
	h := func(score, norm float32, toks ...int64) decode.Hypothesis {
		return decode.Hypothesis{Tokens: toks, Score: score, NormalizedScore: norm}
	}
	ref := [][]decode.Hypothesis{{h(-1, -0.5, 4, 2), h(-1.5, -0.5000001, 5, 6, 2), h(-3, -1, 7, 2)}}
	cases := []struct {
		name      string
		got       [][]decode.Hypothesis
		tie       float64
		drift     float64
		identical bool
		swaps     int
		detail    string
	}{
		{"same", ref, 1, 0, true, 0, ""},
		{"scores within 1e-4", [][]decode.Hypothesis{{h(-1.00005, -0.5, 4, 2), ref[0][1], ref[0][2]}}, 1, 0, true, 0, ""},
		{"score off", [][]decode.Hypothesis{{h(-1.001, -0.5, 4, 2), ref[0][1], ref[0][2]}}, 1, 0, false, 0, "[4 2] scores -1.001"},
		{"score off by less than the drift", [][]decode.Hypothesis{{h(-1.001, -0.5, 4, 2), ref[0][1], ref[0][2]}}, 1, 2e-3, true, 0, ""},
		{"final near tie swapped", [][]decode.Hypothesis{{ref[0][1], ref[0][0], ref[0][2]}}, 1, 0, true, 2, "2 near-tie swaps"},
		{"far apart swapped", [][]decode.Hypothesis{{ref[0][2], ref[0][1], ref[0][0]}}, 1, 0, false, 0, "hypothesis 0 is [7 2]"},
		{"search parted at a near tie", [][]decode.Hypothesis{{ref[0][0], ref[0][1], h(-2.5, -0.8, 9, 2)}}, 5e-6, 0, true, 1, "near-tie swap"},
		{"search parted, no near tie", [][]decode.Hypothesis{{ref[0][0], ref[0][1], h(-2.5, -0.8, 9, 2)}}, 1e-3, 0, false, 0, "hypothesis 2 is [9 2]"},
		{"search parted within the measured drift", [][]decode.Hypothesis{{ref[0][0], ref[0][1], h(-2.5, -0.8, 9, 2)}}, 1e-3, 1e-3, true, 1, "near-tie swap"},
		{"drift too small for the tie", [][]decode.Hypothesis{{ref[0][0], ref[0][1], h(-2.5, -0.8, 9, 2)}}, 1e-3, 1e-4, false, 0, "hypothesis 2 is [9 2]"},
		{"too few", [][]decode.Hypothesis{ref[0][:2]}, 1, 0, false, 0, "2 hypotheses, the reference has 3"},
		{"extra hypotheses are cut", [][]decode.Hypothesis{append(slices.Clone(ref[0]), h(-9, -9, 3))}, 1, 0, true, 0, ""},
	}
	for _, c := range cases {
		got := CompareBeam("test", 3, 1, c.got, []float64{c.tie}, c.drift, ref)
		if got.Identical != c.identical || got.Swaps != c.swaps || !strings.Contains(got.Detail, c.detail) {
			t.Errorf("%s: identical %v swaps %d detail %q; want %v, %d, %q", c.name, got.Identical, got.Swaps, got.Detail, c.identical, c.swaps, c.detail)
		}
	}
}
