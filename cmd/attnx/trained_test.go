package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/serve"
	"github.com/attnx/attnx/subword"
	"github.com/attnx/attnx/translate"
	"github.com/attnx/attnx/verify"
)

// nearTie is the relative score gap (testdata/toolkits/onmt_run.py's
// ONMT_GAPS) below which a line may rightly come out otherwise than the
// toolkit's: float32 sums in another order move scores by about 1e-6 of
// their size, and machines differ in the last bits.
const nearTie = 1e-5

// TestOpenNMTTrainedModels exports the checkpoints OpenNMT-py 3.5.1's own
// onmt_train wrote (testdata/toolkits/onmt-*: a SentencePiece model with
// its optimizer state, a subword-nmt BPE one released by onmt_release_model,
// and one saved with -save_format safetensors), with no flags, and
// translates the raw test set with each decoding setting of their
// variants.tsv: every line must be the line onmt_translate wrote with the
// same setting, except near ties (the toolkit's own smallest score gap for
// the line below nearTie), which are listed.
func TestOpenNMTTrainedModels(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	for _, fx := range []struct{ dir, ckpt string }{
		{"onmt-sp", "model.pt"}, {"onmt-bpe", "model.pt"}, {"onmt-st", "model_step_2001.pt"},
	} {
		t.Run(fx.dir, func(t *testing.T) {
			src := filepath.Join("..", "..", "testdata", "toolkits", fx.dir)
			model := filepath.Join(t.TempDir(), "m")
			if code, _, stderr := attnx("export", filepath.Join(src, fx.ckpt), "-o", model); code != 0 {
				t.Fatalf("export %s with no flags: exit %d: %s", fx.ckpt, code, stderr)
			}
			runVariants(t, filepath.Join(src, "variants.tsv"), src, model, "onmt_translate")
		})
	}
}

// TestOpenNMTTokenizerModels exports the models OpenNMT-py 3.5.1 trained
// through its onmt_tokenize transform (testdata/toolkits/onmt-tok-*: the
// OpenNMT Tokenizer aggressive with joiners and BPE, conservative with
// case markup and SentencePiece; make_onmt_tok.sh) with no flags: the
// tokenizer comes from the checkpoint's options, and translate (beam 5,
// greedy), serve and the Go API turn raw text into onmt_translate's
// detokenized lines.
func TestOpenNMTTokenizerModels(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	for _, name := range []string{"onmt-tok-bpe", "onmt-tok-sp"} {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join("..", "..", "testdata", "toolkits", name)
			model := filepath.Join(t.TempDir(), "m")
			code, stdout, stderr := attnx("export", filepath.Join(src, "model.pt"), "-o", model)
			if code != 0 {
				t.Fatalf("export model.pt with no flags: exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout+stderr, "the OpenNMT Tokenizer (onmt_tokenize)") {
				t.Errorf("export's notes do not name the OpenNMT Tokenizer:\n%s%s", stdout, stderr)
			}
			info, err := modeldir.ReadInfo(filepath.Join(model, "attnx.json"))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []*subword.Spec{info.SrcTokenizer, info.TgtTokenizer} {
				if s == nil || s.Kind != subword.KindOpenNMT || s.OpenNMT == nil || s.OpenNMT.SubwordModel == "" {
					t.Fatalf("attnx.json's tokenizers: %+v, %+v; want onmt_tokenize with its subword model", info.SrcTokenizer, info.TgtTokenizer)
				}
			}
			runVariants(t, filepath.Join(src, "variants.tsv"), src, model, "onmt_translate")
			lines := readToolkitLines(t, filepath.Join(src, "test.src"))
			want := readToolkitLines(t, filepath.Join(src, "expected", "default.txt"))
			hs := serveModel(t, serve.Config{Models: []serve.ModelDir{{Name: "m", Dir: model}}, Batching: true})
			code, sr, raw := postTranslate(t, hs, map[string]any{"inputs": lines})
			if code != 200 || len(sr.Results) != len(lines) {
				t.Fatalf("serve: status %d: %s", code, raw)
			}
			tr, err := translate.Open(model, translate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			// The lines as a test set (TranslateCorpus; Translate gives each
			// row the output limit of its own length, onmt_translate that of
			// its batch's longest source).
			api := make([]translate.Result, len(lines))
			if _, err := tr.TranslateCorpus(context.Background(), lines, 1, translate.CorpusOptions{}, func(i int, r translate.Result) error {
				api[i] = r
				return nil
			}, nil); err != nil {
				t.Fatal(err)
			}
			for i := range lines {
				if sr.Results[i].Text != want[i] {
					t.Errorf("line %d: serve %q, onmt_translate %q", i+1, sr.Results[i].Text, want[i])
				}
				if api[i].Text != want[i] {
					t.Errorf("line %d: TranslateCorpus %q, onmt_translate %q", i+1, api[i].Text, want[i])
				}
			}
		})
	}
}

