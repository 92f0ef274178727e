package serve

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/translate"
)

// encodingJSON is what writeJSON writes: encoding/json, HTML escaping off.
func encodingJSON(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestAppendResponseMatchesEncodingJSON: the answer encoder writes what
// encoding/json writes, byte for byte: nil and empty slices, strings that
// need escapes (quotes, control characters, invalid UTF-8, U+2028, HTML
// characters, non-ASCII), float32 weights at the notation cutoffs, zero,
// negative zero, subnormals, the largest float32, and 100,000 random bit
// patterns.
func TestAppendResponseMatchesEncodingJSON(t *testing.T) {
	floats := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, 1e-6, 9.999999e-7, 1.0000001e-6, 1e-7, 1.5e-10, 1e20, 1e21, 9.99999e20, 1e38,
		math.MaxFloat32, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 1.17549435e-38, 0.1, 0.2, 0.3, 1.0 / 3, 123456789}
	r := rand.New(rand.NewPCG(1, 2))
	for len(floats) < 100000 {
		x := math.Float32frombits(r.Uint32())
		if !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) {
			floats = append(floats, x)
		}
	}
	var rows [][]float32
	for i := 0; i < len(floats); i += 37 {
		rows = append(rows, floats[i:min(i+37, len(floats))])
	}
	cases := []Response{
		{Model: "m", Results: []translate.ResultJSON{}},
		{Model: "m"},
		{Model: "dates", Results: []translate.ResultJSON{
			{Input: "3rd of March 2021", SourceIDs: []int64{5, 6, 7}, Tokens: []int64{8, 2}, Text: "2021-03-03", Attention: [][]float32{{0.25, 0.75, 0}, {1e-8, 0.5, 0.4999999}}},
			{Input: "", SourceIDs: []int64{}, Tokens: nil, Text: "", Attention: nil},
			{Input: "pieces", SourceIDs: []int64{9, 4}, SourceTokens: []string{"\u2581Wed", "\"<&>\u2028"}, Tokens: []int64{3}, OutputTokens: []string{"</s>"}},
			{Input: "x", SourceIDs: nil, Tokens: []int64{}, Attention: [][]float32{nil, {}}},
			{Input: "beam", Tokens: []int64{8, 2}, Text: "2021-03-03", Hypotheses: []translate.HypothesisJSON{
				{Tokens: []int64{8, 2}, Text: "2021-03-03", Score: -0.012345678, NormalizedScore: -0.006172839},
				{Tokens: nil, Text: "März ", Score: -1e-7, NormalizedScore: float32(math.Copysign(0, -1))},
				{Tokens: []int64{}, Score: -3e21, NormalizedScore: -math.MaxFloat32},
			}},
			{Input: "no hypotheses", Hypotheses: []translate.HypothesisJSON{}},
			{Input: "aligned", Tokens: []int64{8, 9, 2}, Alignment: [][2]int{{0, 0}, {12, 1}}, Hypotheses: []translate.HypothesisJSON{
				{Tokens: []int64{8, 9, 2}, Alignment: [][2]int{{0, 0}, {12, 1}}},
				{Tokens: []int64{2}, Alignment: [][2]int{}},
			}},
			{Input: "based", Hypotheses: []translate.HypothesisJSON{{Tokens: []int64{2}, Score: -1}}, ScoreBase: "e"},
			{Input: "greedy", Tokens: []int64{8, 2}, Hypotheses: []translate.HypothesisJSON{
				{Tokens: []int64{8, 2}, Score: -0.5, NormalizedScore: -0.25, PositionalScores: []float32{-0.375, -0.125}},
			}, Score: new(float32(-0.5)), NormalizedScore: new(float32(-0.25)), PositionalScores: []float32{-0.375, -0.125}, ScoreBase: "e"},
			{Input: "certain", Score: new(float32(0)), NormalizedScore: new(float32(math.Copysign(0, -1))), PositionalScores: []float32{0, 1e-8}},
			{Input: "empty positional", Hypotheses: []translate.HypothesisJSON{{PositionalScores: []float32{}}}, PositionalScores: []float32{}},
		}},
		{Model: `quo"te\back`, Results: []translate.ResultJSON{
			{Input: "tab\there\nnew\rline\b\f\x01\x1f", Text: "<b>&amp;</b>"},
			{Input: "März, 3. – 日本\u2028\u2029", Text: "bad \xff\xfe utf-8 \xe2\x82"},
			{Input: "\x7f del", Text: "-9223372036854775808", SourceIDs: []int64{math.MinInt64, math.MaxInt64, -1}},
		}},
		{Model: "many", Results: []translate.ResultJSON{{Input: "floats", Attention: rows}}},
		{Model: "noted", Results: []translate.ResultJSON{{Input: "Th@@ ings"}}, Notes: []string{`the input looks segmented already (it holds "@@ ")`}},
	}
	for i, c := range cases {
		got, err := appendResponse(nil, &c)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		want := encodingJSON(t, c)
		if !bytes.Equal(got, want) {
			n := 0
			for n < len(got) && n < len(want) && got[n] == want[n] {
				n++
			}
			t.Errorf("case %d differs at byte %d:\n got %.200q\nwant %.200q", i, n, got[n:], want[n:])
		}
	}
}

