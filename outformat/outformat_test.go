package outformat

import (
	"math"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/translate"
)

// fakeModel is a model with a source prefix of one token and a suffix of
// one (fairseq's </s>), EOS id 2.
type fakeModel struct{ vocab bool }

func (m fakeModel) Info() modeldir.Info {
	return modeldir.Info{SrcSuffix: []int64{2}, Special: attention.Special{EOS: 2}}
}

func (m fakeModel) HasTargetVocab() bool { return m.vocab }

// TestPythonFloat: each value as Python 3's repr prints it (the wants were
// printed by /usr/bin/python3).
func TestPythonFloat(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{1, "1.0"}, {-0.5, "-0.5"}, {0.1, "0.1"}, {1e-05, "1e-05"}, {-1.2345e-07, "-1.2345e-07"},
		{1234567, "1234567.0"}, {1e16, "1e+16"}, {1.5e16, "1.5e+16"}, {123456789012345.6, "123456789012345.6"},
		{-0.0001, "-0.0001"}, {0.00012, "0.00012"}, {math.Inf(1), "inf"}, {math.Inf(-1), "-inf"}, {math.NaN(), "nan"},
		{-3.4028234663852886e+38, "-3.4028234663852886e+38"}, {0, "0.0"}, {math.Copysign(0, -1), "-0.0"},
		{float64(float32(-1.2345)), "-1.2345000505447388"},
	} {
		if got := PythonFloat(c.v); got != c.want {
			t.Errorf("PythonFloat(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestPythonStr: strings as Python 3's repr prints them.
func TestPythonStr(t *testing.T) {
	for _, c := range []struct{ s, want string }{
		{"it's", `"it's"`}, {`a"b`, `'a"b'`}, {`x\y`, `'x\\y'`}, {"\t\x01", `'\t\x01'`}, {`'"`, `'\'"'`}, {"é", "'é'"},
	} {
		if got := pythonStr(c.s); got != c.want {
			t.Errorf("pythonStr(%q) = %s, want %s", c.s, got, c.want)
		}
	}
	if got := pythonList([]string{"▁a", "b'"}); got != `['▁a', "b'"]` {
		t.Errorf("pythonList = %s", got)
	}
}

// result is a two-hypothesis result of source "▁a b </s>".
func result() translate.Result {
	h := []translate.Hypothesis{
		{Tokens: []int64{5, 6, 2}, OutputTokens: []string{"▁x", "y", "</s>"}, Text: "xy", NormalizedScore: -0.25, PositionalScores: []float32{-0.1, -0.2, -0.45}},
		{Tokens: []int64{7, 2}, OutputTokens: []string{"▁z", "</s>"}, Text: "z", NormalizedScore: -1},
	}
	return translate.Result{SourceTokens: []string{"▁a", "b", "</s>"}, Tokens: h[0].Tokens, OutputTokens: h[0].OutputTokens, Text: h[0].Text,
		Hypotheses: h, NormalizedScore: h[0].NormalizedScore}
}

// TestWrite: each format's lines for one result.
func TestWrite(t *testing.T) {
	for _, c := range []struct {
		name string
		o    Options
		m    fakeModel
		want string
	}{
		{"plain", Options{}, fakeModel{true}, "xy\n"},
		{"plain ids", Options{}, fakeModel{false}, "5 6 2\n"},
		{"plain n-best with score", Options{NBest: 3, WithScore: true}, fakeModel{true}, "xy\t-0.25\nz\t-1.0\n\n"},
		// fairseq divides the float32 score tensor by math.log(2) in
		// float32: (torch.tensor(-0.25) / math.log(2)).item() is
		// -0.3606737554073334 (float64 division gives ...376022224085).
		{"fairseq", Options{Format: Fairseq}, fakeModel{true},
			"S-4\t▁a b\nH-4\t-0.3606737554073334\t▁x y\nD-4\t-0.3606737554073334\txy\nP-4\t-0.1443 -0.2885 -0.6492\n" +
				"H-4\t-1.4426950216293335\t▁z\nD-4\t-1.4426950216293335\tz\nP-4\t\n"},
		{"onmt", Options{Format: OpenNMT}, fakeModel{true},
			"\nSENT 5: ['▁a', 'b']\nPRED 5: ▁x y\nPRED SCORE: -0.2500\n\nBEST HYP:\n[-0.2500] ['▁x', 'y']\n[-1.0000] ['▁z']\n"},
	} {
		var b strings.Builder
		w, err := NewWriter(&b, c.m, c.o)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(4, "a b", result()); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, b.String(), c.want)
		}
	}
}

// TestJSON: the JSON object keeps "<eos>" unescaped and drops attention
// unless asked.
func TestJSON(t *testing.T) {
	res := result()
	res.Attention = [][]float32{{1, 0, 0}}
	for _, att := range []bool{false, true} {
		var b strings.Builder
		w, err := NewWriter(&b, fakeModel{true}, Options{JSON: true, Attention: att})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(0, "a <b>", res); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), `"a <b>"`) || strings.Contains(b.String(), `"attention"`) != att {
			t.Errorf("attention %v: %s", att, b.String())
		}
	}
}

// TestNewWriterRefuses names the format at fault.
func TestNewWriterRefuses(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Format: "moses"}, `output format "moses": want plain, fairseq or onmt`},
		{Options{Format: Fairseq, JSON: true}, "JSON output is a Plain one, not fairseq"},
	} {
		if _, err := NewWriter(nil, fakeModel{}, c.o); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}