// TestOpenNMTSummaryModels exports the summarization models OpenNMT-py
// 2.3.0's own onmt_train wrote (testdata/toolkits/onmt-sum-*: copy
// attention reused or with its own general attention, coverage, the three
// context gates, shared embeddings, two vocabularies;
// make_onmt_summary.sh), with no flags, and summarizes the raw test set
// with each setting of their variants.tsv: every line, copied words
// outside the vocabulary included, must be 2.3.0's onmt_translate's (run
// with -batch_size 1, as the script says why), except near ties.
func TestOpenNMTSummaryModels(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	for _, v := range []string{"copy", "reuse", "coverage", "gate-source", "gate-target", "gate-both", "shared", "twovocabs"} {
		name := "onmt-sum-" + v
		src := filepath.Join("..", "..", "testdata", "toolkits", name)
		t.Run(name, func(t *testing.T) {
			model := filepath.Join(t.TempDir(), "m")
			if code, _, stderr := attnx("export", filepath.Join(src, "model.pt"), "-o", model); code != 0 {
				t.Fatalf("export model.pt with no flags: exit %d: %s", code, stderr)
			}
			runVariants(t, filepath.Join(src, "variants.tsv"), src, model, "onmt_translate -batch_size 1")
		})
	}
}

// TestOpenNMTSummary351 exports the copy-attention checkpoints OpenNMT-py
// 3.5.1's own onmt_train wrote (testdata/toolkits/onmt-sum-351-*: a
// separate general copy attention, and the recipe's reused one), with no
// flags, and summarizes their test sentences, which 3.5.1's onmt_translate
// cannot (its traceback is kept beside them): every summary must name the
// sentence's person, a made-up name outside the vocabulary that only
// copying can produce.
func TestOpenNMTSummary351(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	for _, name := range []string{"onmt-sum-351-copy", "onmt-sum-351-reuse"} {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join("..", "..", "testdata", "toolkits", name)
			failure, err := os.ReadFile(filepath.Join(src, "onmt_translate-3.5.1-failure.txt"))
			if err != nil || !strings.Contains(string(failure), "Missing key in checkpoint: generator.linear.weight") {
				t.Fatalf("the recorded 3.5.1 failure: %v %q", err, failure)
			}
			model := filepath.Join(t.TempDir(), "m")
			if code, _, stderr := attnx("export", filepath.Join(src, "model.pt"), "-o", model); code != 0 {
				t.Fatalf("export model.pt with no flags: exit %d: %s", code, stderr)
			}
			out := filepath.Join(t.TempDir(), "out.txt")
			if code, _, stderr := attnx("translate", "--model", model, "--src", filepath.Join(src, "test.src"), "--output", out); code != 0 {
				t.Fatalf("translate: exit %d: %s", code, stderr)
			}
			srcs, sums := readToolkitLines(t, filepath.Join(src, "test.src")), readToolkitLines(t, out)
			if len(srcs) != len(sums) || len(srcs) < 8 {
				t.Fatalf("%d summaries of %d sentences", len(sums), len(srcs))
			}
			named := 0
			for i, s := range srcs {
				// The person is the source's first capitalised word other
				// than the city's: every template names them so.
				for _, w := range strings.Fields(s) {
					if w[0] >= 'A' && w[0] <= 'Z' {
						if strings.Contains(sums[i], w) {
							named++
						}
						break
					}
				}
			}
			if named < len(srcs)*3/4 {
				t.Errorf("%d of %d summaries copy the sentence's name:\n%s", named, len(srcs), strings.Join(sums, "\n"))
			}
			t.Logf("%d of %d summaries copy the name", named, len(srcs))
		})
	}
}

