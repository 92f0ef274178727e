package mtscore

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestRougeMatchesTools scores each testdata/rouge/NAME.hyp against
// NAME.ref and compares with what ROUGE-1.5.5 (through files2rouge and
// pyrouge, stemmed as files2rouge runs it and unstemmed) and Google's
// rouge-score printed for them (testdata/rouge/make_rouge.py): every
// recall, precision and F must agree to two decimals of a percentage,
// as papers report them. sum-cut's summaries (issue 58) have sentences
// that end without " .": ROUGE-1.5.5's default sentences are files2rouge's
// after the guide's sed (its ROUGE-L 81.19/86.53/83.47 where splitting at
// the tags gave 92.33/97.68/94.62), and rouge155-tags is TagSentences,
// files2rouge on the text with " ." before each </t>.
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
			switch impl {
			case "rouge155-nostem":
				o = RougeOptions{Impl: Rouge155, Stem: &no}
			case "rouge155-tags":
				o = RougeOptions{Impl: Rouge155, TagSentences: true}
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

// TestRougeLongLines: issue 53's lines of thousands of tokens. rouge-score's
// ROUGE-L takes the LCS's length in two rows (it allocated a table of
// every pair of prefixes: 7.2 GB for two lines of 30,000 tokens), so
// scoring lines of 6,000 tokens allocates a few MB, not the 288 MB of a
// table; the hypothesis is the reference with every third token replaced
// by one the reference lacks, so its LCS is the other two thirds. The
// summary-level ROUGE-L (ROUGE-1.5.5's, and rouge-score's ROUGE-Lsum)
// traces LCS paths through each pair of sentences' table: a pair too
// large for one is refused naming the line, the sentences and the limit,
// and the same words split into sentences score; a summary and reference
// of one sentence each need no path (their LCS is the union).
func TestRougeLongLines(t *testing.T) {
	const n = 6000
	ref, hyp := make([]string, n), make([]string, n)
	for i := range ref {
		ref[i] = "w" + strconv.Itoa(i%97)
		hyp[i] = ref[i]
		if i%3 == 2 {
			hyp[i] = "zzz"
		}
	}
	line := func(toks []string, every int) string {
		var b strings.Builder
		for i, tok := range toks {
			b.WriteString(tok + " ")
			if every > 0 && i%every == every-1 {
				b.WriteString(". ")
			}
		}
		return strings.TrimSpace(b.String())
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := rougeScoreDoc(line(hyp, 0), line(ref, 0))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if l := got[2]; math.Abs(l[0]-2.0/3) > 1e-12 || math.Abs(l[1]-2.0/3) > 1e-12 || math.Abs(l[2]-2.0/3) > 1e-12 {
		t.Errorf("rouge-score ROUGE-L of lines of %d tokens: %v, want 2/3 each", n, l)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("rouge-score on two lines of %d tokens allocated %d MB, want no table of %d x %d", n, alloc>>20, n, n)
	}

	// One sentence each (no " ." in either) needs no path: the LCS's
	// length is the union.
	got155, err := Rouge([]string{line(hyp, 0)}, []string{line(ref, 0)}, RougeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := got155[2]; math.Abs(l.Recall-100*2.0/3) > 1e-3 || math.Abs(l.Precision-100*2.0/3) > 1e-3 {
		t.Errorf("ROUGE-1.5.5 ROUGE-L of one sentence of %d tokens each: %+v, want 66.667", n, l)
	}
	_, err = Rouge([]string{"a .", line(hyp, 0)}, []string{"a .", "x . " + line(ref, 0)}, RougeOptions{})
	want := "rouge: line 2: ROUGE-L: a reference sentence of 6000 words and a summary sentence of 6000 words: an LCS table of 36012001 cells, more than the limit of 16777216 (end sentences with \" .\")"
	if err == nil || err.Error() != want {
		t.Errorf("ROUGE-1.5.5 on a sentence of %d tokens: %v, want %s", n, err, want)
	}
	got155, err = Rouge([]string{line(hyp, 60)}, []string{line(ref, 60)}, RougeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Sentences of 60 tokens, the same in both: the union LCS of each
	// reference sentence is its own summary sentence's 40 tokens.
	if l := got155[2]; math.Abs(l.Recall-100*2.0/3) > 1e-3 {
		t.Errorf("ROUGE-1.5.5 ROUGE-L over sentences of 60 tokens: %+v, want recall 66.667", l)
	}
}
