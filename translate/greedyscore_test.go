package translate

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/ops"
)

// TestGreedyResultScores: a greedy Result carries its score whatever the
// engine: one hypothesis (the result's own tokens) whose PositionalScores
// are the chosen tokens' log-probs, Score their float32 sum and
// NormalizedScore what the rules' beam of one ranks by, equal to the
// scores of that beam search run on the decoding core (decode.Beam, or
// decode.OpenNMTBeam as onmt_translate -beam_size 1 runs; JoeyNMT's greedy
// search reports token scores alone: the sum). Result.Score,
// NormalizedScore and PositionalScores are the first hypothesis'.
func TestGreedyResultScores(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[3]
	dir, _ := fixtureModel(t, f)
	src := fixtures.Load(t, f.Path(t, "")).Rows(t)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opt  Options
		// beamOfOne is the reference search of row (nil: JoeyNMT's sum).
		beamOfOne func(tr *Translator, so searchOpts, r int, row []int64) decode.Search
	}{
		{"spec alpha 1", Options{}, specBeamOfOne},
		{"spec alpha 0.6", Options{LengthPenalty: new(0.6)}, specBeamOfOne},
		{"spec native backend", Options{Backend: "go"}, specBeamOfOne},
		{"spec wu 0.6", Options{LengthPenalty: new(0.6), LengthPenaltyWu: true, Engine: EngineSteps}, specBeamOfOne},
		{"opennmt avg 1", Options{Rules: RulesOpenNMT}, onmtBeamOfOne},
		{"opennmt wu 0.4", Options{Rules: RulesOpenNMT, OpenNMTPenalty: decode.PenaltyWu, LengthPenalty: new(0.4)}, onmtBeamOfOne},
		{"opennmt none", Options{Rules: RulesOpenNMT, OpenNMTPenalty: decode.PenaltyNone}, onmtBeamOfOne},
		{"joeynmt", Options{Rules: RulesJoeyNMT}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			engines := []string{EngineSteps, ""} // "": the loop engine, greedy.onnx being there
			if c.opt.Engine != "" {
				engines = []string{c.opt.Engine}
			}
			var steps []Result
			for _, engine := range engines {
				opt := c.opt
				opt.Threads, opt.MaxLen, opt.Engine = 1, f.MaxLen, engine
				tr, err := Open(dir, opt)
				if err != nil {
					t.Fatal(err)
				}
				defer tr.Close()
				if engine == "" && tr.Engine() != EngineLoop {
					t.Fatalf("engine %s, want the loop engine over greedy.onnx", tr.Engine())
				}
				res, err := tr.TranslateIDs(ctx, src)
				if err != nil {
					t.Fatal(err)
				}
				var want []Result
				if c.beamOfOne != nil && tr.Engine() == EngineSteps {
					so := tr.searchOptions()
					ss := make([]decode.Search, len(src))
					for r, row := range src {
						ss[r] = c.beamOfOne(tr, so, r, row)
					}
					if err := tr.decodeSteps(ctx, tr.encoderRows(src), 1, ss); err != nil {
						t.Fatal(err)
					}
					want = searchResults(ss, so)
				}
				if tr.Engine() == EngineSteps {
					steps = res
				}
				for r, got := range res {
					where := fmt.Sprintf("engine %s row %d", tr.Engine(), r)
					checkGreedyScores(t, where, got, c.opt.Rules == RulesOpenNMT)
					if len(got.Hypotheses) != 1 {
						continue
					}
					h := got.Hypotheses[0]
					if c.beamOfOne == nil && h.NormalizedScore != h.Score {
						t.Errorf("%s: JoeyNMT's greedy score %v normalised to %v, want no length penalty", where, h.Score, h.NormalizedScore)
					}
					if want != nil {
						b := want[r].Hypotheses[0]
						if !slices.Equal(b.Tokens, h.Tokens) || b.Score != h.Score || b.NormalizedScore != h.NormalizedScore {
							t.Errorf("%s: greedy %v score %v normalised %v; the beam of one %v score %v normalised %v",
								where, h.Tokens, h.Score, h.NormalizedScore, b.Tokens, b.Score, b.NormalizedScore)
						}
					}
					if steps != nil && tr.Engine() == EngineLoop {
						s := steps[r].Hypotheses[0]
						if !slices.Equal(s.Tokens, h.Tokens) {
							t.Fatalf("%s: tokens %v, the steps engine %v", where, h.Tokens, s.Tokens)
						}
						for k := range h.PositionalScores {
							if d := math.Abs(float64(h.PositionalScores[k] - s.PositionalScores[k])); d > 1e-5 {
								t.Errorf("%s token %d: log-prob %v, the steps engine %v", where, k, h.PositionalScores[k], s.PositionalScores[k])
							}
						}
						if d := math.Abs(float64(h.NormalizedScore - s.NormalizedScore)); d > 1e-4 {
							t.Errorf("%s: normalised score %v, the steps engine %v", where, h.NormalizedScore, s.NormalizedScore)
						}
					}
				}
			}
		})
	}
}