// TestJoeyTrainedModels does the same with the models JoeyNMT 2.3's own
// `joeynmt train` wrote (testdata/toolkits/joey-*: an LSTM with Luong
// attention on SentencePiece pieces, a GRU with Bahdanau attention on
// subword-nmt BPE; each model directory as JoeyNMT left it, best.ckpt a
// link to the step checkpoint) and `joeynmt translate`'s output with the
// testing sections of their variants.tsv.
func TestJoeyTrainedModels(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	for _, dir := range []string{"joey-sp", "joey-bpe"} {
		t.Run(dir, func(t *testing.T) {
			src := filepath.Join("..", "..", "testdata", "toolkits", dir)
			model := filepath.Join(t.TempDir(), "m")
			if code, _, stderr := attnx("export", filepath.Join(src, "model", "best.ckpt"), "-o", model); code != 0 {
				t.Fatalf("export best.ckpt with no flags: exit %d: %s", code, stderr)
			}
			runVariants(t, filepath.Join(src, "variants.tsv"), src, model, "joeynmt translate, testing:")
		})
	}
}

// runVariants runs compareVariant for each setting of the variants file
// (name, the toolkit's flags, attnx translate's), as a subtest each,
// logging the figures; a file that lists none fails.
func runVariants(t *testing.T, variants, src, model, toolkit string) {
	t.Helper()
	data, err := os.ReadFile(variants)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 3 || strings.HasPrefix(f[0], "#") {
			continue
		}
		n++
		name, flags := f[0], strings.Fields(f[2])
		t.Run(name, func(t *testing.T) {
			identical, ties := compareVariant(t, src, model, name, flags)
			t.Logf("%s (%s %s): %d lines identical, near ties %v", name, toolkit, f[1], identical, ties)
		})
	}
	if n == 0 {
		t.Fatalf("%s lists no variants", variants)
	}
}

