package mtscore

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readLines(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// TestMatchesSacreBLEU compares score lines, JSON and unrounded scores
// with what sacreBLEU 2.6.0 computed (testdata/make_fixtures.py) on the
// first 400 segments of four WMT17 en-de systems and on attnx's own corpus
// of licenses, other scripts, numbers, entities and empty lines, with one
// and two references and every option.
func TestMatchesSacreBLEU(t *testing.T) {
	data, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Version string `json:"sacrebleu"`
		Cases   []struct {
			Hyp    string
			Refs   []string
			Metric string
			Opts   struct {
				Lowercase      bool     `json:"lowercase"`
				Tokenize       string   `json:"tokenize"`
				SmoothMethod   string   `json:"smooth_method"`
				SmoothValue    *float64 `json:"smooth_value"`
				MaxNgramOrder  int      `json:"max_ngram_order"`
				EffectiveOrder bool     `json:"effective_order"`
				WordOrder      int      `json:"word_order"`
				Whitespace     bool     `json:"whitespace"`
				EpsSmoothing   bool     `json:"eps_smoothing"`
				Beta           int      `json:"beta"`
			}
			Line  string
			JSON  map[string]any
			Score float64
		}
	}
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Cases) < 20 {
		t.Fatalf("%d cases", len(fx.Cases))
	}
	for _, c := range fx.Cases {
		hyps := readLines(t, c.Hyp)
		var refs [][]string
		for _, r := range c.Refs {
			refs = append(refs, readLines(t, r))
		}
		var s Score
		o := c.Opts
		if c.Metric == "bleu" {
			s, err = BLEU(hyps, refs, BLEUOptions{Tokenize: o.Tokenize, Smooth: o.SmoothMethod, SmoothValue: o.SmoothValue,
				MaxOrder: o.MaxNgramOrder, EffectiveOrder: o.EffectiveOrder, Lowercase: o.Lowercase})
		} else {
			s, err = ChrF(hyps, refs, ChrFOptions{WordOrder: o.WordOrder, Beta: o.Beta, Lowercase: o.Lowercase, Whitespace: o.Whitespace, EpsSmoothing: o.EpsSmoothing})
		}
		if err != nil {
			t.Fatal(err)
		}
		name := c.Metric + " " + c.Hyp + " " + strings.Join(c.Refs, "+")
		ours := strings.ReplaceAll(c.Line, "version:"+fx.Version, "version:"+Version)
		if got := Line(s, 2); got != ours {
			t.Errorf("%s %+v:\n got  %s\n want %s", name, o, got, ours)
		}
		if d := math.Abs(s.Value() - c.Score); d > 1e-9*math.Max(1, c.Score) {
			t.Errorf("%s %+v: score %.12f, sacreBLEU %.12f", name, o, s.Value(), c.Score)
		}
		js, err := JSON(s, 2)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(js, &got); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, js)
		}
		want := c.JSON
		want["version"] = Version
		want["signature"] = strings.ReplaceAll(want["signature"].(string), "version:"+fx.Version, "version:"+Version)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: JSON\n got  %v\n want %v", name, got, want)
		}
	}
}

