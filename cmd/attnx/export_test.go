package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const fixtureRoot = "../../testdata/fixtures"

func fixtureCkpt(name string) string { return filepath.Join(fixtureRoot, name, "checkpoint.pt") }

func TestExportCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	// Flags after the positional argument, as in the usage line.
	code, out, errs := attnx("export", fixtureCkpt("bahdanau_b1_l1"), "-o", dir, "--greedy", "--arch", "bahdanau")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"wrote " + dir + " from checkpoint.pt\n",
		"  arch     bahdanau\n",
		"  cell     lstm\n",
		"  sizes    H=13 E=13 L=1 Vs=19 Vt=23\n",
		"  special  sos=1 eos=2 pad=0 unk=3\n",
		"  notes  ignoring decoder.attn_combine.bias: the article defines it but never uses it\n",
		"    encoder.onnx ", "    decoder.onnx ", "    greedy.onnx ", " nodes\n", "    attnx.json ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if errs != "" {
		t.Errorf("stderr not empty when it is not a terminal: %q", errs)
	}
	// Again without --force: refused; with it: replaced.
	code, _, errs = attnx("export", fixtureCkpt("bahdanau_b1_l1"), "-o", dir)
	if code != 1 || errs != "attnx export: "+dir+" is not empty; pass --force to replace it\n" {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	code, out, errs = attnx("export", "--force", fixtureCkpt("luong-dot_b1_l1"), "-o", dir)
	if code != 0 || !strings.HasPrefix(out, "replaced "+dir) || !strings.Contains(out, "arch     luong-dot") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestExportCommandErrors(t *testing.T) {
	tmp := t.TempDir()
	corrupt := filepath.Join(tmp, "corrupt.pt")
	os.WriteFile(corrupt, []byte("garbage, not a checkpoint"), 0o644)
	out := filepath.Join(tmp, "out")
	ck := fixtureCkpt("luong-general_b1_l1")
	enc, dec := layoutFixture("s2s_encoder.pt"), layoutFixture("s2s_decoder.pt")
	flat := layoutFixture("s2s_flat.pt")
	cases := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"export", filepath.Join(tmp, "none.pt"), "-o", out}, 1,
			"attnx export: reading checkpoint: open " + filepath.Join(tmp, "none.pt") + ": no such file or directory\n"},
		{[]string{"export", corrupt, "-o", out}, 1,
			"attnx export: reading checkpoint: " + corrupt + ": not a PyTorch zip checkpoint or safetensors file (nor torch.save's legacy format)\n"},
		{[]string{"export", ck, "-o", out, "--arch", "bahdanau"}, 1,
			"attnx export: " + ck + ": --arch bahdanau disagrees with the checkpoint: its keys (decoder.attention.fc.weight, no decoder.attention.weight) are those of a luong-general model\n"},
		{[]string{"export", ck, "-o", out, "--arch", "transformer"}, 2,
			"attnx export: --arch: unknown architecture \"transformer\" (want one of bahdanau, luong-dot, luong-general, luong-concat, tutorial-location, tutorial-bahdanau, onmt-dot, onmt-general, onmt-mlp, joey-bahdanau, joey-luong, bentrevett, chatbot-dot, chatbot-general, chatbot-concat, fairseq-lstm, fairseq-lstm-noattn)\nRun 'attnx help export' for usage.\n"},
		{[]string{"export", ck}, 2, "attnx export: missing -o DIR (the model directory to write)\n"},
		{[]string{"export", "-o", out}, 2, "attnx export: missing CHECKPOINT (a .pt or .safetensors state_dict), or --encoder ENC --decoder DEC\n"},
		{[]string{"export", ck, ck, "-o", out}, 2, "attnx export: one CHECKPOINT expected, got 2 arguments"},
		{[]string{"export", ck, "-o", out, "--sos", "x"}, 2, "attnx export: invalid argument \"x\" for \"--sos\" flag: not an integer\n"},
		{[]string{"export", ck, "-o", out, "--eos", "99"}, 1, "attnx export: special token eos = 99: outside the target vocabulary [0, 23)\n"},
		// Two files, maps, and what the checkpoint reader refuses.
		{[]string{"export", flat, "--encoder", enc, "--decoder", dec, "-o", out}, 2,
			"attnx export: give either CHECKPOINT (" + flat + ") or --encoder and --decoder, not both\n"},
		{[]string{"export", "--encoder", enc, "-o", out}, 2, "attnx export: --encoder needs --decoder (the decoder's checkpoint)\n"},
		{[]string{"export", "--decoder", dec, "-o", out}, 2, "attnx export: --decoder needs --encoder (the encoder's checkpoint)\n"},
		{[]string{"export", flat, "-o", out, "--map", "attention.W1"}, 2,
			`attnx export: invalid argument "attention.W1" for "--map" flag: "attention.W1" has no '=': want FROM=TO, e.g. attention.W1=attention.Wa` + "\n"},
		{[]string{"export", flat, "-o", out, "--map", "a.b=a.b"}, 2,
			`attnx export: invalid argument "a.b=a.b" for "--map" flag: "a.b=a.b" renames a prefix to itself` + "\n"},
		{[]string{"export", flat, "-o", out, "--map", "decoder.attention=decoder.attn"}, 1,
			`attnx export: reading checkpoint: ` + flat + `: map decoder.attention=decoder.attn: no key starts with "decoder.attention" (keys: decoder.attn_combine.bias,`},
		{[]string{"export", "--encoder", flat, "--decoder", dec, "-o", out}, 1,
			"attnx export: reading checkpoint: " + flat + ": has decoder.* keys: it holds a whole model (or the decoder), not the encoder alone; pass it as the one checkpoint\n"},
		{[]string{"export", layoutFixture("evil_eval.pt"), "-o", out}, 1,
			"attnx export: reading checkpoint: " + layoutFixture("evil_eval.pt") + ": pytorch: evil_eval/data.pkl: the pickle would run code in Python: it names __builtin__.eval (builtins.eval)"},
	}
	for _, c := range cases {
		code, _, errs := attnx(c.args...)
		if code != c.code || !strings.HasPrefix(errs, c.err) {
			t.Errorf("attnx %q: exit %d, stderr %q\nwant exit %d, %q", c.args, code, errs, c.code, c.err)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed export left %s: %v", out, err)
	}
	if es, _ := os.ReadDir(tmp); len(es) != 1 {
		t.Errorf("temp dir holds %d entries, want only corrupt.pt", len(es))
	}
}

