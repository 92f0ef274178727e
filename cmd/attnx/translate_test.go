package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// translateTestModel exports the fixture bahdanau_b1_l1 (Vs=19, Vt=23)
// with character vocabularies "<pad>", "<sos>", "<eos>", "<unk>", "a",
// "b", ...
func translateTestModel(t *testing.T) string {
	t.Helper()
	return translateTestModelWith(t, modeldir.Options{})
}

// translateTestModelWith is translateTestModel with more export options
// (opt's vocabularies are replaced).
func translateTestModelWith(t *testing.T, opt modeldir.Options) string {
	t.Helper()
	testenv.ORT(t, onnxrun.Init())
	tmp := t.TempDir()
	vocab := func(name string, n int) string {
		v := []string{"<pad>", "<sos>", "<eos>", "<unk>"}
		for c := 'a'; len(v) < n; c++ {
			v = append(v, string(c))
		}
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(tmp, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	dir := filepath.Join(tmp, "model")
	opt.SrcVocab, opt.TgtVocab = vocab("src.json", 19), vocab("tgt.json", 23)
	if _, err := modeldir.Export("../../testdata/fixtures/bahdanau_b1_l1/checkpoint.pt", dir, opt); err != nil {
		t.Fatal(err)
	}
	return dir
}

// attnxStdin runs the CLI with stdin.
func attnxStdin(in string, args ...string) (int, string, string) {
	stdin = strings.NewReader(in)
	defer func() { stdin = os.Stdin }()
	return attnx(args...)
}

func TestTranslateCommand(t *testing.T) {
	model := translateTestModel(t)
	corrupt := t.TempDir()
	for _, f := range []string{"attnx.json", "encoder.onnx"} {
		data, _ := os.ReadFile(filepath.Join(model, f))
		os.WriteFile(filepath.Join(corrupt, f), data, 0o644)
	}
	os.WriteFile(filepath.Join(corrupt, "decoder.onnx"), []byte("\x08garbage that is not an onnx model"), 0o644)

	cases := []struct {
		name     string
		stdin    string
		args     []string
		code     int
		out, err string
	}{
		{"text arguments", "", []string{"translate", "--model", model, "--max-len", "8", "abc", "hello"}, 0,
			"abc -> lfffffff\nhello -> jmjjlll\n", ""},
		{"ids", "", []string{"translate", "--model", model, "--ids", "4 5 6", "--ids", "11,8,15,15,18", "--max-len", "8"}, 0,
			"4 5 6 -> lfffffff\n11 8 15 15 18 -> jmjjlll\n", ""},
		{"stdin in batches", "abc\nhello\nabc\n", []string{"translate", "--model", model, "--max-len", "8", "--batch", "2"}, 0,
			"abc -> lfffffff\nhello -> jmjjlll\nabc -> lfffffff\n", ""},
		{"stdin crlf", "abc\r\n", []string{"translate", "--model", model, "--max-len", "8", "--engine", "steps"}, 0,
			"abc -> lfffffff\n", ""},
		{"missing model dir", "", []string{"translate", "--model", "/no/such/model", "abc"}, 1,
			"", "attnx translate: model directory /no/such/model does not exist\n"},
		{"corrupt onnx", "", []string{"translate", "--model", corrupt, "abc"}, 1,
			"", "attnx translate: decoder model " + filepath.Join(corrupt, "decoder.onnx") + " cannot be loaded: onnxrun: native evaluator: " + filepath.Join(corrupt, "decoder.onnx") + ": not an ONNX model"},
		{"id out of range", "", []string{"translate", "--model", model, "--ids", "4 5 19"}, 1,
			"", `attnx translate: --ids #1 ("4 5 19"): token id 19 at position 2 is outside the source vocabulary [0, 19)` + "\n"},
		{"character not in vocabulary", "", []string{"translate", "--model", model, "abc", "abz"}, 1,
			"", `attnx translate: argument 2 ("abz"): character 'z' (U+007A) at position 2 is not in the source vocabulary (pass --unk to map unknown characters to <unk> (id 3))` + "\n"},
		{"unknown mapped with --unk", "", []string{"translate", "--model", model, "--unk", "--max-len", "3", "abz"}, 0,
			"abz -> ", ""},
		// A blank stdin line gives a blank line, as in --src (it was an
		// error); --plain writes the translations alone, for attnx score.
		{"blank stdin line", "abc\nabc\n\nabc\n", []string{"translate", "--model", model, "--batch", "2", "--max-len", "8"}, 0,
			"abc -> lfffffff\nabc -> lfffffff\n\nabc -> lfffffff\n", ""},
		{"plain", "abc\n \nhello\n", []string{"translate", "--model", model, "--plain", "--max-len", "8"}, 0,
			"lfffffff\n\njmjjlll\n", ""},
		{"wu on the loop engine", "", []string{"translate", "--model", model, "--engine", "loop", "--beam", "2", "--length-penalty-form", "wu", "abc"}, 2,
			"", "attnx translate: --length-penalty-form wu runs on the steps engine (beam.onnx ranks by score / len ** A): drop --engine loop or use --engine steps\n"},
		{"min-len on the loop engine", "", []string{"translate", "--model", model, "--engine", "loop", "--min-len", "3", "abc"}, 2,
			"", "attnx translate: --min-len 3 runs on the steps engine (greedy.onnx and beam.onnx have their stopping rule built in): drop --engine loop or use --engine steps\n"},
		{"unknown rules", "", []string{"translate", "--model", model, "--rules", "joey", "abc"}, 2,
			"", "attnx translate: --rules \"joey\": want \"spec\", \"opennmt\", \"joeynmt\" or \"fairseq\"\nRun 'attnx help translate' for usage.\n"},
		{"avg without opennmt rules", "", []string{"translate", "--model", model, "--beam", "2", "--length-penalty-form", "avg", "abc"}, 2,
			"", "attnx translate: --length-penalty-form \"avg\": want power or wu (none and avg with --rules opennmt)\nRun 'attnx help translate' for usage.\n"},
		{"ratio without opennmt rules", "", []string{"translate", "--model", model, "--ratio", "0.5", "abc"}, 2,
			"", "attnx translate: --block-ngram-repeat, --ignore-when-blocking, --ratio, --coverage-penalty, --beta and --stepwise-penalty go with --rules opennmt\nRun 'attnx help translate' for usage.\n"},
		// The model has no greedy.onnx: that is what the loop engine
		// lacks first (translate's TestErrorClasses refuses BanUNK on
		// the loop engine of a model that has it).
		{"ban-unk on the loop engine", "", []string{"translate", "--model", model, "--engine", "loop", "--ban-unk", "abc"}, 1,
			"", `engine "loop" needs greedy.onnx, and ` + filepath.Join(model, "attnx.json") + " names no greedy model (files.greedy)"},
		{"plain arguments", "", []string{"translate", "--model", model, "--plain", "--max-len", "8", "abc", "hello"}, 0,
			"lfffffff\njmjjlll\n", ""},
		{"bad line mid-batch keeps the lines before it", "abc\nhello\nabz\nabc\n", []string{"translate", "--model", model, "--batch", "4", "--max-len", "8"}, 1,
			"abc -> lfffffff\nhello -> jmjjlll\n", `attnx translate: line 3 ("abz"): character 'z'`},
		{"bad text after good ids", "", []string{"translate", "--model", model, "--max-len", "8", "--ids", "4 5 6", "abz"}, 1,
			"4 5 6 -> lfffffff\n", `("abz"): character 'z'`},
		{"source over --max-src-len", "abc\nhello\n", []string{"translate", "--model", model, "--max-len", "8", "--max-src-len", "4"}, 1,
			"abc -> lfffffff\n", `attnx translate: line 2 ("hello"): 5 tokens, more than the limit --max-src-len 4`},
		{"cuda", "", []string{"translate", "--model", model, "--device", "cuda", "abc"}, 1,
			"", `CPU-only, CUDA needs a GPU build with its CUDA provider library, CUDA and cuDNN; pass --device cpu, or --device auto to fall back to the CPU`},
		{"no model", "", []string{"translate", "abc"}, 2, "", "attnx translate: --model DIR is required\nRun 'attnx help translate' for usage."},
		{"bad ids", "", []string{"translate", "--model", model, "--ids", "4 x"}, 2, "", `"x" is not a token id`},
		{"bad engine", "", []string{"translate", "--model", model, "--engine", "fast", "abc"}, 2, "", `--engine "fast": want steps or loop`},
		{"loop without greedy", "", []string{"translate", "--model", model, "--engine", "loop", "abc"}, 1, "", `engine "loop" needs greedy.onnx`},
		{"plot name", "", []string{"translate", "--model", model, "--plot", "x.pdf", "abc"}, 2, "", "--plot x.pdf: the file name must end in .png"},
		{"beam search", "", []string{"translate", "--model", model, "--max-len", "8", "--beam", "3", "abc", "hello"}, 0,
			"abc -> ffffffff\nhello -> cjjjjjjj\n", ""},
		{"beam search n-best", "", []string{"translate", "--model", model, "--max-len", "8", "--beam", "3", "--n-best", "3", "abc"}, 0,
			"abc -> ffffffff\n  1. ffffffff  (score -13.1898, normalized -1.6487)\n  2. lfffffff  (score -13.4760, normalized -1.6845)\n  3. fffffffj  (score -13.8918, normalized -1.7365)\n", ""},
		{"beam search, raw scores", "", []string{"translate", "--model", model, "--max-len", "8", "--beam", "3", "--n-best", "2", "--length-penalty", "0", "hello"}, 0,
			"hello -> cjjjjjjj\n  1. cjjjjjjj  (score -16.3019, normalized -16.3019)\n", ""},
		{"beam 0", "", []string{"translate", "--model", model, "--beam", "0", "abc"}, 2, "", "attnx translate: --beam 0: want the beam width K >= 1 (1: greedy decoding)\n"},
		{"negative beam", "", []string{"translate", "--model", model, "--beam", "-4", "abc"}, 2, "", "--beam -4: want the beam width K >= 1"},
		{"n-best over beam", "", []string{"translate", "--model", model, "--beam", "2", "--n-best", "3", "abc"}, 2, "", "--n-best 3: want 1 <= N <= --beam 2"},
		{"n-best without beam", "", []string{"translate", "--model", model, "--n-best", "2", "abc"}, 2, "", "--n-best 2: want 1 <= N <= --beam 1"},
		{"n-best 0", "", []string{"translate", "--model", model, "--beam", "2", "--n-best", "0", "abc"}, 2, "", "--n-best 0: want 1 <= N <= --beam 2"},
		{"negative length penalty", "", []string{"translate", "--model", model, "--beam", "2", "--length-penalty", "-0.5", "abc"}, 2, "", "--length-penalty -0.5: want a finite value from 0 to 10"},
		{"NaN length penalty", "", []string{"translate", "--model", model, "--beam", "2", "--length-penalty", "nan", "abc"}, 2, "", "--length-penalty NaN: want a finite value from 0 to 10"},
		{"infinite length penalty", "", []string{"translate", "--model", model, "--beam", "2", "--length-penalty", "-Inf", "abc"}, 2, "", "--length-penalty -Inf: want a finite value from 0 to 10"},
		{"beam with loop and no beam.onnx", "", []string{"translate", "--model", model, "--beam", "4", "--engine", "loop", "abc"}, 2, "",
			"attnx translate: --engine loop with --beam 4 needs beam.onnx, and " + filepath.Join(model, "attnx.json") + " names no beam model (files.beam): re-export with `attnx export --beam`, or use --engine steps"},
		{"huge beam", "", []string{"translate", "--model", model, "--beam", "1000000000", "abc"}, 1, "", "more than the limit of"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := attnxStdin(c.stdin, c.args...)
			if code != c.code || !strings.HasPrefix(out, c.out) || !strings.Contains(errs, c.err) {
				t.Errorf("attnx %q: exit %d\nstdout %q\nstderr %q\nwant exit %d, stdout %q, stderr containing %q", c.args, code, out, errs, c.code, c.out, c.err)
			}
			if strings.Contains(errs, "goroutine ") || strings.Contains(errs, "panic") {
				t.Errorf("stack trace: %s", errs)
			}
		})
	}
	if code, out, _ := attnx("help"); code != 0 || !strings.Contains(out, "translate    greedy-decode or beam-search text or token ids") {
		t.Errorf("help: %d %q", code, out)
	}
}

// TestTranslateLoopBeam: --engine loop --beam K runs beam.onnx and prints
// what the steps engine prints, text and JSON, and a beam too large for
// MaxLiveBytes is refused before it runs.
func TestTranslateLoopBeam(t *testing.T) {
	model := translateTestModelWith(t, modeldir.Options{Beam: true})
	for _, args := range [][]string{
		{"--max-len", "8", "--beam", "4", "--n-best", "3", "abc", "hello"},
		{"--beam", "5", "--n-best", "5", "--length-penalty", "0.6", "--json", "abc", "fig", "hello"},
	} {
		var outs [2]string
		for i, engine := range []string{"steps", "loop"} {
			code, out, errs := attnx(append([]string{"translate", "--model", model, "--engine", engine}, args...)...)
			if code != 0 || errs != "" {
				t.Fatalf("%s %q: exit %d, stderr %q", engine, args, code, errs)
			}
			outs[i] = out
		}
		// beam.onnx returns the best hypothesis' attention alone
		// (translate.Hypothesis.Attention's documentation): the other
		// hypotheses of the steps engine's n-best have alignments the
		// loop engine's cannot.
		outs[0], outs[1] = dropLaterAlignments(t, outs[0]), dropLaterAlignments(t, outs[1])
		if outs[0] != outs[1] || !strings.Contains(outs[1], "normalized") {
			t.Errorf("%q: --engine loop printed\n%s\n--engine steps\n%s", args, outs[1], outs[0])
		}
	}
	code, _, errs := attnx("translate", "--model", model, "--engine", "loop", "--beam", "1000000000", "abc")
	if code != 1 || !strings.Contains(errs, "beam.onnx on 1 rows times the beam width 1000000000") || !strings.Contains(errs, "use a smaller --batch or --beam") || strings.Contains(errs, "MaxLiveBytes") {
		t.Errorf("huge beam on beam.onnx: exit %d, %q", code, errs)
	}
}

// dropLaterAlignments removes the "alignment" of every hypothesis but the
// first from each JSON line of out, written again with sorted keys (other
// lines are left as they are).
func dropLaterAlignments(t *testing.T, out string) string {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		hs, _ := v["hypotheses"].([]any)
		for k := 1; k < len(hs); k++ {
			if h, ok := hs[k].(map[string]any); ok {
				delete(h, "alignment")
			}
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = string(b)
	}
	return strings.Join(lines, "\n")
}

func TestTranslateJSONAndPlot(t *testing.T) {
	model := translateTestModel(t)
	dir := t.TempDir()
	plot := filepath.Join(dir, "att.png")
	code, out, errs := attnxStdin("abc\nhello\n", "translate", "--model", model, "--json", "--attention", "--max-len", "8", "--plot", plot)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d JSON lines: %q", len(lines), out)
	}
	var rec struct {
		Input        string      `json:"input"`
		SourceIDs    []int64     `json:"source_ids"`
		SourceTokens []string    `json:"source_tokens"`
		Tokens       []int64     `json:"tokens"`
		OutputTokens []string    `json:"output_tokens"`
		Text         string      `json:"text"`
		Attention    [][]float32 `json:"attention"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Input != "hello" || rec.Text != "jmjjlll" || len(rec.Tokens) != 8 || len(rec.Attention) != 8 ||
		len(rec.Attention[0]) != 5 || len(rec.SourceIDs) != 5 || rec.SourceIDs[0] != 11 ||
		strings.Join(rec.SourceTokens, "") != "hello" || strings.Join(rec.OutputTokens, " ") != "j m j <pad> j l l l" {
		t.Errorf("JSON record %+v", rec)
	}
	// Attention only on request, as serve answers it; the pieces always.
	code, out, errs = attnx("translate", "--model", model, "--json", "--max-len", "8", "hello")
	if code != 0 || strings.Contains(out, `"attention"`) || !strings.Contains(out, `"source_tokens":["h","e","l","l","o"]`) {
		t.Errorf("--json without --attention: exit %d, %s %s", code, out, errs)
	}
	if code, _, errs := attnx("translate", "--model", model, "--attention", "hello"); code != 2 || !strings.Contains(errs, "--attention goes with --json") {
		t.Errorf("--attention without --json: exit %d, %s", code, errs)
	}
	pngMagic := []byte("\x89PNG\r\n\x1a\n")
	for _, f := range []string{"att-1.png", "att-2.png"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !bytes.HasPrefix(data, pngMagic) || len(data) < 2000 {
			t.Errorf("%s: %d bytes, %v", f, len(data), err)
		}
	}
	if _, err := os.Stat(plot); err == nil {
		t.Errorf("%s written although there were two inputs", plot)
	}
	// Beam search: the best hypothesis' tokens, text and attention, and
	// the n-best list.
	code, out, errs = attnx("translate", "--model", model, "--json", "--attention", "--max-len", "8", "--beam", "3", "--n-best", "2", "hello")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var beam struct {
		Tokens     []int64     `json:"tokens"`
		Text       string      `json:"text"`
		Attention  [][]float32 `json:"attention"`
		Hypotheses []struct {
			Tokens          []int64 `json:"tokens"`
			Text            string  `json:"text"`
			Score           float32 `json:"score"`
			NormalizedScore float32 `json:"normalized_score"`
		} `json:"hypotheses"`
	}
	if err := json.Unmarshal([]byte(out), &beam); err != nil {
		t.Fatal(err)
	}
	if h := beam.Hypotheses; beam.Text != "cjjjjjjj" || len(beam.Attention) != 8 || len(h) != 2 || h[0].Text != "cjjjjjjj" ||
		h[1].Text != "cjjjjjjm" || h[0].NormalizedScore != h[0].Score/8 || h[1].Score > h[0].Score || len(h[1].Tokens) != 8 {
		t.Errorf("beam JSON %s", out)
	}
	// Greedy decoding lists its one hypothesis, scored: natural-log
	// token log-probs, their sum and the spec's score / len.
	var greedy translate.ResultJSON
	if err := json.Unmarshal([]byte(lines[0]), &greedy); err != nil {
		t.Fatal(err)
	}
	var sum float32
	for _, p := range greedy.PositionalScores {
		sum += p
	}
	if h := greedy.Hypotheses; len(h) != 1 || greedy.Score == nil || *greedy.Score != sum || h[0].Score != sum || len(greedy.PositionalScores) != len(greedy.Tokens) ||
		h[0].NormalizedScore != float32(float64(sum)/float64(len(greedy.Tokens))) || greedy.ScoreBase != "e" {
		t.Errorf("greedy JSON %s: want one hypothesis, its score the sum %v of its log-probs", lines[0], sum)
	}
	// One input: the file name as given.
	one := filepath.Join(dir, "one.png")
	if code, _, errs := attnx("translate", "--model", model, "--plot", one, "abc"); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if data, err := os.ReadFile(one); err != nil || !bytes.HasPrefix(data, pngMagic) {
		t.Errorf("%s: %v", one, err)
	}
}

// TestTranslateSrcStdin: --src - reads the test set from stdin and gives
// what --plain gives for the same lines on stdin; the totals line counts in
// the singular where it should.
func TestTranslateSrcStdin(t *testing.T) {
	model := translateTestModel(t)
	in := "abc\n\nhello\n"
	code, out, errOut := attnxStdin(in, "translate", "--model", model, "--src", "-", "--max-len", "8", "--lanes", "1")
	if code != 0 || out != "lfffffff\n\njmjjlll\n" {
		t.Fatalf("--src -: exit %d, %q, %s", code, out, errOut)
	}
	if !strings.Contains(errOut, " 1 batch on 1 lane -> stdout") {
		t.Errorf("totals line %q, want 1 batch on 1 lane", errOut)
	}
	if code, plain, errOut := attnxStdin(in, "translate", "--model", model, "--plain", "--max-len", "8"); code != 0 || plain != out {
		t.Fatalf("--plain on stdin: exit %d, %q, want %q; %s", code, plain, out, errOut)
	}
}

// TestTranslateModelDefaults: attnx.json's "defaults" decode when the
// command line says nothing; a flag given overrides its default.
func TestTranslateModelDefaults(t *testing.T) {
	model := translateTestModel(t)
	info, err := modeldir.ReadInfo(filepath.Join(model, modeldir.InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	info.Defaults = &modeldir.Defaults{Beam: 3, NBest: 2, LengthPenaltyForm: "wu"}
	data, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(model, modeldir.InfoFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	hyps := func(args ...string) int {
		t.Helper()
		code, out, errOut := attnx(append([]string{"translate", "--model", model, "--json", "--max-len", "8"}, append(args, "hello")...)...)
		var r struct {
			Hypotheses []json.RawMessage `json:"hypotheses"`
			// Greedy decoding records each token's log-prob; the spec's
			// beam search does not.
			Positional []float32 `json:"positional_scores"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("%v: exit %d, %s %s", args, code, out, errOut)
		}
		if greedy := r.Positional != nil; greedy != slices.Contains(args, "1") {
			t.Errorf("%v: positional scores %v", args, r.Positional)
		}
		return len(r.Hypotheses)
	}
	if n := hyps(); n != 2 {
		t.Errorf("attnx.json's beam 3, n_best 2: %d hypotheses", n)
	}
	if n := hyps("--beam", "1"); n != 1 {
		t.Errorf("--beam 1 over attnx.json: %d hypotheses, want greedy's one", n)
	}
	if n := hyps("--beam", "4"); n != 1 {
		t.Errorf("--beam 4 over attnx.json: %d hypotheses, want 1 (--n-best not given)", n)
	}
	if code, _, errOut := attnx("translate", "--model", model, "--engine", "loop", "hello"); code != 2 || !strings.Contains(errOut, "--length-penalty-form wu runs on the steps engine") {
		t.Errorf("attnx.json's wu with --engine loop: exit %d, %s", code, errOut)
	}
}

