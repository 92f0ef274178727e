package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/internal/fixtures"
)

const torchModules = "../../verify/testdata/torch_modules"

// tutorialFiles writes a random model of cfg the tutorial's way, as two
// state dicts (the encoder's and the decoder's, keys without encoder. and
// decoder.), and returns their paths.
func tutorialFiles(t *testing.T, dir string, cfg attention.Config) (enc, dec string) {
	t.Helper()
	all := filepath.Join(dir, "all.safetensors")
	fixtures.WriteRandomCheckpoint(t, all, cfg, 9)
	sd, err := checkpoint.Load(all)
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]map[string]*builder.Tensor{"encoder": {}, "decoder": {}}
	for k, v := range sd.Tensors {
		side, rest, _ := strings.Cut(k, ".")
		parts[side][rest] = &builder.Tensor{DType: v.DType, Dims: v.Dims, Raw: v.Raw}
	}
	enc, dec = filepath.Join(dir, "encoder.safetensors"), filepath.Join(dir, "decoder.safetensors")
	for side, path := range map[string]string{"encoder": enc, "decoder": dec} {
		if err := checkpoint.WriteSafetensors(path, parts[side], nil); err != nil {
			t.Fatal(err)
		}
	}
	return enc, dec
}

// attnx verify --torch-module compares the graphs with the user's own
// modules: the article's (its literal transcription), the tutorial's
// current version (written for these tests, and a variant whose attention
// is named W1/W2/V, loaded from the names before --map), the tutorial's
// 2017 version, each run one sentence at a time with its own call
// convention. A variant with a mistake is caught.
func TestVerifyTorchModule(t *testing.T) {
	needTorch(t)
	tmp := t.TempDir()
	in := filepath.Join(tmp, "in.safetensors")
	// The article's Bahdanau decoder squeezes encoder_outputs, so its
	// sources have at least 2 tokens; ids below 5, the smallest source
	// vocabulary here.
	writeInputs(t, in, [][]int64{{4, 1, 2, 3, 4, 1}, {3, 4}, {2, 2, 1}})
	mod := func(name string) string { return filepath.Join(torchModules, name) }
	type run struct {
		name   string
		export []string // after "export -o DIR --greedy"
		verify []string // after "verify --model DIR --inputs IN"
		module string
	}
	var runs []run
	// The article's two decoder classes (the Luong scores differ only in
	// its Attention module, which the live parity suite covers).
	for _, a := range []attention.Arch{attention.Bahdanau, attention.LuongConcat} {
		ck := fixtureCkpt(string(a) + "_b1_l1")
		runs = append(runs, run{"article " + string(a), []string{ck}, []string{"--checkpoint", ck}, "article.py"})
	}
	enc, dec := tutorialFiles(t, t.TempDir(), attention.Config{Arch: attention.TutorialBahdanau, Cell: attention.GRU, Hidden: 6, Layers: 1, SrcVocab: 12, TgtVocab: 9})
	pair := []string{"--encoder", enc, "--decoder", dec}
	runs = append(runs, run{"tutorial", pair, pair, "tutorial.py"})
	maps := []string{"--map", "decoder.attention.W1=decoder.attention.Wa", "--map", "decoder.attention.W2=decoder.attention.Ua", "--map", "decoder.attention.V=decoder.attention.Va"}
	w1 := append([]string{"--encoder", layoutFixture("tut_encoder.pt"), "--decoder", layoutFixture("tut_decoder_w1w2v.pt")}, maps...)
	runs = append(runs, run{"tutorial as W1/W2/V", w1, w1, "tutorial_w1w2v.py"})
	enc17, dec17 := tutorialFiles(t, t.TempDir(), attention.Config{Arch: attention.TutorialLocation, Cell: attention.GRU, Hidden: 7, Layers: 1, SrcVocab: 12, TgtVocab: 9, MaxLength: 6})
	pair17 := []string{"--encoder", enc17, "--decoder", dec17}
	runs = append(runs, run{"tutorial 2017", pair17, pair17, "tutorial_2017.py"})

	dirs := map[string]string{}
	for i, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			dir := filepath.Join(tmp, string(rune('a'+i)))
			dirs[r.name] = dir
			if code, _, errs := attnx(append([]string{"export", "-o", dir, "--greedy"}, r.export...)...); code != 0 {
				t.Fatal(errs)
			}
			args := append([]string{"verify", "--model", dir, "--inputs", in, "--torch-module", mod(r.module)}, r.verify...)
			code, out, errs := attnx(args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			for _, want := range []string{
				"  PyTorch: your modules from " + mod(r.module) + ", one sentence at a time\n",
				"  step argmax tokens: identical\n", "  greedy decoding, greedy.onnx: identical\n",
				"\nOK: the ONNX graphs compute what your modules compute\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}

	// The mistake shows: its attention and log_probs differ.
	code, out, _ := attnx(append([]string{"verify", "--model", dirs["tutorial"], "--inputs", in, "--torch-module", mod("tutorial_wrong.py")}, pair...)...)
	if code != 1 || !strings.Contains(out, "\nMISMATCH: the ONNX graphs differ from your modules\n") || !strings.Contains(out, "  attention           10  ") ||
		!strings.Contains(out, "MISMATCH in 10 of 10") {
		t.Errorf("the mistaken module: exit %d\n%s", code, out)
	}

	// Modules that cannot be the oracle, named.
	noBuild := filepath.Join(tmp, "nobuild.py")
	if err := os.WriteFile(noBuild, []byte("x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, c := range []struct {
		module string
		args   []string
		want   string
	}{
		{noBuild, pair, "attnx verify: PyTorch reference (reference.py run-module) failed: reference: --module " + noBuild +
			" defines no build(config) function returning (encoder, decoder)\n"},
		{mod("tutorial.py"), w1, "attnx verify: PyTorch reference (reference.py run-module) failed: reference: --module " + abs(mod("tutorial.py")) +
			": your decoder's keys differ from the checkpoint's decoder.* keys: missing from the checkpoint: attention.Ua.bias, attention.Ua.weight, attention.Va.bias, attention.Va.weight, attention.Wa.bias, attention.Wa.weight; not in your module: attention.V.bias, attention.V.weight, attention.W1.bias, attention.W1.weight, attention.W2.bias, attention.W2.weight\n"},
		{filepath.Join(tmp, "none.py"), pair, "attnx verify: --torch-module: stat " + filepath.Join(tmp, "none.py") + ": no such file or directory\n"},
	} {
		model := dirs["tutorial"]
		if c.module == mod("tutorial.py") {
			model = dirs["tutorial as W1/W2/V"]
		}
		code, _, errs := attnx(append([]string{"verify", "--model", model, "--inputs", in, "--torch-module", c.module}, c.args...)...)
		if code != 1 || errs != c.want {
			t.Errorf("%s: exit %d, stderr\n%s\nwant\n%s", c.module, code, errs, c.want)
		}
	}
}