// compareVariant translates src/test.src (test.en, test.raw.en) with model and attnx translate's
// flags and compares the output with src/expected/name.txt, line by line;
// it fails on a differing line unless the toolkit met a near tie on it. It
// returns the number of identical lines and the differing near ties (line
// numbers from 1).
func compareVariant(t *testing.T, src, model, name string, flags []string) (int, []int) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join(src, "expected", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	gaps := map[string]float64{}
	if data, err := os.ReadFile(filepath.Join(src, "expected", name+".gaps.json")); err == nil {
		if err := json.Unmarshal(data, &gaps); err != nil {
			t.Fatalf("%s.gaps.json: %v", name, err)
		}
	}
	out := filepath.Join(t.TempDir(), name+".txt")
	test := filepath.Join(src, "test.src")
	for _, other := range []string{"test.en", "test.raw.en"} { // JoeyNMT's and fairseq's files are named by language
		if _, err := os.Stat(test); err != nil {
			test = filepath.Join(src, other)
		}
	}
	args := append([]string{"translate", "--model", model, "--src", test, "--output", out}, flags...)
	if code, _, stderr := attnx(args...); code != 0 {
		t.Fatalf("attnx %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	if len(wl) != len(gl) {
		t.Fatalf("%d lines, the toolkit wrote %d", len(gl)-1, len(wl)-1)
	}
	nBest := 1
	for i, fl := range flags {
		if fl == "--n-best" && i+1 < len(flags) {
			fmt.Sscan(flags[i+1], &nBest)
		}
	}
	identical, ties := 0, []int(nil)
	for i := range wl[:len(wl)-1] {
		if wl[i] == gl[i] {
			identical++
			continue
		}
		sentence := i / nBest
		if g, ok := gaps[fmt.Sprint(sentence)]; ok && g < nearTie {
			if len(ties) == 0 || ties[len(ties)-1] != sentence+1 {
				ties = append(ties, sentence+1)
			}
			continue
		}
		t.Errorf("line %d (sentence %d, smallest gap %.2g):\n  toolkit: %q\n  attnx:   %q", i+1, sentence+1, gaps[fmt.Sprint(sentence)], wl[i], gl[i])
	}
	return identical, ties
}

// TestVerifyToolkitBeam: verify --beam compares a toolkit model's beam
// search under its own rules (attnx.json's defaults: OpenNMT-py's for
// onmt-sp, JoeyNMT's for joey-bpe, fairseq's for fairseq-lstm) with the reference's implementation of
// the same rules, and a reference without them shows as a difference.
func TestVerifyToolkitBeam(t *testing.T) {
	needTorch(t)
	// A copy of the reference whose toolkit searches fall back to attnx's.
	lax := t.TempDir()
	files, err := filepath.Glob("../../reference/*.py")
	if err != nil || len(files) == 0 {
		t.Fatalf("reference/*.py: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data = []byte(strings.NewReplacer(`if search == "opennmt":`, `if search == "off":`, `if search == "joeynmt":`, `if search == "off":`, `if search == "fairseq":`, `if search == "off":`).Replace(string(data)))
		if err := os.WriteFile(filepath.Join(lax, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ dir, ckpt, rules string }{
		{"onmt-sp", "model.pt", "opennmt"}, {"joey-bpe", filepath.Join("model", "best.ckpt"), "joeynmt"},
		{"fairseq-lstm", "checkpoint_best.pt", "fairseq"},
	} {
		t.Run(c.dir, func(t *testing.T) {
			ckpt := filepath.Join("..", "..", "testdata", "toolkits", c.dir, c.ckpt)
			model := filepath.Join(t.TempDir(), "m")
			if code, _, stderr := attnx("export", ckpt, "-o", model); code != 0 {
				t.Fatalf("export: %s", stderr)
			}
			args := []string{"verify", "--model", model, "--checkpoint", ckpt, "--beam", "5", "--length-penalty", "1", "--batch", "8", "--steps", "20"}
			code, out, stderr := attnx(args...)
			if want := c.rules + " rules: identical"; code != 0 || !strings.Contains(out, want) {
				t.Fatalf("verify: exit %d, want %q:\n%s%s", code, want, out, stderr)
			}
			t.Setenv("ATTNX_REFERENCE", lax)
			code, out, _ = attnx(args...)
			if want := c.rules + " rules: DIFFERENT"; code != 1 || !strings.Contains(out, want) {
				t.Errorf("verify against a reference without %s's rules: exit %d, want %q:\n%s", c.rules, code, want, out)
			}
		})
	}
}

// fairseqFixtures are the models fairseq 0.12.2's own fairseq-train
// wrote (testdata/toolkits/make_fairseq.sh), with the --arch their cfg
// records and attnx's architecture for them.
var fairseqFixtures = []struct{ dir, arch, attnxArch string }{
	{"fairseq-lstm", "lstm", "fairseq-lstm"},
	{"fairseq-bi2", "lstm", "fairseq-lstm"},
	{"fairseq-wiseman", "lstm_wiseman_iwslt_de_en", "fairseq-lstm"},
	{"fairseq-luong", "lstm_luong_wmt_en_de", "fairseq-lstm"},
	{"fairseq-shared", "lstm", "fairseq-lstm"},
	{"fairseq-noatt", "lstm", "fairseq-lstm-noattn"},
	{"fairseq-long", "lstm", "fairseq-lstm"},
}

// TestFairseqTrainedModels exports each fairseq fixture's
// checkpoint_best.pt with no flags (the dictionaries come from its
// data-bin, the BPE from the bpecodes beside it) and translates the raw
// test set with each setting of fairseq_variants.tsv: every line must be
// the D- line fairseq-interactive wrote with the same setting, except near
// ties (fairseq's own smallest score gap for the line below nearTie),
// which are listed.
func TestFairseqTrainedModels(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	root := filepath.Join("..", "..", "testdata", "toolkits")
	for _, fx := range fairseqFixtures {
		t.Run(fx.dir, func(t *testing.T) {
			src := filepath.Join(root, fx.dir)
			model := filepath.Join(t.TempDir(), "m")
			code, stdout, stderr := attnx("export", filepath.Join(src, "checkpoint_best.pt"), "-o", model)
			if code != 0 {
				t.Fatalf("export checkpoint_best.pt with no flags: exit %d: %s", code, stderr)
			}
			for _, want := range []string{"arch     " + fx.attnxArch + "\n", "fairseq: checkpoint (--arch " + fx.arch + ")", "bpe.codes: subword-nmt BPE, 1000 merges, joiner \"@@\", text split at spaces"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("export's report lacks %q:\n%s", want, stdout)
				}
			}
			runVariants(t, filepath.Join(root, "fairseq_variants.tsv"), src, model, "fairseq-interactive")
		})
	}
}

// TestFairseqRefusals: what attnx cannot take from a fairseq checkpoint is
// refused naming it: dictionaries that are not there, a language pair the
// files cannot tell, a dictionary line fairseq would refuse, and models
// fairseq-train wrote that are not LSTMModels or use the adaptive softmax.
func TestFairseqRefusals(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "toolkits", "fairseq-lstm")
	ckpt := filepath.Join(src, "checkpoint_best.pt")
	elsewhere := t.TempDir()
	badDict := t.TempDir()
	for _, lang := range []string{"en", "de"} {
		data, err := os.ReadFile(filepath.Join(src, "data-bin", "dict."+lang+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		if lang == "de" {
			data = append(data, []byte("Haus x\n")...)
		}
		if err := os.WriteFile(filepath.Join(badDict, "dict."+lang+".txt"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no dictionaries", []string{"--data", elsewhere}, "its vocabularies are the dictionaries (dict.SRC.txt, dict.TGT.txt) of its data-bin directory, and its language pair's are not there (pass --data DIR); tried " + filepath.Join(elsewhere, "dict.*.txt")},
		{"named pair missing", []string{"--source-lang", "fr", "--target-lang", "de"}, "and fr-de are not there (pass --data DIR)"},
		{"bad count", []string{"--data", badDict}, `dict.de.txt line 1133: "Haus x": the count "x" is not a whole number (expected "SYMBOL COUNT [#fairseq:overwrite]")`},
		{"wrong arch", []string{"--arch", "onmt-general"}, "--arch onmt-general disagrees with the checkpoint: it holds a fairseq-lstm model"},
		{"transformer", []string{"--data", filepath.Join(src, "data-bin")}, "fairseq option --arch transformer: attnx converts fairseq's LSTM models (lstm, lstm_wiseman_iwslt_de_en, lstm_luong_wmt_en_de), not this one (Transformers and convolutional models are not attention RNNs)"},
		{"adaptive", []string{"--data", filepath.Join(src, "data-bin")}, "fairseq option --adaptive-softmax-cutoff 200,500: the adaptive softmax (--criterion adaptive_loss) is not supported"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ckpt := ckpt
			if c.name == "transformer" || c.name == "adaptive" {
				// What fairseq-train wrote for these (make_fairseq.sh).
				ckpt = filepath.Join(src, "..", "fairseq-refused", c.name, "checkpoint_best.pt")
			}
			args := append([]string{"export", ckpt, "-o", filepath.Join(t.TempDir(), "m")}, c.args...)
			code, _, stderr := attnx(args...)
			if code != 1 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "panic") {
				t.Errorf("attnx %s: exit %d, %s\nwant exit 1 and %q", strings.Join(args, " "), code, stderr, c.want)
			}
		})
	}
}

// TestVerifySrcToolkitBeam: verify --src on a toolkit model decodes the
// file as translate --src does by default, on both sides: the model's
// search and rules (OpenNMT-py's beam 5 keeping one hypothesis for
// onmt-sp and onmt-tok-bpe, whose text goes through the OpenNMT Tokenizer,
// fairseq's for fairseq-long, JoeyNMT's greedy decoding for joey-sp) and
// each sentence's own output limit (the toolkit's batch's).
// Its attnx lines are translate --src's, line for line, and every one
// equals PyTorch's. Before, it decoded with a limit of its own (2n+10 of
// the longest source) and OpenNMT-py's search keeping K hypotheses: 18 of
// onmt-sp's 48 lines were translate's, and it passed.
func TestVerifySrcToolkitBeam(t *testing.T) {
	needTorch(t)
	for _, c := range []struct{ dir, ckpt, test, decoding string }{
		{"onmt-sp", "model.pt", "test.src", "beam search K=5 under opennmt rules, alpha 1"},
		{"fairseq-long", "checkpoint_best.pt", "test.raw.en", "beam search K=5 under fairseq rules, alpha 1"},
		{"joey-sp", "model/best.ckpt", "test.en", "greedy decoding"},
		{"onmt-tok-bpe", "model.pt", "test.src", "beam search K=5 under opennmt rules, alpha 1"},
	} {
		t.Run(c.dir, func(t *testing.T) {
			src := filepath.Join("..", "..", "testdata", "toolkits", c.dir)
			model := filepath.Join(t.TempDir(), "m")
			if code, _, stderr := attnx("export", filepath.Join(src, c.ckpt), "-o", model); code != 0 {
				t.Fatalf("export: %s", stderr)
			}
			out := filepath.Join(t.TempDir(), "cli.txt")
			if code, _, stderr := attnx("translate", "--model", model, "--src", filepath.Join(src, c.test), "--output", out); code != 0 {
				t.Fatalf("translate --src: %s", stderr)
			}
			cli := readToolkitLines(t, out)
			code, js, stderr := attnx("verify", "--model", model, "--checkpoint", filepath.Join(src, c.ckpt), "--src", filepath.Join(src, c.test), "--json")
			var o verify.TestSetOutcome
			if err := json.Unmarshal([]byte(js), &o); err != nil || code != 0 {
				t.Fatalf("verify --src --json: exit %d, %v\n%s", code, err, stderr)
			}
			if o.Decoding != c.decoding || o.Identical != len(cli) || !o.OK {
				t.Errorf("verify --src: %s, %d of %d identical to PyTorch's, ok %v; want %s, all", o.Decoding, o.Identical, len(cli), o.OK, c.decoding)
			}
			same := 0
			for i := range cli {
				if o.Attnx[i] == cli[i] {
					same++
				} else {
					t.Errorf("line %d: verify --src decoded %q, translate --src %q", i+1, o.Attnx[i], cli[i])
				}
			}
			t.Logf("%s: %s, max_len %d to %d; %d of %d lines identical to translate --src's, %d to PyTorch's", c.dir, o.Decoding, o.MinSteps, o.Steps, same, len(cli), o.Identical)
		})
	}
}

// TestOpenNMTSummaryServe: attnx serve, continuous batching on, gives a
// copy-attention model's summaries as onmt_translate (2.3.0) wrote them,
// with its defaults and with the recipe's flags as request fields, the
// copied names outside the vocabulary included.
func TestOpenNMTSummaryServe(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	src := filepath.Join("..", "..", "testdata", "toolkits", "onmt-sum-reuse")
	dir := exportModel(t, filepath.Join(src, "model.pt"))
	lines := readToolkitLines(t, filepath.Join(src, "test.src"))[:12]
	hs := serveModel(t, serve.Config{Models: []serve.ModelDir{{Name: "m", Dir: dir}}, Batching: true})
	for _, c := range []struct {
		name string
		body map[string]any
	}{
		{"default", map[string]any{}},
		{"recipe", map[string]any{"beam": 10, "min_len": 35, "stepwise_penalty": true, "coverage_penalty": "summary", "beta": 5,
			"length_penalty_form": "wu", "length_penalty": 0.9, "block_ngram_repeat": 3, "ignore_when_blocking": []string{".", "</t>", "<t>"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := readToolkitLines(t, filepath.Join(src, "expected", c.name+".txt"))
			c.body["inputs"] = lines
			code, sr, raw := postTranslate(t, hs, c.body)
			if code != 200 || len(sr.Results) != len(lines) {
				t.Fatalf("status %d: %s", code, raw)
			}
			for i, r := range sr.Results {
				if r.Text != want[i] {
					t.Errorf("line %d: serve %q, onmt_translate %q", i+1, r.Text, want[i])
				}
			}
		})
	}
}

// TestExportOnmttokFlag: export --onmttok KWARGS with the subword models
// as --src-tokenizer/--tgt-tokenizer gives the tokenizer the checkpoint's
// options would (onmt-tok-bpe translates as onmt_translate did), and
// options pyonmttok refuses are a usage error naming them.
func TestExportOnmttokFlag(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	src := filepath.Join("..", "..", "testdata", "toolkits", "onmt-tok-bpe")
	model := filepath.Join(t.TempDir(), "m")
	kw := `{"mode": "aggressive", "joiner_annotate": true, "preserve_placeholders": true, "segment_numbers": true, "segment_alphabet_change": true}`
	if code, _, stderr := attnx("export", filepath.Join(src, "model.pt"), "-o", model, "--onmttok", kw,
		"--src-tokenizer", filepath.Join(src, "tok_src.bpe"), "--tgt-tokenizer", filepath.Join(src, "tok_tgt.bpe")); code != 0 {
		t.Fatalf("export --onmttok: exit %d: %s", code, stderr)
	}
	out := filepath.Join(t.TempDir(), "out.txt")
	if code, _, stderr := attnx("translate", "--model", model, "--src", filepath.Join(src, "test.src"), "--output", out, "--beam", "1"); code != 0 {
		t.Fatalf("translate: exit %d: %s", code, stderr)
	}
	got, want := readToolkitLines(t, out), readToolkitLines(t, filepath.Join(src, "expected", "greedy.txt"))
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %q, onmt_translate %q", i+1, got[i], want[i])
		}
	}
	for _, c := range []struct{ kw, msg string }{
		{"{'mode': 'bogus'}", `invalid tokenization mode: "bogus"`},
		{"{'mode': 'none'", "want ',' or '}'"},
		{"{'joiner_new': True}", "joiner_new requires joiner_annotate"},
	} {
		code, _, stderr := attnx("export", filepath.Join(src, "model.pt"), "-o", filepath.Join(t.TempDir(), "x"), "--onmttok", c.kw)
		if code != 2 || !strings.Contains(stderr, "--onmttok: ") || !strings.Contains(stderr, c.msg) {
			t.Errorf("--onmttok %s: exit %d, %q; want a usage error with %q", c.kw, code, stderr, c.msg)
		}
	}
}