// The cases of sacreBLEU's own tests (test/test_bleu.py, test_chrf.py).
var (
	sbRefs = [][]string{
		{"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
		{"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."},
	}
	sbHyps = []string{"The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."}
)

func f(v float64) *float64 { return &v }

func TestSacreBLEUTestCasesBLEU(t *testing.T) {
	raw := func(floor float64) BLEUOptions {
		return BLEUOptions{Tokenize: TokenizeNone, Smooth: SmoothFloor, SmoothValue: f(floor), EffectiveOrder: true}
	}
	for _, c := range []struct {
		hyps []string
		refs [][]string
		opts BLEUOptions
		want float64 // 0..100
	}{
		{sbHyps, sbRefs, BLEUOptions{}, 48.530827},
		{[]string{"", "", ""}, sbRefs, BLEUOptions{}, 0},
		{sbHyps, sbRefs, BLEUOptions{Tokenize: TokenizeNone}, 49.1919566},
		{sbHyps, sbRefs, BLEUOptions{Smooth: SmoothNone}, 48.530827},
		{[]string{"this is a test", "another test"}, [][]string{{"ref1", "ref2"}}, raw(0.01), 0},
		{[]string{"this is a test"}, [][]string{{"this is a test"}}, raw(0.01), 100},
		{[]string{"this is a fest"}, [][]string{{"this is a test"}}, raw(0.01), 22.3606797749979},
		{[]string{"test"}, [][]string{{"a test"}}, raw(0.01), 36.78794411714425},
		{[]string{"a test"}, [][]string{{"a test"}}, raw(0.01), 100},
		{[]string{"a little test"}, [][]string{{"a test"}}, raw(0.01), 3.218297948685433},
		{[]string{"am I am a character sequence"}, [][]string{{"I am a symbol string sequence a a"}}, raw(0), 0},
		{[]string{"am I am a character sequence"}, [][]string{{"I am a symbol string sequence a a"}}, raw(0.1), 15.55722182},
	} {
		s, err := BLEU(c.hyps, c.refs, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(s.Score-c.want) > 1e-6 {
			t.Errorf("%q %+v: %.8f, want %.8f", c.hyps, c.opts, s.Score, c.want)
		}
	}
	s, _ := BLEU([]string{"am I am a character sequence"}, [][]string{{"I am a symbol string sequence a a"}}, raw(0.01))
	if !reflect.DeepEqual(s.Counts, []int{4, 2, 1, 0}) || !reflect.DeepEqual(s.Totals, []int{6, 5, 4, 3}) {
		t.Errorf("statistics %v/%v", s.Counts, s.Totals)
	}
	if got := (BLEUOptions{Smooth: SmoothNone}).compute([]float64{9, 7, 5, 3}, []float64{10, 8, 6, 4}, 11, 11).Score; math.Abs(got-83.75922397) > 1e-6 {
		t.Errorf("scoring %.8f", got)
	}
	for order, want := range map[int]string{1: "77.65", 2: "60.50", 3: "53.93", 4: "48.53", 5: "46.14", 6: "43.28"} {
		s, _ := BLEU(sbHyps, sbRefs, BLEUOptions{MaxOrder: order})
		if got := strings.Fields(Line(s, 2))[2]; got != want {
			t.Errorf("order %d: %s, want %s", order, got, want)
		}
	}
}

func TestSacreBLEUTestCasesChrF(t *testing.T) {
	for _, c := range []struct {
		hyp, ref string
		eps, ws  bool
		want     float64
	}{
		{"abcdefg", "hijklmnop", true, false, 0},
		{"a", "b", true, false, 0},
		{"", "b", true, false, 0},
		{"aa", "ab", true, false, 8.3333},
		{"a", "a", true, false, 16.6667},
		{"a b c", "a b c", true, false, 50},
		{"a b c", "abc", true, false, 50},
		{" risk assessment must be made of those who are qualified and expertise in the sector - these are the scientists .",
			"risk assessment has to be undertaken by those who are qualified and expert in that area - that is the scientists .", true, false, 63.361730},
		{" Die    Beziehung zwischen  Obama und Netanjahu ist nicht gerade  freundlich. ",
			"Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich.", true, false, 64.1302698},
		{"a", "a", false, false, 100},
		{"", "reference", false, false, 0},
		{"aa", "ab", false, false, 25},
		{"Die Beziehung zwischen Obama und Netanjahu ist nicht gerade freundlich.",
			"Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich.", false, true, 67.3481606},
	} {
		s, err := ChrF([]string{c.hyp}, [][]string{{c.ref}}, ChrFOptions{Beta: 3, EpsSmoothing: c.eps, Whitespace: c.ws})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(s.Score-c.want) > 1e-4 {
			t.Errorf("%q vs %q: %.6f, want %.6f", c.hyp, c.ref, s.Score, c.want)
		}
	}
	s, _ := ChrF([]string{"a", "b"}, [][]string{{"a", "c"}}, ChrFOptions{Beta: 3, EpsSmoothing: true})
	if math.Abs(s.Score-8.3333) > 1e-4 {
		t.Errorf("two segments: %.6f", s.Score)
	}
	// sentence-level chrF2 with eps smoothing (test_chrf_sentence_level)
	s, _ = ChrF([]string{"Lapali po dechu, jejich životy skončily dřív, než skutečně začaly."},
		[][]string{{"Lapali po dechu a pak jejich život skončil - dřív, než skutečně mohl začít, připomněli."}}, ChrFOptions{EpsSmoothing: true})
	if math.Abs(s.Score-57.15704367) > 1e-4 {
		t.Errorf("sentence-level: %.6f", s.Score)
	}
}

func TestStreamErrors(t *testing.T) {
	if _, err := BLEU([]string{"a", "b"}, [][]string{{"a"}}, BLEUOptions{}); err == nil || !strings.Contains(err.Error(), "2 hypotheses, reference 1 has 1 lines") {
		t.Errorf("length: %v", err)
	}
	if _, err := ChrF([]string{"a"}, nil, ChrFOptions{}); err == nil || err.Error() != "no references" {
		t.Errorf("no refs: %v", err)
	}
	if _, err := BLEU([]string{"a"}, [][]string{{"a"}}, BLEUOptions{Tokenize: "intl"}); err == nil || !strings.Contains(err.Error(), `tokenizer "intl"`) {
		t.Errorf("tokenizer: %v", err)
	}
}
