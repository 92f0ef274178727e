package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/testenv"
)

const torchModules = "../../verify/testdata/torch_modules"

// savedTheTutorialsWay builds the modules of a --torch-module file (in
// verify/testdata/torch_modules) for config, with PyTorch's default
// initialisation from seed 0, and saves them as the tutorial does, two
// state dicts with torch.save: encoder.pt and decoder.pt in dir.
func savedTheTutorialsWay(t *testing.T, module string, config map[string]any, dir string) (enc, dec string) {
	t.Helper()
	cfg, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	enc, dec = filepath.Join(dir, "encoder.pt"), filepath.Join(dir, "decoder.pt")
	script := `import importlib, json, sys, torch
sys.path.insert(0, sys.argv[1])
torch.manual_seed(0)
encoder, decoder = importlib.import_module(sys.argv[2]).build(json.loads(sys.argv[3]))
torch.save(encoder.state_dict(), sys.argv[4])
torch.save(decoder.state_dict(), sys.argv[5])
`
	if out, err := exec.Command(testenv.Python, "-c", script, torchModules, strings.TrimSuffix(module, ".py"), string(cfg), enc, dec).CombinedOutput(); err != nil {
		t.Fatalf("saving %s's modules: %v\n%s", module, err, out)
	}
	return enc, dec
}

