package mtscore

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRougeMatchesTools scores each testdata/rouge/NAME.hyp against
// NAME.ref and compares with what ROUGE-1.5.5 (through files2rouge and
// pyrouge, stemmed as files2rouge runs it and unstemmed) and Google's
// rouge-score printed for them (testdata/rouge/make_rouge.py): every
// recall, precision and F must agree to two decimals of a percentage,
// as papers report them.
func TestRougeMatchesTools(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "rouge", "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Files map[string]map[string]map[string]map[string]float64 `json:"files"`
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if len(want.Files) < 2 {
		t.Fatalf("expected.json has %d files", len(want.Files))
	}
	no := false
	worst := 0.0
	for name, impls := range want.Files {
		read := func(ext string) []string {
			b, err := os.ReadFile(filepath.Join("testdata", "rouge", name+ext))
			if err != nil {
				t.Fatal(err)
			}
			return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		}
		hyps, refs := read(".hyp"), read(".ref")
		for impl, measures := range impls {
			o := RougeOptions{Impl: impl}
			if impl == "rouge155-nostem" {
				o = RougeOptions{Impl: Rouge155, Stem: &no}
			}
			got, err := Rouge(hyps, refs, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(measures) {
				t.Errorf("%s %s: %d measures, the tool %d", name, impl, len(got), len(measures))
			}
			for _, g := range got {
				w, ok := measures[g.Name]
				if !ok {
					t.Errorf("%s %s: the tool has no %s", name, impl, g.Name)
					continue
				}
				for _, c := range []struct {
					what      string
					got, want float64
				}{{"R", g.Recall, 100 * w["R"]}, {"P", g.Precision, 100 * w["P"]}, {"F", g.F, 100 * w["F"]}} {
					worst = max(worst, math.Abs(c.got-c.want))
					if math.Round(c.got*100) != math.Round(c.want*100) {
						t.Errorf("%s %s %s %s: %.4f, the tool %.4f", name, impl, g.Name, c.what, c.got, c.want)
					}
				}
			}
		}
	}
	t.Logf("largest difference from the tools: %.2g points", worst)
}

// TestPorterStem checks Porter's stemmer on the paper's examples, and on
// every word of testdata/rouge/porter.tsv against the stem ROUGE-1.5.5's
// own Perl stem() gave it (make_rouge.py's porter step): its step 4 tries
// -ment and -ent after -ement, so "settlement" is "settlem".
func TestPorterStem(t *testing.T) {
	for w, want := range map[string]string{
		"caresses": "caress", "ponies": "poni", "ties": "ti", "cats": "cat", "feed": "feed", "agreed": "agre",
		"plastered": "plaster", "motoring": "motor", "sing": "sing", "conflated": "conflat", "troubled": "troubl",
		"sized": "size", "hopping": "hop", "falling": "fall", "filing": "file", "happy": "happi", "relational": "relat",
		"conditional": "condit", "rational": "ration", "valenci": "valenc", "digitizer": "digit", "conformabli": "conform",
		"radicalli": "radic", "differentli": "differ", "vileli": "vile", "analogousli": "analog", "vietnamization": "vietnam",
		"predication": "predic", "operator": "oper", "feudalism": "feudal", "decisiveness": "decis", "hopefulness": "hope",
		"callousness": "callous", "formaliti": "formal", "sensitiviti": "sensit", "sensibiliti": "sensibl", "triplicate": "triplic",
		"formative": "form", "formalize": "formal", "electriciti": "electr", "electrical": "electr", "goodness": "good",
		"revival": "reviv", "allowance": "allow", "inference": "infer", "airliner": "airlin", "adjustable": "adjust",
		"defensible": "defens", "irritant": "irrit", "replacement": "replac", "adjustment": "adjust", "dependent": "depend",
		"adoption": "adopt", "homologou": "homolog", "communism": "commun", "activate": "activ", "angulariti": "angular",
		"homologous": "homolog", "effective": "effect", "bowdlerize": "bowdler", "probate": "probat", "rate": "rate",
		"cease": "ceas", "controll": "control", "roll": "roll", "yelling": "yell", "youth": "youth", "logically": "logic",
		"settlement": "settlem", "government": "govern",
	} {
		if got := porterStem(w); got != want {
			t.Errorf("porterStem(%q) = %q, want %q", w, got, want)
		}
	}
	data, err := os.ReadFile(filepath.Join("testdata", "rouge", "porter.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) < 5000 {
		t.Fatalf("porter.tsv has %d words", len(lines))
	}
	for _, l := range lines {
		w, want, _ := strings.Cut(l, "\t")
		if got := porterStem(w); got != want {
			t.Errorf("porterStem(%q) = %q, ROUGE-1.5.5 %q", w, got, want)
		}
	}
}
