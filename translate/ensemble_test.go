package translate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/subword"
)

// ensembleFixture is a fixture directory of testdata/toolkits made by
// make_ensemble.sh: the members' checkpoints, the test set and what the
// toolkit's ensemble wrote for each variant.
type ensembleFixture struct {
	dir, test string
	spm       bool // its SentencePiece models are exported with the members
	variants  []ensembleVariant
}

type ensembleVariant struct {
	name string
	opt  Options
	eo   EnsembleOptions
}

var ensembleFixtures = []ensembleFixture{
	{"onmt-ensemble", "../testdata/toolkits/onmt-avg/test.src", false, []ensembleVariant{
		{name: "default"}, {name: "greedy", opt: Options{Beam: 1}}}},
	{"fairseq-ensemble", "../testdata/toolkits/fairseq-avg/test.raw.en", false, []ensembleVariant{
		{name: "default"}, {name: "greedy", opt: Options{Beam: 1}}}},
	{"onmt2-ensemble", "../testdata/toolkits/onmt2-ensemble/test.src", true, []ensembleVariant{
		{name: "default"}, {name: "greedy", opt: Options{Beam: 1}},
		{name: "raw", eo: EnsembleOptions{AvgRawProbs: true}}, {name: "raw-greedy", opt: Options{Beam: 1}, eo: EnsembleOptions{AvgRawProbs: true}}}},
}

// exportMembers exports the checkpoints named by a fixture's members file
// into temporary model directories.
func exportMembers(t *testing.T, fixture string) []string {
	t.Helper()
	return exportMembersTB(t, fixture, false)
}