// TestAppendResponseRefusesNaN: a weight that is not a JSON number fails
// the answer with 500, as encoding/json does, instead of writing bad JSON.
func TestAppendResponseRefusesNaN(t *testing.T) {
	for _, x := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		resp := Response{Model: "m", Results: []translate.ResultJSON{{Attention: [][]float32{{0.5, x}}}}}
		rec := httptest.NewRecorder()
		writeResponse(rec, &resp)
		want := `{"error":"encoding the answer: attention[0][1]: ` + map[bool]string{true: "NaN", false: "+Inf"}[math.IsNaN(float64(x))]
		if x < 0 {
			want = `{"error":"encoding the answer: attention[0][1]: -Inf`
		}
		if rec.Code != 500 || !bytes.HasPrefix(rec.Body.Bytes(), []byte(want)) {
			t.Errorf("%v: %d %s", x, rec.Code, rec.Body)
		}
	}
}

// TestAppendResponseRefusesNaNScores: a score that is not a JSON number
// is named by its field, and by its index in positional_scores.
func TestAppendResponseRefusesNaNScores(t *testing.T) {
	nan := float32(math.NaN())
	for _, c := range []struct {
		r    translate.ResultJSON
		want string
	}{
		{translate.ResultJSON{Score: &nan}, "score: NaN is not a JSON number"},
		{translate.ResultJSON{PositionalScores: []float32{-1, nan}}, "positional_scores[1]: NaN is not a JSON number"},
		{translate.ResultJSON{Hypotheses: []translate.HypothesisJSON{{PositionalScores: []float32{nan}}}}, "hypotheses[0]: positional_scores[0]: NaN is not a JSON number"},
	} {
		_, err := appendResponse(nil, &Response{Model: "m", Results: []translate.ResultJSON{c.r}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.r, err, c.want)
		}
	}
}

func BenchmarkAppendResponse(b *testing.B) {
	// One answer of the demo model: 15 source characters, 11 tokens.
	att := make([][]float32, 11)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range att {
		att[i] = make([]float32, 15)
		for j := range att[i] {
			att[i][j] = r.Float32() / 15
		}
	}
	resp := &Response{Model: "dates", Results: []translate.ResultJSON{{Input: "3rd of March 2021", SourceIDs: make([]int64, 15), Tokens: make([]int64, 11), Text: "2021-03-03", Attention: att}}}
	b.Run("appendResponse", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for i := 0; i < b.N; i++ {
			buf, _ = appendResponse(buf[:0], resp)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		for i := 0; i < b.N; i++ {
			buf.Reset()
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.Encode(resp)
		}
	})
}

// TestAppendResponseKnowsEveryField: the answer encoder writes every field
// of Response and translate.ResultJSON; a field added there must be added
// to it (this test then fails until it is).
func TestAppendResponseKnowsEveryField(t *testing.T) {
	written := map[reflect.Type][]string{
		reflect.TypeFor[Response]():                 {"model", "results", "notes"},
		reflect.TypeFor[translate.ResultJSON]():     {"input", "source_ids", "source_tokens", "tokens", "output_tokens", "text", "attention", "alignment", "hypotheses", "score", "normalized_score", "positional_scores", "score_base"},
		reflect.TypeFor[translate.HypothesisJSON](): {"tokens", "output_tokens", "text", "score", "normalized_score", "positional_scores", "alignment"},
	}
	for typ, names := range written {
		var have []string
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			have = append(have, name)
		}
		if !slices.Equal(have, names) {
			t.Errorf("%s has the JSON fields %q; appendResponse writes %q", typ, have, names)
		}
	}
}
