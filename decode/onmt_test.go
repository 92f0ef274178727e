package decode

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
)

// onmtFixture is testdata/onmt/beam.json, written by OpenNMT-py 3.5.1's own
// BeamSearch (make_fixtures.py there).
type onmtFixture struct {
	Version            string `json:"opennmt_py"`
	Commit             string `json:"commit"`
	Vocab              int    `json:"vocab"`
	PAD, BOS, EOS, UNK int64
	Cases              []struct {
		Case struct {
			Name          string  `json:"name"`
			Beam          int     `json:"beam"`
			NBest         int     `json:"n_best"`
			LengthPenalty string  `json:"length_penalty"`
			Alpha         float64 `json:"alpha"`
			MinLength     int     `json:"min_length"`
			MaxLength     int     `json:"max_length"`
			BanUNK        bool    `json:"ban_unk"`
			Block         int     `json:"block"`
			Exclusion     []int64 `json:"exclusion"`
			Batch         int     `json:"batch"`
			Ratio         float64 `json:"ratio"`
			SrcLen        int     `json:"src_len"`
			Coverage      string  `json:"coverage"`
			Beta          float64 `json:"beta"`
			Stepwise      bool    `json:"stepwise"`
		} `json:"case"`
		Rows map[string][]float64 `json:"rows"`
		// Attention holds, with a coverage penalty, each prefix's
		// attention row over src_len positions.
		Attention  map[string][]float64 `json:"attention"`
		Hypotheses [][]struct {
			Tokens []int64 `json:"tokens"`
			Score  float32 `json:"score"`
		} `json:"hypotheses"`
	} `json:"cases"`
}

// TestOpenNMTBeamMatchesOpenNMT replays OpenNMT-py's own beam search on
// its table model: every log-prob row OpenNMT-py computed is in the file,
// keyed by sentence and prefix; OpenNMTBeam may ask only for those, and
// must end with the same hypotheses (tokens, and penalised scores to the
// last bit) for every case: the defaults of onmt_translate (beam 5, avg),
// n_best, none, wu, min_length with ban_unk, a max_length that cuts, beam 2,
// block_ngram_repeat 2, 3 with ignore_when_blocking, and 1 (which blocks
// nothing in 3.5.1).
func TestOpenNMTBeamMatchesOpenNMT(t *testing.T) {
	testOpenNMTFixture(t, "testdata/onmt/beam.json", "3.5.1", false)
}

// TestOpenNMTBeamV2MatchesOpenNMT2 does the same with OpenNMT-py 2.3.0's
// BeamSearch (beam2.json, make_fixtures.py with ONMT_VERSION=2.3.0) and
// V2, its stop rule.
func TestOpenNMTBeamV2MatchesOpenNMT2(t *testing.T) {
	testOpenNMTFixture(t, "testdata/onmt/beam2.json", "2.3.0", true)
}