// exportMembersTB is exportMembers for a test or a benchmark; spm exports
// the fixture's spm_src.model and spm_tgt.model as the tokenizers.
func exportMembersTB(t testing.TB, fixture string, spm bool) []string {
	t.Helper()
	var opt modeldir.Options
	if spm {
		opt.SrcTokenizer = &subword.Spec{Kind: subword.KindSentencePiece, File: filepath.Join(fixture, "spm_src.model")}
		opt.TgtTokenizer = &subword.Spec{Kind: subword.KindSentencePiece, File: filepath.Join(fixture, "spm_tgt.model")}
	}
	data, err := os.ReadFile(filepath.Join(fixture, "members"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for i, ckpt := range strings.Fields(string(data)) {
		dir := filepath.Join(t.TempDir(), "m"+string(rune('1'+i)))
		if _, err := modeldir.Export(filepath.Join(fixture, ckpt), dir, opt); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

// TestOpenEnsembleToolkits: an ensemble of two checkpoints of one training
// run translates the test set into the lines onmt_translate -model A B
// (OpenNMT-py 3.5.1: log_softmax of the mean; 2.3.0: the mean of the
// log-probs, and with -avg_raw_probs the log of the mean probability) and
// fairseq-interactive --path A:B (fairseq 0.12.2: logsumexp minus log 2)
// wrote, beam 5 and greedy, line for line (a line may differ only where the toolkit met a
// near tie); and its output is not what either member alone writes.
func TestOpenEnsembleToolkits(t *testing.T) {
	needORT(t)
	for _, fx := range ensembleFixtures {
		t.Run(fx.dir, func(t *testing.T) {
			src := filepath.Join("..", "testdata", "toolkits", fx.dir)
			dirs := exportMembersTB(t, src, fx.spm)
			data, err := os.ReadFile(fx.test)
			if err != nil {
				t.Fatal(err)
			}
			texts := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			for _, v := range fx.variants {
				t.Run(v.name, func(t *testing.T) {
					want := readLines(t, filepath.Join(src, "expected", v.name+".txt"))
					gaps := map[string]float64{}
					if data, err := os.ReadFile(filepath.Join(src, "expected", v.name+".gaps.json")); err == nil {
						if err := json.Unmarshal(data, &gaps); err != nil {
							t.Fatal(err)
						}
					}
					got := ensembleLines(t, dirs, v.opt, v.eo, texts)
					if len(got) != len(want) {
						t.Fatalf("%d lines, the toolkit wrote %d", len(got), len(want))
					}
					same := 0
					for i := range want {
						if got[i] == want[i] {
							same++
						} else if g, ok := gaps[itoa(i)]; !ok || g >= 1e-5 {
							t.Errorf("line %d: %q, the toolkit wrote %q (gap %v)", i+1, got[i], want[i], g)
						}
					}
					t.Logf("%s %s: %d/%d lines identical", fx.dir, v.name, same, len(want))
					differs := false
					for _, one := range dirs {
						alone := ensembleLines(t, []string{one}, v.opt, EnsembleOptions{}, texts)
						for i := range alone {
							differs = differs || alone[i] != got[i]
						}
					}
					if !differs {
						t.Errorf("the ensemble wrote what each member alone writes: the fixture does not tell them apart")
					}
				})
			}
		})
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func readLines(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// ensembleLines translates texts with the ensemble of dirs as the test
// set it is (the toolkit's batches decide the output limits).
func ensembleLines(t *testing.T, dirs []string, opt Options, eo EnsembleOptions, texts []string) []string {
	t.Helper()
	tr, err := OpenEnsemble(dirs, opt, eo)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	res, err := tr.TranslateCall(context.Background(), texts, CallOptions{AsTestSet: true})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.Text
	}
	return out
}

// TestOpenEnsembleRefuses: what an ensemble cannot be is refused with an
// error naming it: members of different target vocabularies (naming both
// directories and the sizes), the loop engine, AvgRawProbs with one
// model, under fairseq's rules and under OpenNMT-py 3.x's (which take it
// over raw logits), fairseq's temperature (applied to each member's
// logits), Score and continuous batching.
func TestOpenEnsembleRefuses(t *testing.T) {
	needORT(t)
	onmt := exportMembers(t, "../testdata/toolkits/onmt-ensemble")
	fairseq := exportMembers(t, "../testdata/toolkits/fairseq-ensemble")
	for _, c := range []struct {
		name string
		dirs []string
		opt  Options
		eo   EnsembleOptions
		want string
	}{
		{"none", nil, Options{}, EnsembleOptions{}, "at least one model directory"},
		{"vocabularies", []string{onmt[0], fairseq[0]}, Options{}, EnsembleOptions{}, "ensemble members " + onmt[0] + " and " + fairseq[0] + " have different target vocabularies (304 and 528 tokens)"},
		{"loop", onmt, Options{Engine: EngineLoop}, EnsembleOptions{}, `decodes on the "steps" engine only`},
		{"one-raw", onmt[:1], Options{}, EnsembleOptions{AvgRawProbs: true}, "is one model"},
		{"fairseq-raw", fairseq, Options{}, EnsembleOptions{AvgRawProbs: true}, "combines as fairseq does (logsumexp minus log N)"},
		{"onmt3-raw", onmt, Options{}, EnsembleOptions{AvgRawProbs: true}, "OpenNMT-py 3.x's -avg_raw_probs takes log(mean(exp(logits)))"},
	} {
		tr, err := OpenEnsemble(c.dirs, c.opt, c.eo)
		if err == nil {
			tr.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	hot, err := OpenEnsemble(fairseq, Options{Temperature: 0.5}, EnsembleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer hot.Close()
	if _, err := hot.Translate(context.Background(), []string{"a b"}); err == nil || !strings.Contains(err.Error(), "Temperature 0.5: fairseq divides each ensemble member's logits by it") {
		t.Errorf("fairseq Temperature: %v", err)
	}
	tr, err := OpenEnsemble(onmt, Options{}, EnsembleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if got := tr.Members(); len(got) != 2 || got[0] != onmt[0] || got[1] != onmt[1] {
		t.Errorf("Members() = %v, want %v", got, onmt)
	}
	if _, err := tr.Score(context.Background(), []string{"a"}, []string{"b"}); err == nil || !strings.Contains(err.Error(), "Score) is not done for an ensemble (2 models)") {
		t.Errorf("Score: %v", err)
	}
	if _, err := tr.NewScheduler(SchedulerConfig{}); err == nil || !strings.Contains(err.Error(), "NewScheduler) is not done for an ensemble") {
		t.Errorf("NewScheduler: %v", err)
	}
}