// TestTranslateRulesFlag: --rules opennmt (with --length-penalty-form and
// --ban-unk) decodes as the Go API's Options.Rules RulesOpenNMT does.
func TestTranslateRulesFlag(t *testing.T) {
	model := translateTestModel(t)
	for _, form := range []string{"avg", "none", "wu"} {
		code, out, errOut := attnx("translate", "--model", model, "--rules", "opennmt", "--length-penalty-form", form, "--ban-unk",
			"--beam", "3", "--n-best", "2", "--max-len", "8", "--plain", "abc", "hello")
		alpha := 1.0
		tr, err := translate.Open(model, translate.Options{Rules: translate.RulesOpenNMT, OpenNMTPenalty: form, BanUNK: true, Beam: 3, NBest: 2, MaxLen: 8, LengthPenalty: &alpha})
		if err != nil {
			t.Fatal(err)
		}
		res, err := tr.Translate(context.Background(), []string{"abc", "hello"})
		tr.Close()
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, r := range res {
			for _, h := range r.Hypotheses {
				want = append(want, h.Text)
			}
		}
		if code != 0 || out != strings.Join(want, "\n")+"\n" {
			t.Errorf("--length-penalty-form %s: exit %d, %q, want %q; %s", form, code, out, want, errOut)
		}
	}
}

