package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/serve"
	"github.com/attnx/attnx/subword"
	"github.com/attnx/attnx/translate"
)

// surfaceModel is a model of testdata whose default decoding every
// surface must reproduce: its checkpoint, test set and the toolkit's
// output at its translate command's defaults ("" for the demo models,
// which have no toolkit).
type surfaceModel struct {
	name, ckpt, test, toolkit string
	exportFlags               []string
}

func surfaceModels() []surfaceModel {
	tk := func(dir, ckpt, test, out string) surfaceModel {
		root := filepath.Join("..", "..", "testdata", "toolkits", dir)
		return surfaceModel{dir, filepath.Join(root, ckpt), filepath.Join(root, test), filepath.Join(root, "expected", out), nil}
	}
	demo := filepath.Join("..", "..", "testdata", "demo")
	vocabs := []string{"--src-vocab", filepath.Join(demo, "src_vocab.json"), "--tgt-vocab", filepath.Join(demo, "tgt_vocab.json")}
	ms := []surfaceModel{
		tk("onmt-sp", "model.pt", "test.src", "default.txt"),
		tk("onmt-bpe", "model.pt", "test.src", "default.txt"),
		tk("onmt-st", "model_step_2001.pt", "test.src", "default.txt"),
		tk("joey-sp", "model/best.ckpt", "test.en", "greedy.txt"),
		tk("joey-bpe", "model/best.ckpt", "test.en", "greedy.txt"),
	}
	// fairseq-spm and fairseq-moses: fairseq's SentencePiece decoding
	// (an output <unk> kept) and its Moses defaults (make_fairseq_text.sh).
	for _, dir := range append(fairseqDirs(), "fairseq-spm", "fairseq-moses") {
		ms = append(ms, tk(dir, "checkpoint_best.pt", "test.raw.en", "default.txt"))
	}
	for _, m := range []string{"bahdanau", "luong"} {
		ms = append(ms, surfaceModel{"demo-" + m, filepath.Join(demo, m+".pt"), filepath.Join(demo, "examples.txt"), "", append([]string{"--greedy", "--beam"}, vocabs...)})
	}
	for _, m := range []string{"onmt_dates", "onmt_dates_spm"} {
		ms = append(ms, surfaceModel{"demo-" + m, filepath.Join(demo, m+".pt"), filepath.Join(demo, "examples.txt"), "", nil})
	}
	return ms
}