// attnx verify --torch-module compares the graphs with the user's own
// modules: the article's (its literal transcription), the tutorial's
// current version (written for these tests, and a variant whose attention
// is named W1/W2/V, loaded from the names before --map), the tutorial's
// 2017 version, each run one sentence at a time with its own call
// convention. The tutorial's models are saved its way, two state dicts
// with torch.save, and export with its special tokens; attnx's reference
// agrees with each model too. A variant with a mistake is caught.
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
	enc, dec := savedTheTutorialsWay(t, "tutorial.py", map[string]any{"hidden": 6, "src_vocab": 12, "tgt_vocab": 9}, t.TempDir())
	pair := []string{"--encoder", enc, "--decoder", dec}
	runs = append(runs, run{"tutorial", pair, pair, "tutorial.py"})
	maps := []string{"--map", "decoder.attention.W1=decoder.attention.Wa", "--map", "decoder.attention.W2=decoder.attention.Ua", "--map", "decoder.attention.V=decoder.attention.Va"}
	w1 := append([]string{"--encoder", layoutFixture("tut_encoder.pt"), "--decoder", layoutFixture("tut_decoder_w1w2v.pt")}, maps...)
	runs = append(runs, run{"tutorial as W1/W2/V", w1, w1, "tutorial_w1w2v.py"})
	enc17, dec17 := savedTheTutorialsWay(t, "tutorial_2017.py", map[string]any{"hidden": 7, "src_vocab": 12, "tgt_vocab": 9, "max_length": 6}, t.TempDir())
	pair17 := []string{"--encoder", enc17, "--decoder", dec17}
	runs = append(runs, run{"tutorial 2017", pair17, pair17, "tutorial_2017.py"})

	dirs := map[string]string{}
	for i, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			dir := filepath.Join(tmp, string(rune('a'+i)))
			dirs[r.name] = dir
			code, out, errs := attnx(append([]string{"export", "-o", dir, "--greedy"}, r.export...)...)
			if code != 0 {
				t.Fatal(errs)
			}
			if strings.HasPrefix(r.module, "tutorial") {
				if !strings.Contains(out, "  special  sos=0 eos=1 pad=0 unk=unknown\n") {
					t.Errorf("the tutorial's special tokens are not the default:\n%s", out)
				}
				// attnx's reference agrees with the graphs too.
				if code, out, errs := attnx(append([]string{"verify", "--model", dir, "--inputs", in}, r.verify...)...); code != 0 {
					t.Errorf("verify with the reference: exit %d\n%s\n%s", code, out, errs)
				}
			}
			args := append([]string{"verify", "--model", dir, "--inputs", in, "--torch-module", mod(r.module)}, r.verify...)
			code, out, errs = attnx(args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			for _, want := range []string{
				"  PyTorch: your modules from " + mod(r.module) + ", one sentence at a time\n",
				"  step argmax tokens (step-isolated and free-running): identical\n", "  greedy decoding, greedy.onnx: identical\n",
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

// TestVerifyTorchModuleTutorials: --torch-module with the call conventions
// of bentrevett's tutorial and the chatbot tutorial (reference/
// user_toolkit.py), and of OpenNMT-py's and JoeyNMT's models, on models the
// reference saves as each saves them and modules written for these tests
// with those conventions (JoeyNMT's greedy decode under its 2.3 rules). A
// variant with the chatbot's concat halves swapped is caught.
func TestVerifyTorchModuleTutorials(t *testing.T) {
	needTorch(t)
	tmp := t.TempDir()
	in := filepath.Join(tmp, "in.safetensors")
	writeInputs(t, in, [][]int64{{4, 1, 2, 3, 4, 1}, {3, 4}, {2, 2, 1}})
	mod := func(name string) string { return filepath.Join(torchModules, name) }
	for _, c := range []struct{ name, format, config, module string }{
		{"bentrevett", "bentrevett-2020", `{"arch":"bentrevett","cell":"gru","hidden_size":7,"encoder_hidden_size":4,"embedding_size":5,"tgt_embedding_size":6,"num_layers":1,"src_vocab_size":9,"tgt_vocab_size":8,"bidirectional":true}`, "bentrevett.py"},
		{"chatbot general", "chatbot", `{"arch":"chatbot-general","cell":"gru","hidden_size":6,"embedding_size":6,"num_layers":2,"src_vocab_size":9,"tgt_vocab_size":9,"bidirectional":true}`, "chatbot.py"},
		{"chatbot concat, L=1 of Le=2", "chatbot", `{"arch":"chatbot-concat","cell":"gru","hidden_size":6,"embedding_size":6,"num_layers":1,"encoder_layers":2,"src_vocab_size":9,"tgt_vocab_size":9,"bidirectional":true}`, "chatbot.py"},
		{"opennmt-py input feed, bridge", "onmt-v3", `{"arch":"onmt-mlp","cell":"lstm","hidden_size":6,"embedding_size":5,"num_layers":2,"src_vocab_size":9,"tgt_vocab_size":8,"bidirectional":true,"encoder_hidden_size":3,"input_feed":true,"bridge":"relu-linear"}`, "opennmt.py"},
		{"joeynmt 2.3 input feeding, LSTM", "joey", `{"arch":"joey-bahdanau","cell":"lstm","hidden_size":6,"embedding_size":5,"num_layers":2,"encoder_layers":1,"src_vocab_size":9,"tgt_vocab_size":8,"bidirectional":true,"encoder_hidden_size":4,"input_feed":true,"bridge":"bridge"}`, "joeynmt.py"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ckpt := filepath.Join(dir, "model.pt")
			out := ckpt
			if c.format == "joey" {
				out = filepath.Join(dir, "joey")
				ckpt = filepath.Join(out, "best.ckpt")
			}
			fixtures.Reference(t, "make-toolkit", "--config", c.config, "--format", c.format, "--seed", "3", "--out", out)
			model := filepath.Join(dir, "model")
			if code, _, errs := attnx("export", ckpt, "-o", model, "--greedy"); code != 0 {
				t.Fatal(errs)
			}
			code, out, errs := attnx("verify", "--model", model, "--checkpoint", ckpt, "--inputs", in, "--torch-module", mod(c.module))
			if code != 0 || !strings.Contains(out, "\nOK: the ONNX graphs compute what your modules compute\n") {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			if c.module != "chatbot.py" {
				return
			}
			// The same module with the concat layer's halves swapped.
			src, err := os.ReadFile(mod(c.module))
			if err != nil {
				t.Fatal(err)
			}
			wrong := filepath.Join(dir, "chatbot_wrong.py")
			bad := strings.Replace(string(src), "torch.cat((rnn_output.squeeze(0), context), 1)", "torch.cat((context, rnn_output.squeeze(0)), 1)", 1)
			if bad == string(src) {
				t.Fatal("the mistake was not introduced")
			}
			if err := os.WriteFile(wrong, []byte(bad), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, _ = attnx("verify", "--model", model, "--checkpoint", ckpt, "--inputs", in, "--torch-module", wrong)
			if code != 1 || !strings.Contains(out, "\nMISMATCH: the ONNX graphs differ from your modules\n") {
				t.Errorf("the mistaken module: exit %d\n%s", code, out)
			}
		})
	}
}
