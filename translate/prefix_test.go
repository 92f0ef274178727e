package translate_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// predScores reads the PRED SCORE lines of one sentence each of an
// onmt_translate -verbose log (not the summary line).
func predScores(t *testing.T, path string) []float64 {
	t.Helper()
	var out []float64
	for _, line := range readLines(t, path) {
		m := regexp.MustCompile(`^PRED SCORE: (\S+)$`).FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// openPrefixModel exports onmt-sp (OpenNMT-py 3.5.1, sentencepiece) and
// opens it at its defaults.
func openPrefixModel(t *testing.T) *translate.Translator {
	t.Helper()
	testenv.ORT(t, onnxrun.Init())
	m := filepath.Join(t.TempDir(), "m")
	if _, err := modeldir.Export(filepath.Join("..", "testdata", "toolkits", "onmt-sp", "model.pt"), m, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	tr, err := translate.Open(m, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// TestPrefixMatchesOpenNMT decodes onmt-sp's 48 test sentences with
// make_onmt_prefix.sh's prefixes (each reference's first two words)
// forced, as onmt_translate 3.5.1 -tgt prefix.tgt -tgt_file_prefix did
// with its own code, at -beam_size 5 (its default) and 1: every line
// of its output, and every PRED SCORE (which counts the prefix's
// log-probs) to its four decimals.
func TestPrefixMatchesOpenNMT(t *testing.T) {
	tr := openPrefixModel(t)
	dir := filepath.Join("..", "testdata", "toolkits")
	src := readLines(t, filepath.Join(dir, "onmt-sp", "test.src"))
	prefixes, err := tr.EncodePrefixes(readLines(t, filepath.Join(dir, "onmt-prefix", "prefix.tgt")))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{5, 1} {
		t.Run(fmt.Sprintf("beam%d", k), func(t *testing.T) {
			want := readLines(t, filepath.Join(dir, "onmt-prefix", fmt.Sprintf("beam%d.pred", k)))
			scores := predScores(t, filepath.Join(dir, "onmt-prefix", fmt.Sprintf("beam%d.log", k)))
			if len(want) != len(src) || len(scores) != len(src) {
				t.Fatalf("%d lines and %d scores for %d sources", len(want), len(scores), len(src))
			}
			res, err := tr.TranslateCall(context.Background(), src, translate.CallOptions{Beam: k, AsTestSet: true, Prefixes: prefixes})
			if err != nil {
				t.Fatal(err)
			}
			same := 0
			for i, r := range res {
				if !slices.Equal(r.Tokens[:len(prefixes[i])], prefixes[i]) {
					t.Errorf("line %d: tokens %v do not start with the prefix %v", i+1, r.Tokens, prefixes[i])
				}
				got := strconv.FormatFloat(float64(r.NormalizedScore), 'f', 4, 64)
				if r.Text == want[i] && (got == strconv.FormatFloat(scores[i], 'f', 4, 64) || math.Abs(float64(r.NormalizedScore)-scores[i]) < 6e-5) {
					same++
					continue
				}
				t.Errorf("line %d: %q score %s, onmt_translate %q %.4f", i+1, r.Text, got, want[i], scores[i])
			}
			t.Logf("beam %d: %d/%d lines and scores identical", k, same, len(src))
		})
	}
}

// TestPrefixGreedyFollowsScore holds a prefixed greedy decode to teacher
// forcing: the prefix of the unprefixed output's first two tokens gives
// that output again, and any prefix's output is scored token by token as
// Score's forced pass scores it.
func TestPrefixGreedyFollowsScore(t *testing.T) {
	tr := openPrefixModel(t)
	ctx := context.Background()
	src := readLines(t, filepath.Join("..", "testdata", "toolkits", "onmt-sp", "test.src"))[:6]
	plain, err := tr.TranslateCall(ctx, src, translate.CallOptions{Beam: 1})
	if err != nil {
		t.Fatal(err)
	}
	own := make([][]int64, len(src))
	for i, r := range plain {
		own[i] = r.Tokens[:2]
	}
	again, err := tr.TranslateCall(ctx, src, translate.CallOptions{Beam: 1, Prefixes: own})
	if err != nil {
		t.Fatal(err)
	}
	other, err := tr.EncodePrefixes(readLines(t, filepath.Join("..", "testdata", "toolkits", "onmt-prefix", "prefix.tgt"))[:6])
	if err != nil {
		t.Fatal(err)
	}
	forced, err := tr.TranslateCall(ctx, src, translate.CallOptions{Beam: 1, Prefixes: other})
	if err != nil {
		t.Fatal(err)
	}
	var outs [][]int64
	for i := range src {
		if !slices.Equal(again[i].Tokens, plain[i].Tokens) || !slices.Equal(again[i].Hypotheses[0].PositionalScores, plain[i].Hypotheses[0].PositionalScores) {
			t.Errorf("row %d: its own prefix %v gave %v, want %v", i, own[i], again[i].Tokens, plain[i].Tokens)
		}
		if !slices.Equal(forced[i].Tokens[:len(other[i])], other[i]) {
			t.Errorf("row %d: %v does not start with %v", i, forced[i].Tokens, other[i])
		}
		outs = append(outs, forced[i].Tokens)
	}
	rows := make([][]int64, len(src))
	for i, r := range forced {
		rows[i] = r.Source
	}
	ref, err := tr.ScoreIDs(ctx, rows, outs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range src {
		if !slices.Equal(ref[i].PositionalScores, forced[i].Hypotheses[0].PositionalScores) {
			t.Errorf("row %d: positional scores %v, the forced pass %v", i, forced[i].Hypotheses[0].PositionalScores, ref[i].PositionalScores)
		}
	}
}

// TestPrefixRefusals: prefixes that are not one per text, hold EOS or an
// id outside the vocabulary, leave no room for EOS, or go with a beam
// under rules whose toolkit forces none are refused before anything runs,
// naming the row or the option.
func TestPrefixRefusals(t *testing.T) {
	tr := openPrefixModel(t)
	ctx := context.Background()
	src := []string{"Things have changed since 1991 .", "Odile made a big difference ."}
	for _, c := range []struct {
		name string
		opt  translate.CallOptions
		row  int
		msg  string
	}{
		{"count", translate.CallOptions{Prefixes: [][]int64{{5}}}, 1, "1 prefixes for 2 texts"},
		{"range", translate.CallOptions{Prefixes: [][]int64{nil, {5, 1 << 20}}}, 1, "prefix id 1048576 at position 1"},
		{"eos", translate.CallOptions{Beam: 1, Prefixes: [][]int64{{5, 3}, nil}}, 0, "EOS or PAD"},
		{"room", translate.CallOptions{Beam: 1, MaxLen: 2, Rules: translate.RulesFairseq, Prefixes: [][]int64{nil, {5, 6}}}, 1, "does not leave room for EOS"},
		{"beam", translate.CallOptions{Beam: 3, Rules: translate.RulesSpec, Prefixes: [][]int64{nil, {5}}}, -1, "with Beam 3 under Rules"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := tr.TranslateCall(ctx, src, c.opt)
			var re *translate.RequestError
			if err == nil || !errors.As(err, &re) || !regexp.MustCompile(regexp.QuoteMeta(c.msg)).MatchString(err.Error()) {
				t.Fatalf("error %v, want a *RequestError saying %q", err, c.msg)
			}
			var ie *translate.InputError
			if c.row >= 0 && (!errors.As(err, &ie) && re.Row != c.row || ie != nil && ie.Row != c.row) {
				t.Errorf("error %v names row %d/%v, want %d", err, re.Row, ie, c.row)
			}
		})
	}
}

// TestPrefixLimitsOpenNMT: under OpenNMT-py's rules a row's prefix raises
// its output limit and its minimum length by the prefix's tokens, as
// DecodeStrategy.initialize raises -max_length and -min_length; under
// fairseq's they stay (its prefix counts in max_len).
func TestPrefixLimitsOpenNMT(t *testing.T) {
	tr := openPrefixModel(t)
	rows, err := tr.SourceRows([]string{"Things have changed since 1991 .", "Odile made a big difference ."})
	if err != nil {
		t.Fatal(err)
	}
	prefixes := [][]int64{nil, {5, 6, 7}}
	for _, c := range []struct {
		rules    string
		max, min int // the growth of row 1's limits
	}{{translate.RulesOpenNMT, 3, 3}, {translate.RulesFairseq, 0, 0}} {
		base, err := tr.OutputLimits(rows, translate.CallOptions{Rules: c.rules, MinLen: 2})
		if err != nil {
			t.Fatal(err)
		}
		got, err := tr.OutputLimits(rows, translate.CallOptions{Rules: c.rules, MinLen: 2, Prefixes: prefixes})
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != base[0] || got[1].Max != base[1].Max+c.max || got[1].Min != base[1].Min+c.min {
			t.Errorf("rules %s: limits %+v with the prefix, %+v without: want row 1's Max +%d, Min +%d, row 0's the same", c.rules, got, base, c.max, c.min)
		}
	}
}