// TestOneDecodingTruth: for each toolkit model of testdata, exported with
// no flags, `attnx translate --src` with no flags, the Go API with zero
// Options (TranslateCorpus, and Translate of all lines) and serve over
// HTTP with no decoding fields give the same lines, and those are the
// toolkit's own output at its defaults but for the near ties the
// toolkit's scores show. Before the
// Go API decoded greedily under attnx's rules whatever the model (0 of 48
// fairseq lines), and serve cut JoeyNMT's outputs by each sentence's
// length where joeynmt translate uses its batch's longest.
func TestOneDecodingTruth(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	for _, m := range surfaceModels() {
		t.Run(m.name, func(t *testing.T) {
			dir := exportModel(t, m.ckpt, m.exportFlags...)
			data, err := os.ReadFile(m.test)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")

			// The command line, no decoding flags.
			out := filepath.Join(t.TempDir(), "cli.txt")
			if code, _, stderr := attnx("translate", "--model", dir, "--src", m.test, "--output", out); code != 0 {
				t.Fatalf("translate --src: %s", stderr)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			cli := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")

			// The Go API, zero Options.
			tr, err := translate.Open(dir, translate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			api := make([]string, len(lines))
			if _, err := tr.TranslateCorpus(context.Background(), lines, 1, translate.CorpusOptions{}, func(i int, r translate.Result) error {
				api[i] = r.Text
				return nil
			}, nil); err != nil {
				t.Fatal(err)
			}
			// Translate, the call the README shows, decodes the lines as
			// the test set TranslateCorpus decodes (issue 54: it gave
			// joey-sp 44, onmt-bpe 47 of 48 lines).
			res, err := tr.Translate(context.Background(), lines)
			if err != nil {
				t.Fatal(err)
			}
			for i := range lines {
				if res[i].Text != api[i] {
					t.Errorf("line %d: Translate %q, TranslateCorpus %q", i+1, res[i].Text, api[i])
				}
			}
			tr.Close()

			// HTTP, no decoding fields, the test set as one request, with
			// continuous batching (serve's default) and without.
			var httpLines [2][]string
			for k, batching := range []bool{true, false} {
				hs := serveModel(t, serve.Config{Models: []serve.ModelDir{{Name: "m", Dir: dir}}, Batching: batching, MaxInputs: len(lines)})
				body, _ := json.Marshal(map[string]any{"inputs": lines})
				resp, err := http.Post(hs.URL+serve.PathTranslate, "application/json", bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				var sr serve.Response
				err = json.NewDecoder(resp.Body).Decode(&sr)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || len(sr.Results) != len(lines) {
					t.Fatalf("POST (batching %v): %d, %v, %d results", batching, resp.StatusCode, err, len(sr.Results))
				}
				for _, r := range sr.Results {
					httpLines[k] = append(httpLines[k], r.Text)
				}
			}

			same := func(what string, got []string) int {
				n := 0
				for i := range cli {
					if i < len(got) && got[i] == cli[i] {
						n++
					} else if n+5 > i { // the first few differences
						t.Errorf("%s line %d: %q, translate --src %q", what, i+1, got[i], cli[i])
					}
				}
				return n
			}
			nAPI, nHTTP, nHTTPOff := same("Go API", api), same("HTTP", httpLines[0]), same("HTTP, batching off", httpLines[1])
			msg := fmt.Sprintf("%s: %d lines; identical to translate --src: Go API %d, HTTP %d (batching off %d)", m.name, len(cli), nAPI, nHTTP, nHTTPOff)
			if m.toolkit != "" {
				toolkit := readToolkitLines(t, m.toolkit)
				gaps := map[string]float64{}
				if data, err := os.ReadFile(strings.TrimSuffix(m.toolkit, ".txt") + ".gaps.json"); err == nil {
					json.Unmarshal(data, &gaps)
				}
				nTK, ties := 0, 0
				for i := range cli {
					switch {
					case i < len(toolkit) && toolkit[i] == cli[i]:
						nTK++
					case gaps[fmt.Sprint(i)] < nearTie && gaps[fmt.Sprint(i)] != 0:
						ties++
					default:
						t.Errorf("line %d: translate --src %q, the toolkit %q", i+1, cli[i], toolkit[i])
					}
				}
				msg += fmt.Sprintf("; %d identical to the toolkit's output, %d near ties", nTK, ties)
			}
			t.Log(msg)
			if len(cli) != len(lines) {
				t.Errorf("translate --src wrote %d lines for %d", len(cli), len(lines))
			}
		})
	}
}

func readToolkitLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestPretokenizedInput: a test set already segmented into the model's
// pieces (as fairseq's prepare-*.sh leaves it) translates with
// --pretokenized exactly as the raw text does, over the command line and
// HTTP ("pretokenized": true); given without it, the pieces are split
// again and a note says so, where the output was garbage in silence.
func TestPretokenizedInput(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	src := filepath.Join("..", "..", "testdata", "toolkits", "fairseq-long")
	dir := exportModel(t, filepath.Join(src, "checkpoint_best.pt"))
	info, err := modeldir.ReadInfo(filepath.Join(dir, modeldir.InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := subword.Open(*info.SrcTokenizer, dir, info.SrcTokens)
	if err != nil {
		t.Fatal(err)
	}
	lines := readToolkitLines(t, filepath.Join(src, "test.raw.en"))
	var pieces []string
	for _, l := range lines {
		pieces = append(pieces, strings.Join(tok.Encode(l), " "))
	}
	segmented := filepath.Join(t.TempDir(), "test.bpe.en")
	if err := os.WriteFile(segmented, []byte(strings.Join(pieces, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, seg := filepath.Join(t.TempDir(), "raw.txt"), filepath.Join(t.TempDir(), "seg.txt")
	if code, _, stderr := attnx("translate", "--model", dir, "--src", filepath.Join(src, "test.raw.en"), "--output", raw); code != 0 {
		t.Fatal(stderr)
	}
	code, _, stderr := attnx("translate", "--model", dir, "--src", segmented, "--output", seg, "--pretokenized")
	if code != 0 || strings.Contains(stderr, "looks segmented") {
		t.Fatalf("--pretokenized: exit %d: %s", code, stderr)
	}
	a, b := readToolkitLines(t, raw), readToolkitLines(t, seg)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("--pretokenized on the segmented test set differs from the raw text's translation")
	}
	if code, _, stderr := attnx("translate", "--model", dir, "--src", segmented, "--output", seg); code != 0 || !strings.Contains(stderr, `note: the input looks segmented already (it holds "@@ ", subword-nmt's joiner)`) {
		t.Errorf("segmented input without --pretokenized: exit %d, no note: %s", code, stderr)
	}
	// HTTP: the same, per request.
	hs := serveModel(t, serve.Config{Models: []serve.ModelDir{{Name: "m", Dir: dir}}, Batching: true, MaxInputs: 64})
	for _, c := range []struct {
		body map[string]any
		note bool
	}{{map[string]any{"inputs": pieces, "pretokenized": true}, false}, {map[string]any{"inputs": pieces}, true}} {
		body, _ := json.Marshal(c.body)
		resp, err := http.Post(hs.URL+serve.PathTranslate, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var sr serve.Response
		json.NewDecoder(resp.Body).Decode(&sr)
		resp.Body.Close()
		if (len(sr.Notes) > 0) != c.note || len(sr.Results) != len(lines) {
			t.Fatalf("%v: %d results, notes %q", c.body["pretokenized"], len(sr.Results), sr.Notes)
		}
		if !c.note {
			for i, r := range sr.Results {
				if r.Text != a[i] {
					t.Errorf("HTTP, pretokenized, line %d: %q, the raw text's %q", i+1, r.Text, a[i])
				}
			}
		}
	}
}

// TestFairseqTokenizerHints: a fairseq checkpoint laid out without its BPE
// codes is exported with a note naming the flag that adds them, the
// translate error's hint is one that works (--tokenizer FILE, which
// gives raw text out), a model with a source tokenizer only says that its
// output keeps the target pieces, and fairseq's <s> and madeupword0000
// are not counted as pieces the tokenizer cannot produce.
func TestFairseqTokenizerHints(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	src := filepath.Join("..", "..", "testdata", "toolkits", "fairseq-long")
	bare := copyFiles(t, src, "checkpoint_best.pt", "data-bin/dict.en.txt", "data-bin/dict.de.txt")
	ckpt, codes := filepath.Join(bare, "checkpoint_best.pt"), filepath.Join(src, "bpecodes")
	m := filepath.Join(t.TempDir(), "m")
	code, out, stderr := attnx("export", ckpt, "-o", m)
	if code != 0 || !strings.Contains(out, "fairseq BPE: the cfg names none and no bpecodes, code or sentencepiece.bpe.model is beside the checkpoint") || !strings.Contains(out, "add its codes with --tokenizer FILE") {
		t.Errorf("export without codes: exit %d, no note naming --tokenizer:\n%s%s", code, out, stderr)
	}
	code, _, stderr = attnx("translate", "--model", m, "Hello world .")
	if code == 0 || !strings.Contains(stderr, "--tokenizer FILE when one serves both sides") {
		t.Errorf("translate without a tokenizer: exit %d, %s", code, stderr)
	}
	half := filepath.Join(t.TempDir(), "half")
	code, out, _ = attnx("export", ckpt, "-o", half, "--src-tokenizer", codes)
	if code != 0 || strings.Contains(out, "madeupword") {
		t.Errorf("export --src-tokenizer: exit %d; fairseq's dictionary symbols counted as missing pieces:\n%s", code, out)
	}
	if _, _, stderr := attnx("translate", "--model", half, "Hello world ."); !strings.Contains(stderr, "note: the model has no target tokenizer, but its target vocabulary holds subword-nmt BPE pieces") {
		t.Errorf("a source tokenizer only: no note on the target's pieces: %s", stderr)
	}
	whole := filepath.Join(t.TempDir(), "whole")
	if code, _, stderr := attnx("export", ckpt, "-o", whole, "--tokenizer", codes); code != 0 {
		t.Fatal(stderr)
	}
	if code, out, stderr := attnx("translate", "--model", whole, "Hello world ."); code != 0 || strings.Contains(out, "@@") {
		t.Errorf("--tokenizer FILE, the hint's flag: exit %d, %q %s", code, out, stderr)
	}
}

// TestEveryDecodingOption: every setting of translate.DecodingOptions is a
// flag of attnx translate and a field of serve's request (docs/decoding.md
// lists them; before, HTTP refused unk_penalty, temperature, sampling and
// the rest as unknown fields), and a request with the toolkits' settings
// decodes as the command line does with the same flags; a bad value is
// refused with the field's name.
func TestEveryDecodingOption(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	_, help, _ := attnx("help", "translate")
	fields := map[string]bool{}
	rt := reflect.TypeFor[serve.Request]()
	for f := range rt.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields[name] = true
	}
	// Settings that name a file on the server's disk are not request
	// fields: a client must not choose which of the server's files it
	// reads.
	notHTTP := map[string]bool{"ReplaceUnkDict": true}
	for _, o := range translate.DecodingOptions {
		for _, flag := range strings.Split(o.Flag, ", ") {
			if !strings.Contains(help, flag+" ") && !strings.Contains(help, flag+"[=") {
				t.Errorf("%s: attnx translate has no flag %s", o.Go, flag)
			}
		}
		switch {
		case notHTTP[o.Go] && o.Field != "":
			t.Errorf("%s: a setting naming a server file is request field %q", o.Go, o.Field)
		case !notHTTP[o.Go] && !fields[o.Field]:
			t.Errorf("%s: serve's request has no field %q", o.Go, o.Field)
		}
	}
	src := filepath.Join("..", "..", "testdata", "toolkits", "fairseq-long")
	dir := exportModel(t, filepath.Join(src, "checkpoint_best.pt"))
	lines := readToolkitLines(t, filepath.Join(src, "test.raw.en"))[:8]
	hs := serveModel(t, serve.Config{Models: []serve.ModelDir{{Name: "m", Dir: dir}}, Batching: true})
	post := func(body map[string]any) (int, serve.Response, string) { return postTranslate(t, hs, body) }
	in := filepath.Join(t.TempDir(), "in.txt")
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	for _, c := range []struct {
		flags []string
		body  map[string]any
	}{
		{[]string{"--temperature", "0.7", "--unk-penalty", "1.5"}, map[string]any{"temperature": 0.7, "unk_penalty": 1.5}},
		{[]string{"--max-len-a", "1.2", "--max-len", "3"}, map[string]any{"max_len_a": 1.2, "max_len": 3}},
		{[]string{"--sampling", "--sampling-topk", "5", "--seed", "7", "--beam", "2"}, map[string]any{"sampling": true, "sampling_topk": 5, "seed": 7, "beam": 2, "n_best": 2}},
		{[]string{"--match-source-len", "--beam", "3"}, map[string]any{"match_source_len": true, "beam": 3}},
		{[]string{"--diverse-beam-groups", "2", "--diverse-beam-strength", "1.5", "--beam", "4", "--n-best", "4"},
			map[string]any{"diverse_beam_groups": 2, "diverse_beam_strength": 1.5, "beam": 4, "n_best": 4}},
		{[]string{"--diversity-rate", "0.5", "--beam", "3", "--n-best", "2"}, map[string]any{"diversity_rate": 0.5, "beam": 3, "n_best": 2}},
	} {
		out := filepath.Join(t.TempDir(), "out.txt")
		if code, _, stderr := attnx(append([]string{"translate", "--model", dir, "--src", in, "--output", out}, c.flags...)...); code != 0 {
			t.Fatalf("%v: %s", c.flags, stderr)
		}
		cli := readToolkitLines(t, out)
		c.body["inputs"] = lines
		code, sr, raw := post(c.body)
		if code != 200 || len(sr.Results) != len(lines) {
			t.Fatalf("%v: %d %s", c.body, code, raw)
		}
		k := 0
		for i, r := range sr.Results {
			texts := []string{r.Text}
			if len(r.Hypotheses) > 1 {
				texts = nil
				for _, h := range r.Hypotheses {
					texts = append(texts, h.Text)
				}
			}
			for _, text := range texts {
				if k < len(cli) && text != cli[k] {
					t.Errorf("%v, input %d: HTTP %q, translate %q", c.flags, i+1, text, cli[k])
				}
				k++
			}
		}
	}
	for body, want := range map[string]string{
		`{"inputs":["x"],"temperature":1e-40}`:                          "temperature = 1e-40: want 0 (none) or a value from 0.001 to 1000",
		`{"inputs":["x"],"block_ngram_repeat":2}`:                       `block_ngram_repeat 2 and ignore_when_blocking [] go with rules \"opennmt\"`,
		`{"inputs":["x"],"ratio":0.5}`:                                  `ratio = 0.5: want a finite value >= 0, with rules \"opennmt\"`,
		`{"inputs":["x"],"sampling_topk":3}`:                            "sampling (with sampling_topk, sampling_topp) goes with rules",
		`{"inputs":["x"],"beam":5,"diverse_beam_groups":2}`:             "diverse_beam_groups = 2 with beam 5: want groups that divide the beam",
		`{"inputs":["x"],"match_source_len":true,"diversity_rate":0.5}`: "match_source_len with diversity_rate: at most one",
		`{"inputs":["x"],"ignore_when_blocking":["zzzqqq"]}`:            `ignore_when_blocking: \"zzzqqq\" is not in the target vocabulary`,
	} {
		var m map[string]any
		json.Unmarshal([]byte(body), &m)
		code, _, raw := post(m)
		if want == "" {
			continue
		}
		if code != 400 || !strings.Contains(raw, want) {
			t.Errorf("%s: %d %s; want 400 and %q", body, code, raw, want)
		}
	}
}

// TestFormatFairseq: translate --src --format fairseq writes what
// fairseq-interactive wrote for the same test set (expected/*.out, its
// W- timing lines left out): the same S-, H-, D- and P- lines, the same
// pieces and text, the scores in base 2 within float32's reach of
// fairseq's (the two compute the network's float32 arithmetic in other
// orders), at the defaults and with --n-best 3.
func TestFormatFairseq(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	src := filepath.Join("..", "..", "testdata", "toolkits", "fairseq-long")
	dir := exportModel(t, filepath.Join(src, "checkpoint_best.pt"))
	for _, c := range []struct {
		name  string
		flags []string
	}{{"default", nil}, {"nbest3", []string{"--n-best", "3"}}} {
		out := filepath.Join(t.TempDir(), "out")
		args := append([]string{"translate", "--model", dir, "--src", filepath.Join(src, "test.raw.en"), "--output", out, "--format", "fairseq"}, c.flags...)
		if code, _, stderr := attnx(args...); code != 0 {
			t.Fatalf("%v: %s", args, stderr)
		}
		got, want := readToolkitLines(t, out), readToolkitLines(t, filepath.Join(src, "expected", c.name+".out"))
		if len(got) != len(want) {
			t.Fatalf("%s: %d lines, fairseq-interactive wrote %d", c.name, len(got), len(want))
		}
		gaps := map[string]float64{}
		if data, err := os.ReadFile(filepath.Join(src, "expected", c.name+".gaps.json")); err == nil {
			json.Unmarshal(data, &gaps)
		}
		bad := 0
		for i := range want {
			g, w := strings.Split(got[i], "\t"), strings.Split(want[i], "\t")
			id, _, _ := strings.Cut(strings.SplitN(w[0], "-", 2)[1], "\t")
			if gap, ok := gaps[id]; ok && gap < nearTie {
				continue // a near tie in fairseq's own scores
			}
			num := func(x string) float64 { v, _ := strconv.ParseFloat(x, 64); return v }
			same := len(g) == len(w) && g[0] == w[0]
			switch kind := w[0][:1]; {
			case !same:
			case kind == "S":
				same = g[1] == w[1]
			case kind == "H" || kind == "D": // the score, then the pieces or text
				same = g[2] == w[2] && math.Abs(num(g[1])-num(w[1])) <= 1e-5*math.Abs(num(w[1]))+1e-6
			case kind == "P":
				gp, wp := strings.Fields(g[1]), strings.Fields(w[1])
				same = len(gp) == len(wp)
				for k := range wp {
					same = same && math.Abs(num(gp[k])-num(wp[k])) <= 2e-4
				}
			}
			if !same {
				if bad++; bad <= 5 {
					t.Errorf("%s line %d:\n  attnx   %q\n  fairseq %q", c.name, i+1, got[i], want[i])
				}
			}
		}
		t.Logf("%s: %d lines as fairseq-interactive wrote them (numbers within float32's reach), %d differ", c.name, len(want)-bad, bad)
	}
}

// TestFairseqPairFromDataBin: a checkpoint whose cfg names no language
// pair, over a joined dictionary, takes the pair from the binarized files'
// names as fairseq's infer_language_pair does (train.de-en.de.idx: de to
// en), where attnx took the dictionaries' alphabetical order.
func TestFairseqPairFromDataBin(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "toolkits", "fairseq-shared")
	bare := copyFiles(t, src, "checkpoint_best.pt", "data-bin/dict.en.txt", "data-bin/dict.de.txt")
	code, out, stderr := attnx("inspect", filepath.Join(bare, "checkpoint_best.pt"))
	if code != 0 || !strings.Contains(out, "fairseq language pair de-en: the cfg names none, so it comes from the dictionaries") {
		t.Fatalf("without binarized files: exit %d, want the dictionaries' order (de-en):\n%s%s", code, out, stderr)
	}
	os.WriteFile(filepath.Join(bare, "data-bin", "train.en-de.en.idx"), nil, 0o644)
	code, out, stderr = attnx("inspect", filepath.Join(bare, "checkpoint_best.pt"))
	if code != 0 || !strings.Contains(out, "fairseq language pair en-de: the cfg names none, so it comes from train.en-de.en.idx's name") {
		t.Errorf("with train.en-de.en.idx: exit %d:\n%s%s", code, out, stderr)
	}
}

// TestFormatOnmt: translate --src --format onmt writes onmt_translate
// -verbose's blocks: SENT n with the source pieces, PRED n with the best
// hypothesis' pieces (which, joined as SentencePiece joins them, are the
// line onmt_translate wrote: expected/default.txt) and PRED SCORE, the
// hypothesis' score as --json gives it (its normalized_score, natural
// log), to four decimals. (No fixture holds onmt_translate's -verbose log
// itself: make_onmt.sh keeps its output files.)
func TestFormatOnmt(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	src := filepath.Join("..", "..", "testdata", "toolkits", "onmt-sp")
	dir := exportModel(t, filepath.Join(src, "model.pt"))
	out, js := filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "out.json")
	test := filepath.Join(src, "test.src")
	if code, _, stderr := attnx("translate", "--model", dir, "--src", test, "--output", out, "--format", "onmt"); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := attnx("translate", "--model", dir, "--src", test, "--output", js, "--json"); code != 0 {
		t.Fatal(stderr)
	}
	want := readToolkitLines(t, filepath.Join(src, "expected", "default.txt"))
	var scores []float64
	for _, l := range readToolkitLines(t, js) {
		var r translate.ResultJSON
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		scores = append(scores, float64(r.Hypotheses[0].NormalizedScore))
	}
	b, _ := os.ReadFile(out)
	blocks := strings.Split(strings.TrimPrefix(string(b), "\n"), "\n\n")
	if len(blocks) != len(want) {
		t.Fatalf("%d blocks for %d sentences", len(blocks), len(want))
	}
	for i, blk := range blocks {
		lines := strings.Split(strings.TrimSuffix(blk, "\n"), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], fmt.Sprintf("SENT %d: ['", i+1)) {
			t.Fatalf("block %d: %q", i+1, blk)
		}
		pred, ok := strings.CutPrefix(lines[1], fmt.Sprintf("PRED %d: ", i+1))
		text := strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(pred, " ", ""), "\u2581", " "))
		if !ok || text != want[i] {
			t.Errorf("sentence %d: PRED %q joins to %q, onmt_translate wrote %q", i+1, pred, text, want[i])
		}
		if s := fmt.Sprintf("PRED SCORE: %.4f", scores[i]); lines[2] != s {
			t.Errorf("sentence %d: %q, --json's score gives %q", i+1, lines[2], s)
		}
	}
	// --with-score: onmt_translate -with_score's lines, text TAB score.
	ws := filepath.Join(t.TempDir(), "ws")
	if code, _, stderr := attnx("translate", "--model", dir, "--src", test, "--output", ws, "--with-score"); code != 0 {
		t.Fatal(stderr)
	}
	for i, l := range readToolkitLines(t, ws) {
		text, score, ok := strings.Cut(l, "\t")
		if got, _ := strconv.ParseFloat(score, 64); !ok || text != want[i] || float32(got) != float32(scores[i]) {
			t.Errorf("--with-score line %d: %q, want %q and %v", i+1, l, want[i], scores[i])
		}
	}
}

// fairseqDirs are the fixtures of fairseqFixtures.
func fairseqDirs() []string {
	var dirs []string
	for _, fx := range fairseqFixtures {
		dirs = append(dirs, fx.dir)
	}
	return dirs
}

// serveModel starts a server of cfg, its models loaded, for the test.
// postTranslate posts body as JSON to the server's translate endpoint and
// returns the status, the answer read as a Response, and its raw text.
func postTranslate(t *testing.T, hs *httptest.Server, body map[string]any) (int, serve.Response, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(hs.URL+serve.PathTranslate, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var sr serve.Response
	json.Unmarshal(raw, &sr)
	return resp.StatusCode, sr, string(raw)
}

func serveModel(t *testing.T, cfg serve.Config) *httptest.Server {
	t.Helper()
	s, err := serve.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); s.Close() })
	return hs
}

// copyFiles copies files (paths under src) into a new directory, as laid
// out under src, and returns it: a fixture without its other files.
func copyFiles(t *testing.T, src string, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// exportModel exports ckpt with attnx export and flags (none: as a user
// who gives none) into a new directory, and returns it.
func exportModel(t *testing.T, ckpt string, flags ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	if code, _, stderr := attnx(append([]string{"export", ckpt, "-o", dir}, flags...)...); code != 0 {
		t.Fatalf("export %s: %s", ckpt, stderr)
	}
	return dir
}