// checkGreedyScores checks a greedy result's score fields: one
// hypothesis, the result's tokens, a log-prob per token (each <= 0) whose
// float32 sum is Score (approx: within its rounding), and the result's
// fields the hypothesis'.
func checkGreedyScores(t *testing.T, where string, got Result, approx bool) {
	t.Helper()
	if len(got.Hypotheses) != 1 {
		t.Errorf("%s: %d hypotheses, want the greedy one", where, len(got.Hypotheses))
		return
	}
	h := got.Hypotheses[0]
	if !slices.Equal(h.Tokens, got.Tokens) || h.Text != got.Text {
		t.Errorf("%s: hypothesis %v %q, result %v %q", where, h.Tokens, h.Text, got.Tokens, got.Text)
	}
	if len(h.PositionalScores) != len(h.Tokens) || len(h.Tokens) == 0 {
		t.Fatalf("%s: %d positional scores for %d tokens", where, len(h.PositionalScores), len(h.Tokens))
	}
	var sum float32
	for k, p := range h.PositionalScores {
		if !(p <= 0) {
			t.Errorf("%s token %d: log-prob %v", where, k, p)
		}
		sum += p
	}
	// OpenNMT-py's running score is divided by each step's penalty and
	// multiplied back: within float32 rounding of the sum.
	if d := math.Abs(float64(sum - h.Score)); d > 1e-6*math.Abs(float64(sum)) || sum >= 0 || !approx && sum != h.Score {
		t.Errorf("%s: score %v, the sum of its tokens' log-probs %v", where, h.Score, sum)
	}
	if got.Score != h.Score || got.NormalizedScore != h.NormalizedScore || !slices.Equal(got.PositionalScores, h.PositionalScores) {
		t.Errorf("%s: result score %v normalised %v positional %v, its hypothesis' %v %v %v", where,
			got.Score, got.NormalizedScore, got.PositionalScores, h.Score, h.NormalizedScore, h.PositionalScores)
	}
}

// specBeamOfOne is the spec's beam search of width 1 for row.
func specBeamOfOne(tr *Translator, so searchOpts, r int, row []int64) decode.Search {
	sp := tr.info.Special
	return &decode.Beam{SOS: sp.SOS, EOS: sp.EOS, K: 1, MaxLen: tr.rowLimit(so, r, row), LengthPenalty: so.alpha, PenaltyWu: so.wu}
}

// onmtBeamOfOne is OpenNMT-py's BeamSearch of width 1 for row, what
// onmt_translate -beam_size 1 runs.
func onmtBeamOfOne(tr *Translator, so searchOpts, r int, row []int64) decode.Search {
	sp := tr.info.Special
	return &decode.OpenNMTBeam{SOS: sp.SOS, EOS: sp.EOS, UNK: sp.UNK, K: 1, NBest: 1, MaxLen: tr.rowLimit(so, r, row),
		Penalty: so.onmtPen, Alpha: so.alpha, SrcLen: len(row)}
}

