package verify

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// Beam search comparison limits (spec "Beam search" and "Tolerances"):
// two candidates whose scores differ by less than BeamTieFloor plus twice
// the score drift measured on the same inputs (Report.ScoreDrift) may be
// ranked either way by two engines; the scores of the same hypothesis must
// agree within ScoreTolerance plus the score drift.
const (
	BeamTieFloor   = 1e-5
	ScoreTolerance = 1e-4
)

// BeamDecoded is the result of beam search for one batch.
type BeamDecoded struct {
	// Hypotheses holds each row's final list, best first.
	Hypotheses [][]decode.Hypothesis
	// NearestTie holds, per row, the smallest score gap between adjacent
	// candidates the search ranked (see decode.Beam.NearestTie), or NaN
	// when the engine does not know it.
	NearestTie []float64
}

// Beam decodes with the encoder and decoder sessions on the decoding
// core, beam search of width k with length penalty alpha (spec "Beam
// search"), each row's hypotheses up to maxLen tokens.
func Beam(enc, dec *onnxrun.Session, sourceIDs *onnxrun.Tensor, sourceLengths []int64, sos, eos int64, k, maxLen int, alpha float64, rules *attention.Rules) (*BeamDecoded, error) {
	if err := (&decode.Beam{K: k, LengthPenalty: alpha}).Validate(); err != nil {
		return nil, err
	}
	bs, err := decodeRows(enc, dec, sourceIDs, sourceLengths, func(b *decode.Beam) {
		*b = decode.Beam{SOS: sos, EOS: eos, K: k, MaxLen: maxLen, LengthPenalty: alpha, Rules: rules}
	})
	if err != nil {
		return nil, err
	}
	d := &BeamDecoded{Hypotheses: make([][]decode.Hypothesis, len(bs)), NearestTie: make([]float64, len(bs))}
	for r := range bs {
		d.Hypotheses[r], d.NearestTie[r] = bs[r].Hypotheses(0), float64(bs[r].NearestTie())
	}
	return d, nil
}

// BeamSearch names a toolkit's beam search for Options.Search.
type BeamSearch struct {
	// Rules is translate.RulesOpenNMT, RulesJoeyNMT or RulesFairseq
	// ("" or RulesSpec: attnx's).
	Rules string
	// NBest is the n-best list compared (0: K).
	NBest int
	// OpenNMTPenalty is OpenNMT-py's -length_penalty (none, avg or wu;
	// "": avg); Options.LengthPenalty is its -alpha, or JoeyNMT's
	// beam_alpha.
	OpenNMTPenalty string
	// UNK fills JoeyNMT's short n-best lists.
	UNK int64
}

func (s BeamSearch) rules() string { return cmp.Or(s.Rules, translate.RulesSpec) }

func (s BeamSearch) nBest(k int) int { return cmp.Or(s.NBest, k) }

func (s BeamSearch) onmtPenalty() string { return cmp.Or(s.OpenNMTPenalty, decode.PenaltyAvg) }

// ToolkitBeam is Beam with a toolkit's beam search (decode.OpenNMTBeam,
// decode.JoeyBeam or decode.FairseqBeam) in place of attnx's; the rows' near ties are unknown.
func ToolkitBeam(enc, dec *onnxrun.Session, sourceIDs *onnxrun.Tensor, sourceLengths []int64, sos, eos int64, k, maxLen int, alpha float64,
	rules *attention.Rules, s BeamSearch) (*BeamDecoded, error) {
	n := s.nBest(k)
	var lists [][]decode.Hypothesis
	var err error
	switch s.rules() {
	case translate.RulesOpenNMT:
		lists, err = nBestRows(enc, dec, sourceIDs, sourceLengths,
			decode.OpenNMTBeam{SOS: sos, EOS: eos, UNK: -1, K: k, NBest: n, MaxLen: maxLen, Penalty: s.onmtPenalty(), Alpha: alpha, Rules: rules})
	case translate.RulesJoeyNMT:
		lists, err = nBestRows(enc, dec, sourceIDs, sourceLengths,
			decode.JoeyBeam{SOS: sos, EOS: eos, UNK: max(s.UNK, 0), K: k, NBest: n, MaxLen: maxLen, Alpha: alpha, Rules: rules})
	case translate.RulesFairseq:
		lists, err = nBestRows(enc, dec, sourceIDs, sourceLengths,
			decode.FairseqBeam{SOS: sos, EOS: eos, UNK: -1, K: k, NBest: n, MaxLen: maxLen, LenPen: alpha, Rules: rules})
	default:
		return nil, fmt.Errorf("verify: beam search rules %q: want %q, %q or %q", s.Rules, translate.RulesOpenNMT, translate.RulesJoeyNMT, translate.RulesFairseq)
	}
	if err != nil {
		return nil, err
	}
	ties := make([]float64, len(lists))
	for r := range ties {
		ties[r] = math.NaN()
	}
	return &BeamDecoded{Hypotheses: lists, NearestTie: ties}, nil
}