func testOpenNMTFixture(t *testing.T, path, version string, v2 bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var fx onmtFixture
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatal(err)
	}
	if fx.Version != version || len(fx.Cases) < 11 {
		t.Fatalf("fixture of OpenNMT-py %s with %d cases", fx.Version, len(fx.Cases))
	}
	for _, c := range fx.Cases {
		t.Run(c.Case.Name, func(t *testing.T) {
			b := &OpenNMTBeam{SOS: fx.BOS, EOS: fx.EOS, UNK: fx.UNK, K: c.Case.Beam, NBest: c.Case.NBest, MaxLen: c.Case.MaxLength,
				MinLen: c.Case.MinLength, Penalty: c.Case.LengthPenalty, Alpha: c.Case.Alpha, BanUNK: c.Case.BanUNK,
				BlockNgram: c.Case.Block, IgnoreWhenBlocking: c.Case.Exclusion, Ratio: c.Case.Ratio, SrcLen: max(c.Case.SrcLen, 4), V2: v2,
				CoveragePenalty: c.Case.Coverage, Beta: c.Case.Beta, Stepwise: c.Case.Stepwise}
			if err := b.Validate(); err != nil {
				t.Fatal(err)
			}
			floats := func(row []float64) []float32 {
				out := make([]float32, len(row))
				for v, x := range row {
					out[v] = float32(x)
				}
				return out
			}
			for sent := range c.Case.Batch {
				key := func(p []int64) string {
					k, _ := json.Marshal(append([]int64{int64(sent)}, p...))
					return string(k)
				}
				row := func(p []int64) ([]float32, bool) {
					r, ok := c.Rows[key(p)]
					return floats(r), ok
				}
				if c.Attention == nil {
					replayTable(t, b, fx.BOS, fx.Vocab, row)
				} else {
					replayTableAttention(t, b, fx.BOS, fx.Vocab, c.Case.SrcLen, row, func(p []int64) ([]float32, bool) {
						r, ok := c.Attention[key(p)]
						return floats(r), ok
					})
				}
				want := c.Hypotheses[sent]
				got := b.Hypotheses(0)
				if len(got) != len(want) {
					t.Fatalf("sentence %d: %d hypotheses, OpenNMT-py %d", sent, len(got), len(want))
				}
				for k := range want {
					same := got[k].NormalizedScore == want[k].Score
					if c.Case.Coverage != "" {
						// torch sums a coverage row in an order that
						// depends on its length: the last bits may differ.
						same = math.Abs(float64(got[k].NormalizedScore-want[k].Score)) <= 2e-6*math.Abs(float64(want[k].Score))
					}
					if !slices.Equal(got[k].Tokens, want[k].Tokens) || !same {
						t.Errorf("sentence %d hypothesis %d: %v %v (score %v); OpenNMT-py %v %v", sent, k, got[k].Tokens, got[k].NormalizedScore, got[k].Score, want[k].Tokens, want[k].Score)
					}
				}
			}
		})
	}
	t.Logf("OpenNMT-py %s (%s): %d cases", fx.Version, fx.Commit, len(fx.Cases))
}

// replayTable decodes one sentence with s (after Reset) over a toolkit
// fixture's table model: row gives the log-probs the toolkit computed
// after a prefix (start token first), false for a prefix the toolkit's
// own search never reached, which fails the test.
// tableRows looks a prefix up in a toolkit fixture's rows of log-probs,
// keyed by the JSON of [sentence, prefix...] and stored as float32 bit
// patterns.
func tableRows(rows map[string][]uint32, sent int) func(prefix []int64) ([]float32, bool) {
	return func(p []int64) ([]float32, bool) {
		key, _ := json.Marshal(append([]int64{int64(sent)}, p...))
		row, ok := rows[string(key)]
		lp := make([]float32, len(row))
		for v, x := range row {
			lp[v] = math.Float32frombits(x)
		}
		return lp, ok
	}
}

// replayTableAttention is replayTable with each prefix's attention row
// over srcLen positions too (attention nil: none, srcLen 0).
func replayTableAttention(t *testing.T, s interface {
	Search
	Reset()
}, sos int64, vocab, srcLen int, row, attention func(prefix []int64) ([]float32, bool)) {
	t.Helper()
	s.Reset()
	prefixes := [][]int64{{sos}}
	inputs, parents := make([]int64, s.Width()), make([]int, s.Width())
	for step := 0; ; step++ {
		lp := make([]float32, 0, len(prefixes)*vocab)
		att := make([]float32, 0, len(prefixes)*srcLen)
		for _, p := range prefixes {
			r, ok := row(p)
			var a []float32
			if ok && attention != nil {
				a, ok = attention(p)
			}
			if !ok {
				t.Fatalf("step %d: asked for prefix %v, which the toolkit's search never reached", step, p)
			}
			lp, att = append(lp, r...), append(att, a...)
		}
		n := s.Advance(NewSlots(len(prefixes), vocab, lp, srcLen, srcLen, att), inputs, parents)
		if n == 0 {
			return
		}
		next := make([][]int64, n)
		for j := range n {
			next[j] = append(slices.Clone(prefixes[parents[j]]), inputs[j])
		}
		prefixes = next
	}
}

func replayTable(t *testing.T, s interface {
	Search
	Reset()
}, sos int64, vocab int, row func(prefix []int64) ([]float32, bool)) {
	t.Helper()
	replayTableAttention(t, s, sos, vocab, 0, row, nil)
}