func TestHelpHasExamples(t *testing.T) {
	for _, name := range []string{"export", "inspect", "verify"} {
		code, out, _ := attnx("help", name)
		if code != 0 || !strings.Contains(out, "Usage: attnx "+name) || !strings.Contains(out, "Example:\n  attnx ") || !strings.Contains(out, "\n  attnx "+name+" ") {
			t.Errorf("help %s (exit %d):\n%s", name, code, out)
		}
	}
	_, out, _ := attnx("help")
	for _, want := range []string{"  export ", "  inspect ", "  verify "} {
		if !strings.Contains(out, want) {
			t.Errorf("command list lacks %q:\n%s", want, out)
		}
	}
}

func TestInspectCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	if code, _, errs := attnx("export", fixtureCkpt("luong-concat_b4_l2"), "-o", dir); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := attnx("inspect", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		dir + ": attnx model (format attnx-model v1, producer attnx, from checkpoint.pt)",
		"  arch     luong-concat\n",
		"  files    encoder=encoder.onnx decoder=decoder.onnx\n",
		"encoder: " + filepath.Join(dir, "encoder.onnx"),
		"  ir_version 8, opset ai.onnx 17\n",
		"    source_ids      int64 [batch,src_len]\n",
		"    log_probs    float32 [batch,23]\n",
		"    attention    float32 [batch,src_len]\n",
		" LSTM 2",
		"attnx.arch=luong-concat",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = attnx("inspect", "--json", filepath.Join(dir, "decoder.onnx"))
	var s struct {
		IRVersion  int64 `json:"ir_version"`
		Nodes      int
		Parameters int64
		Inputs     []struct{ Name, Type, Shape string }
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != 0 {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if s.IRVersion != 8 || s.Nodes < 10 || s.Parameters == 0 || len(s.Inputs) != 5 || s.Inputs[3].Shape != "[batch,src_len,13]" {
		t.Errorf("summary %+v", s)
	}
	code, out, _ = attnx("inspect", "--json", dir)
	var d struct {
		Model  struct{ Arch string }
		Graphs []struct{ Role string }
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || code != 0 || d.Model.Arch != "luong-concat" || len(d.Graphs) != 2 || d.Graphs[1].Role != "decoder" {
		t.Errorf("exit %d, %v, %+v", code, err, d)
	}
}

func TestInspectErrors(t *testing.T) {
	tmp := t.TempDir()
	bad := filepath.Join(tmp, "bad.onnx")
	os.WriteFile(bad, []byte("\xff\xff\xff\xff not protobuf"), 0o644)
	code, _, errs := attnx("inspect", bad)
	if code != 1 || !strings.HasPrefix(errs, "attnx inspect: "+bad+": ") {
		t.Errorf("corrupt: exit %d, %q", code, errs)
	}
	code, _, errs = attnx("inspect", tmp)
	if code != 1 || errs != "attnx inspect: "+tmp+" is not a model directory: it has no attnx.json (attnx export writes one)\n" {
		t.Errorf("plain dir: exit %d, %q", code, errs)
	}
	code, _, errs = attnx("inspect")
	if code != 2 || !strings.HasPrefix(errs, "attnx inspect: want one FILE.onnx, model DIR or CHECKPOINT, got 0 arguments") {
		t.Errorf("no args: exit %d, %q", code, errs)
	}
}

// TestExportBinaryDeterministic runs the built CLI twice, in separate
// processes, and compares the model directories byte for byte.
func TestExportBinaryDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "attnx")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var dirs []string
	for i := 0; i < 2; i++ {
		d := filepath.Join(tmp, "m"+string(rune('0'+i)))
		if out, err := exec.Command(bin, "export", fixtureCkpt("bahdanau_b4_l2"), "-o", d, "--greedy").CombinedOutput(); err != nil {
			t.Fatalf("export: %v\n%s", err, out)
		}
		dirs = append(dirs, d)
	}
	for _, f := range []string{"encoder.onnx", "decoder.onnx", "greedy.onnx", "attnx.json"} {
		a, err1 := os.ReadFile(filepath.Join(dirs[0], f))
		b, err2 := os.ReadFile(filepath.Join(dirs[1], f))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs (%v, %v)", f, err1, err2)
		}
	}
}