// TestGreedyGraphWithoutScores: a greedy.onnx exported before it gave
// each token's log-prob (outputs output_ids and attention alone) cannot
// score its results: with the engine left to Open, greedy decoding runs
// on the steps engine, scored, with a note saying why; the loop engine
// asked by name is refused, naming the file, the missing output and the
// remedies.
func TestGreedyGraphWithoutScores(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[3]
	dir, _ := fixtureModel(t, f)
	writeOldGreedy(t, filepath.Join(dir, "greedy.onnx"))
	src := fixtures.Load(t, f.Path(t, "")).Rows(t)

	tr, err := Open(dir, Options{Threads: 1, MaxLen: f.MaxLen})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.Engine() != EngineSteps {
		t.Errorf("engine %s, want steps for a greedy.onnx without %s", tr.Engine(), attention.OutTokenLogProbs)
	}
	if notes := strings.Join(tr.Notes(), "\n"); !strings.Contains(notes, "greedy.onnx has no token_log_probs output") || !strings.Contains(notes, "export the model again") {
		t.Errorf("notes %q: want the reason for the steps engine", notes)
	}
	res, err := tr.TranslateIDs(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	for r, got := range res {
		checkGreedyScores(t, fmt.Sprintf("row %d", r), got, false)
	}

	_, err = Open(dir, Options{Engine: EngineLoop})
	want := fmt.Sprintf(`translate: engine "loop": %s has no output "token_log_probs", so its results would have no score: it was exported by an earlier attnx; export the model again (attnx export) or use engine "steps"`, filepath.Join(dir, "greedy.onnx"))
	if err == nil || err.Error() != want {
		t.Errorf("the loop engine over it: %v\nwant %s", err, want)
	}
}

// writeOldGreedy writes to path a graph with the interface greedy.onnx
// had before token_log_probs: inputs source_ids, source_lengths and
// max_len, outputs output_ids [batch, n] and attention [batch, n, 1]
// (their values are no decoding: Open only reads the interface).
func writeOldGreedy(t *testing.T, path string) {
	t.Helper()
	g := builder.New("old_greedy")
	ids := g.Input(attention.InSourceIDs, builder.Int64, builder.Dims(attention.DimBatch, attention.DimSrcLen))
	g.Input(attention.InSourceLengths, builder.Int64, builder.Dims(attention.DimBatch))
	g.Input(attention.InMaxLen, builder.Int64, builder.Scalar())
	g.Output(attention.OutOutputIDs, ops.Identity(ids))
	axis := g.Init("axis", builder.Int64Tensor([]int64{1}, []int64{2}))
	g.Output(attention.OutAttentions, ops.Unsqueeze(ops.Cast(ids, builder.Float), axis))
	if err := onnxfile.WriteFile(path, &builder.Model{Graph: g, Opset: 17}, onnxfile.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestCutGreedy: a greedy result cut to n tokens is the result of a
// decode with the limit n, its hypothesis and scores included, under the
// spec's rules and OpenNMT-py's (whose running score is rescaled at each
// step).
func TestCutGreedy(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[3]
	dir, _ := fixtureModel(t, f)
	src := fixtures.Load(t, f.Path(t, "")).Rows(t)
	for _, opt := range []Options{{Engine: EngineSteps}, {Rules: RulesOpenNMT, Engine: EngineSteps}} {
		long, err := Open(dir, Options{Threads: 1, Engine: opt.Engine, Rules: opt.Rules, MaxLen: 9})
		if err != nil {
			t.Fatal(err)
		}
		defer long.Close()
		short, err := Open(dir, Options{Threads: 1, Engine: opt.Engine, Rules: opt.Rules, MaxLen: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer short.Close()
		got, err := long.TranslateIDs(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		want, err := short.TranslateIDs(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		cut := 0
		for r := range got {
			if len(got[r].Tokens) > 4 {
				cut++
			}
			long.CutGreedy(&got[r], 4)
			if !reflect.DeepEqual(got[r], want[r]) {
				t.Errorf("rules %q row %d: cut %+v\nwant %+v", opt.Rules, r, got[r], want[r])
			}
		}
		if cut == 0 {
			t.Fatalf("rules %q: no row longer than 4 tokens: nothing was cut", opt.Rules)
		}
	}
}