// TestTranslateOpenNMTDefaults: an OpenNMT-py 3 export decodes with no
// flags as onmt_translate does with none (beam 5, OpenNMT-py's beam
// search, avg): the same as --rules opennmt --beam 5 given by hand;
// --engine loop asks for attnx's rules by name.
func TestTranslateOpenNMTDefaults(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	dir := filepath.Join(t.TempDir(), "onmt")
	if code, _, errOut := attnx("export", "../../testdata/demo/onmt_dates.pt", "-o", dir, "--beam"); code != 0 {
		t.Fatal(errOut)
	}
	held, err := os.ReadFile("../../testdata/demo/heldout.txt")
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "src")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(held)), "\n")[:40] {
		s, _, _ := strings.Cut(l, "\t")
		lines = append(lines, s)
	}
	os.WriteFile(src, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := attnx(append([]string{"translate", "--model", dir, "--src", src, "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	byDefault := run()
	if byHand := run("--rules", "opennmt", "--beam", "5", "--length-penalty-form", "avg", "--length-penalty", "1"); byDefault != byHand {
		t.Errorf("no flags and --rules opennmt --beam 5 differ:\n%s\n%s", byDefault, byHand)
	}
	var first struct {
		Hypotheses []struct {
			Score           float32 `json:"score"`
			NormalizedScore float32 `json:"normalized_score"`
			Tokens          []int64 `json:"tokens"`
		} `json:"hypotheses"`
	}
	json.Unmarshal([]byte(strings.SplitN(byDefault, "\n", 2)[0]), &first)
	if h := first.Hypotheses; len(h) != 1 || math.Abs(float64(h[0].Score)/float64(len(h[0].Tokens)+1)-float64(h[0].NormalizedScore)) > 1e-5 {
		t.Errorf("the default result: %+v, want one hypothesis scored by avg over its tokens + 1", h)
	}
	code, _, errOut := attnx("translate", "--model", dir, "--engine", "loop", "--beam", "4", "3rd of March 2021")
	if code != 2 || !strings.Contains(errOut, "decodes with OpenNMT-py's beam search by default") || !strings.Contains(errOut, "--rules spec") {
		t.Errorf("--engine loop --beam 4: exit %d, %s", code, errOut)
	}
	if code, out, errOut := attnx("translate", "--model", dir, "--engine", "loop", "--beam", "4", "--rules", "spec", "3rd of March 2021"); code != 0 || !strings.Contains(out, "-> 2021-03-03") {
		t.Errorf("--engine loop --beam 4 --rules spec: exit %d, %s %s", code, out, errOut)
	}
}
