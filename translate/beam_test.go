package translate

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/testenv"
)

// TestBeamSearchMatchesPyTorch beam-searches each fixture's inputs with the
// steps engine and compares every n-best list with `reference.py beam`
// (tokens exactly, scores within 1e-4), for two widths and length
// penalties; the result's Tokens, Text and Attention are the best
// hypothesis', and each row decodes alone as in its batch.
func TestBeamSearchMatchesPyTorch(t *testing.T) {
	needORT(t)
	testenv.Torch(t)
	for _, f := range fixtures.List(t)[:3] {
		t.Run(f.Name, func(t *testing.T) {
			dir, _ := fixtureModel(t, f)
			d := fixtures.Load(t, f.Path(t, ""))
			src := d.Rows(t)
			for _, c := range []struct {
				k, n  int
				alpha *float64
			}{{4, 3, nil}, {6, 6, new(0.0)}} {
				alpha := DefaultLengthPenalty
				if c.alpha != nil {
					alpha = *c.alpha
				}
				out := filepath.Join(t.TempDir(), "beam.safetensors")
				fixtures.Reference(t, "beam", "--checkpoint", f.Path(t, "checkpoint.pt"), "--inputs", f.Path(t, "inputs.safetensors"),
					"--beam", strconv.Itoa(c.k), "--n-best", strconv.Itoa(c.n), "--max-len", strconv.Itoa(f.MaxLen),
					"--length-penalty", fmt.Sprint(alpha), "--sos", fmt.Sprint(f.SOS), "--eos", fmt.Sprint(f.EOS), "--pad", fmt.Sprint(f.PAD), "--out", out)
				want := readReferenceBeam(t, out)

				tr, err := Open(dir, Options{Threads: 1, MaxLen: f.MaxLen, Beam: c.k, NBest: c.n, LengthPenalty: c.alpha})
				if err != nil {
					t.Fatal(err)
				}
				if tr.Engine() != EngineSteps {
					t.Errorf("engine %s: beam search runs on the steps engine by default", tr.Engine())
				}
				res, err := tr.TranslateIDs(context.Background(), src)
				if err != nil {
					t.Fatal(err)
				}
				for r := range res {
					got := res[r]
					if len(got.Hypotheses) != len(want[r]) {
						t.Fatalf("K %d row %d: %d hypotheses, the reference %d", c.k, r, len(got.Hypotheses), len(want[r]))
					}
					for j, h := range got.Hypotheses {
						wh := want[r][j]
						if !slices.Equal(h.Tokens, wh.Tokens) || abs32(h.Score-wh.Score) > 1e-4 || abs32(h.NormalizedScore-wh.NormalizedScore) > 1e-4 {
							t.Errorf("K %d row %d hypothesis %d: %v %v %v, PyTorch %v %v %v", c.k, r, j,
								h.Tokens, h.Score, h.NormalizedScore, wh.Tokens, wh.Score, wh.NormalizedScore)
						}
						if h.Text != tr.TargetText(h.Tokens) || len(h.OutputTokens) != len(h.Tokens) {
							t.Errorf("K %d row %d hypothesis %d: text %q, tokens %v", c.k, r, j, h.Text, h.OutputTokens)
						}
					}
					best := got.Hypotheses[0]
					if !slices.Equal(got.Tokens, best.Tokens) || got.Text != best.Text || !slices.Equal(got.OutputTokens, best.OutputTokens) {
						t.Errorf("K %d row %d: result %v %q, best hypothesis %v %q", c.k, r, got.Tokens, got.Text, best.Tokens, best.Text)
					}
					checkAttention(t, "beam", r, got, len(src[r]))
					one, err := tr.TranslateIDs(context.Background(), src[r:r+1])
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(one[0].Hypotheses, got.Hypotheses) {
						t.Errorf("K %d row %d alone: %v, in the batch %v", c.k, r, one[0].Hypotheses, got.Hypotheses)
					}
				}
				tr.Close()
			}
		})
	}
}

func abs32(x float32) float32 { return max(x, -x) }

type refHyp struct {
	Tokens                 []int64
	Score, NormalizedScore float32
}

// readReferenceBeam reads reference.py beam's output.
func readReferenceBeam(t *testing.T, path string) [][]refHyp {
	t.Helper()
	sd, err := checkpoint.LoadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	toks, _ := sd.Tensors["beam_tokens"].Int64s()
	lens, _ := sd.Tensors["beam_lengths"].Int64s()
	counts, _ := sd.Tensors["beam_counts"].Int64s()
	scores, _ := sd.Tensors["beam_scores"].Float32s()
	norm, _ := sd.Tensors["beam_normalized_scores"].Float32s()
	dims := sd.Tensors["beam_tokens"].Dims
	N, T := int(dims[1]), int(dims[2])
	out := make([][]refHyp, dims[0])
	for b := range out {
		for j := range int(counts[b]) {
			i := b*N + j
			out[b] = append(out[b], refHyp{toks[i*T : i*T+int(lens[i])], scores[i], norm[i]})
		}
	}
	return out
}

// TestBeamOneIsGreedy: Beam 1 (and 0) is greedy decoding, its one
// hypothesis scored (TestGreedyResultScores checks the scores), on both
// engines.
func TestBeamOneIsGreedy(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[3]
	dir, _ := fixtureModel(t, f)
	src := fixtures.Load(t, f.Path(t, "")).Rows(t)
	var want []Result
	for _, opt := range []Options{{}, {Beam: 1}, {Beam: 1, NBest: 1, Engine: EngineLoop}, {Beam: 1, Engine: EngineSteps, LengthPenalty: new(0.3)}} {
		opt.Threads, opt.MaxLen = 1, f.MaxLen
		tr, err := Open(dir, opt)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tr.TranslateIDs(context.Background(), src)
		tr.Close()
		if err != nil {
			t.Fatal(err)
		}
		for r := range got {
			checkGreedyScores(t, fmt.Sprintf("%+v row %d", opt, r), got[r], false)
		}
		if want == nil {
			want = got
		} else if !reflect.DeepEqual(tokensOf(got), tokensOf(want)) {
			t.Errorf("%+v: %v, want %v", opt, tokensOf(got), tokensOf(want))
		}
	}
}

func tokensOf(rs []Result) [][]int64 {
	out := make([][]int64, len(rs))
	for i, r := range rs {
		out[i] = r.Tokens
	}
	return out
}