// nBestRows checks search, decodes every row with a copy of it and returns
// each row's n-best list.
func nBestRows[T any, P interface {
	*T
	decode.Search
	Validate() error
	Hypotheses(n int) []decode.Hypothesis
}](enc, dec *onnxrun.Session, sourceIDs *onnxrun.Tensor, sourceLengths []int64, search T) ([][]decode.Hypothesis, error) {
	if err := P(&search).Validate(); err != nil {
		return nil, err
	}
	bs, err := decodeRows(enc, dec, sourceIDs, sourceLengths, func(b P) { *b = search })
	if err != nil {
		return nil, err
	}
	lists := make([][]decode.Hypothesis, len(bs))
	for r := range bs {
		lists[r] = P(&bs[r]).Hypotheses(0)
	}
	return lists, nil
}

// LoopBeam beam-searches the batch with tr, translate's loop engine over
// beam.onnx opened with the beam width, length penalty and max_len to
// compare, and returns each row's n-best list as Beam does.
func LoopBeam(tr *translate.Translator, sourceIDs *onnxrun.Tensor, sourceLengths []int64) ([][]decode.Hypothesis, error) {
	rows, _, err := sourceRows(sourceIDs, sourceLengths)
	if err != nil {
		return nil, err
	}
	res, err := tr.TranslateIDs(context.Background(), rows)
	if err != nil {
		return nil, fmt.Errorf("beam.onnx: %w", err)
	}
	out := make([][]decode.Hypothesis, len(res))
	for r := range res {
		for _, h := range res[r].Hypotheses {
			out[r] = append(out[r], decode.Hypothesis{Tokens: h.Tokens, Score: h.Score, NormalizedScore: h.NormalizedScore})
		}
	}
	return out, nil
}

// ReferenceBeam reads the n-best lists `reference.py beam` wrote
// (beam_tokens, beam_lengths, beam_scores, beam_normalized_scores,
// beam_counts).
func ReferenceBeam(t map[string]*builder.Tensor) ([][]decode.Hypothesis, error) {
	get := func(name string, dims int) (*builder.Tensor, error) {
		x := t[name]
		if x == nil || len(x.Dims) != dims {
			return nil, fmt.Errorf("the reference's beam output lacks %s with %d dimensions", name, dims)
		}
		return x, nil
	}
	tt, err := get("beam_tokens", 3)
	if err != nil {
		return nil, err
	}
	B, N, T := int(tt.Dims[0]), int(tt.Dims[1]), int(tt.Dims[2])
	tokens, err := tt.Int64s()
	if err != nil {
		return nil, err
	}
	ints := map[string][]int64{}
	floats := map[string][]float32{}
	for _, name := range []string{"beam_lengths", "beam_scores", "beam_normalized_scores", "beam_counts"} {
		dims := 2
		if name == "beam_counts" {
			dims = 1
		}
		x, err := get(name, dims)
		if err != nil {
			return nil, err
		}
		want := []int64{int64(B), int64(N)}[:dims]
		if !slices.Equal(x.Dims, want) {
			return nil, fmt.Errorf("the reference's %s has shape %v, want %v beside beam_tokens %v", name, x.Dims, want, tt.Dims)
		}
		if name == "beam_lengths" || name == "beam_counts" {
			ints[name], err = x.Int64s()
		} else {
			floats[name], err = x.Float32s()
		}
		if err != nil {
			return nil, fmt.Errorf("the reference's %s: %w", name, err)
		}
	}
	out := make([][]decode.Hypothesis, B)
	for b := range out {
		n := int(ints["beam_counts"][b])
		if n < 0 || n > N {
			return nil, fmt.Errorf("the reference's beam_counts[%d] = %d: outside [0, %d]", b, n, N)
		}
		for j := range n {
			l := int(ints["beam_lengths"][b*N+j])
			if l < 0 || l > T {
				return nil, fmt.Errorf("the reference's beam_lengths[%d, %d] = %d: outside [0, %d]", b, j, l, T)
			}
			base := (b*N + j) * T
			out[b] = append(out[b], decode.Hypothesis{Tokens: tokens[base : base+l : base+l],
				Score: floats["beam_scores"][b*N+j], NormalizedScore: floats["beam_normalized_scores"][b*N+j]})
		}
	}
	return out, nil
}

// BeamCheck compares one engine's beam search with the reference's.
type BeamCheck struct {
	// Engine names what decoded: decoder.onnx step by step, or beam.onnx.
	Engine string `json:"engine"`
	// Beam is K, LengthPenalty alpha.
	Beam          int     `json:"beam"`
	LengthPenalty float64 `json:"length_penalty"`
	// Identical reports whether every row's n-best token lists equal the
	// reference's, up to near-tie swaps, with scores within
	// ScoreTolerance.
	Identical bool `json:"identical"`
	// Rows and Hypotheses count what was compared.
	Rows       int `json:"rows"`
	Hypotheses int `json:"hypotheses"`
	// Swaps counts the hypotheses that differ only as the spec allows: two
	// hypotheses of normalised scores within the near-tie limit in each
	// other's places, or a search that ranked two candidates within that
	// limit of each other and went its own way from there. Every hypothesis
	// is compared, after a swap too.
	Swaps int `json:"near_tie_swaps"`
	// ScoreDrift is the measured drift the limits grew by (see
	// BeamTieFloor).
	ScoreDrift float64 `json:"score_drift"`
	// MaxScoreDiff is the largest difference between the raw or normalised
	// scores of a hypothesis both lists hold.
	MaxScoreDiff float64 `json:"max_score_diff"`
	// Tokens holds the engine's best hypothesis per row, Reference the
	// reference's.
	Tokens    [][]int64 `json:"tokens"`
	Reference [][]int64 `json:"reference_tokens"`
	// Detail describes the first difference, or the swaps.
	Detail string `json:"detail,omitempty"`
}

// CompareBeam compares got (each row's final list, best first; ties as
// BeamDecoded.NearestTie, nil when unknown) with the reference's n-best
// lists want; drift is the score drift measured on the same inputs
// (Report.ScoreDrift of the free-running comparison, 0 when unknown).
// got's lists are cut to the reference's length.
func CompareBeam(engine string, k int, alpha float64, got [][]decode.Hypothesis, ties []float64, drift float64, want [][]decode.Hypothesis) BeamCheck {
	c := BeamCheck{Engine: engine, Beam: k, LengthPenalty: alpha, Identical: true, Rows: len(want), ScoreDrift: drift}
	nearTie, scoreTol := BeamTieFloor+2*drift, ScoreTolerance+drift
	fail := func(format string, args ...any) {
		if c.Identical {
			c.Detail = fmt.Sprintf(format, args...)
		}
		c.Identical = false
	}
	if len(got) != len(want) {
		fail("%d rows decoded, the reference has %d", len(got), len(want))
		return c
	}
	var swapped []string
	for r := range want {
		g, w := got[r], want[r]
		if len(g) > 0 {
			c.Tokens = append(c.Tokens, g[0].Tokens)
		} else {
			c.Tokens = append(c.Tokens, nil)
		}
		if len(w) > 0 {
			c.Reference = append(c.Reference, w[0].Tokens)
		} else {
			c.Reference = append(c.Reference, nil)
		}
		c.Hypotheses += len(w)
		g = g[:min(len(g), len(w))]
		// The scores of every hypothesis both lists hold.
		for _, h := range g {
			j := slices.IndexFunc(w, func(x decode.Hypothesis) bool { return slices.Equal(x.Tokens, h.Tokens) })
			if j < 0 {
				continue
			}
			d := max(math.Abs(float64(h.Score-w[j].Score)), math.Abs(float64(h.NormalizedScore-w[j].NormalizedScore)))
			if d != d || d > c.MaxScoreDiff {
				c.MaxScoreDiff = d
			}
			if !(d <= scoreTol) {
				fail("row %d: %v scores %v (normalised %v), the reference %v (%v)", r, h.Tokens, h.Score, h.NormalizedScore, w[j].Score, w[j].NormalizedScore)
			}
		}
		tie := math.NaN()
		if ties != nil {
			tie = ties[r]
		}
		for i := range w {
			switch {
			case i < len(g) && slices.Equal(g[i].Tokens, w[i].Tokens):
			case i < len(g) && math.Abs(float64(g[i].NormalizedScore-w[i].NormalizedScore)) < nearTie, tie < nearTie:
				// Two hypotheses ranked within the limit (a final-order
				// swap), or the searches parted at a near tie.
				c.Swaps++
				swapped = append(swapped, fmt.Sprintf("row %d hypothesis %d", r, i))
			case i < len(g):
				fail("row %d: hypothesis %d is %v (score %v), the reference's %v (score %v)", r, i, g[i].Tokens, g[i].Score, w[i].Tokens, w[i].Score)
			default:
				fail("row %d: %d hypotheses, the reference has %d", r, len(g), len(w))
			}
		}
	}
	if len(swapped) > 0 && c.Identical {
		if len(swapped) > 5 {
			swapped = append(swapped[:5], "...")
		}
		c.Detail = fmt.Sprintf("%d near-tie swaps, allowed by the spec: %s", c.Swaps, strings.Join(swapped, ", "))
	}
	return c
}
