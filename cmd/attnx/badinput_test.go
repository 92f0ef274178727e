package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/internal/procstat"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// This file holds the bad-input table: every failure a user can cause on
// export, translate, verify and inspect, each run through the CLI's run
// function, checking the exit status, the key words of the message, that
// nothing looks like a Go panic, and that nothing was left behind.

// badRun runs the CLI in-process with stdin and returns the exit status,
// stdout and stderr.
func badRun(in io.Reader, args ...string) (int, string, string) {
	if in == nil {
		in = strings.NewReader("")
	}
	var out, errb bytes.Buffer
	stdout, stderr, stdin = &out, &errb, in
	defer func() { stdout, stderr, stdin = os.Stdout, os.Stderr, os.Stdin }()
	code := run(args)
	return code, out.String(), errb.String()
}

// badFixture is the checkpoint most rows use: Luong general, H=13, L=1,
// Vs=19, Vt=23.
const badFixture = "../../testdata/fixtures/luong-general_b1_l1/checkpoint.pt"

// badVocab returns n tokens: the four specials, then single letters, so
// that the vocabulary is character-level.
func badVocab(n int) []string {
	v := []string{"<pad>", "<sos>", "<eos>", "<unk>"}
	for c := 'a'; len(v) < n; c++ {
		v = append(v, string(c))
	}
	return v
}

func badWriteJSON(t *testing.T, path string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// badCheckpoint writes the fixture's tensors as safetensors after change
// has modified them.
func badCheckpoint(t *testing.T, path string, change func(map[string]*builder.Tensor)) string {
	t.Helper()
	sd, err := checkpoint.Load(badFixture)
	if err != nil {
		t.Fatal(err)
	}
	change(sd.Tensors)
	if err := checkpoint.WriteSafetensors(path, sd.Tensors, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// toHalf converts every float32 tensor to float16 (bf=false) or bfloat16.
func toHalf(ts map[string]*builder.Tensor, bf bool) {
	for _, tn := range ts {
		if tn.DType != builder.Float {
			continue
		}
		v, _ := tn.Float32s()
		raw := make([]byte, 2*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint16(raw[2*i:], half(x, bf))
		}
		tn.Raw = raw
		tn.DType = builder.Float16
		if bf {
			tn.DType = builder.BFloat16
		}
	}
}

// half rounds x to bfloat16 (truncating) or float16 (normal range, to
// nearest by truncation; the fixture's weights are all well inside it).
func half(x float32, bf bool) uint16 {
	b := math.Float32bits(x)
	if bf {
		return uint16(b >> 16)
	}
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	mant := uint16(b>>13) & 0x3ff
	switch {
	case x == 0:
		return sign
	case exp <= 0:
		return sign // flush tiny values to zero
	case exp >= 31:
		return sign | 0x7bff
	}
	return sign | uint16(exp)<<10 | mant
}

// badModels exports the model directories the table uses, through the CLI.
type badModels struct {
	ids, text, corrupt, disagree, noInfo string
	escaping, truncInfo                  string
}

func badSetup(t *testing.T, tmp string) badModels {
	t.Helper()
	m := badModels{
		ids:      filepath.Join(tmp, "ids-model"),
		text:     filepath.Join(tmp, "text-model"),
		corrupt:  filepath.Join(tmp, "corrupt-model"),
		disagree: filepath.Join(tmp, "disagree-model"),
		noInfo:   filepath.Join(tmp, "no-info-model"),
	}
	src := badWriteJSON(t, filepath.Join(tmp, "src.json"), badVocab(19))
	tgt := badWriteJSON(t, filepath.Join(tmp, "tgt.json"), badVocab(23))
	for _, args := range [][]string{
		{"export", badFixture, "-o", m.ids},
		{"export", badFixture, "-o", m.text, "--src-vocab", src, "--tgt-vocab", tgt},
		{"export", badFixture, "-o", m.corrupt},
		{"export", badFixture, "-o", m.disagree},
		{"export", badFixture, "-o", m.noInfo},
	} {
		if code, _, errs := badRun(nil, args...); code != 0 {
			t.Fatalf("attnx %q: exit %d: %s", args, code, errs)
		}
	}
	// Corrupt: the encoder's bytes cut in half.
	enc := filepath.Join(m.corrupt, "encoder.onnx")
	b, err := os.ReadFile(enc)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(enc, b[:len(b)/2], 0o644)
	// Disagree: attnx.json says H=16, the graphs were built with H=13.
	info := filepath.Join(m.disagree, "attnx.json")
	b, _ = os.ReadFile(info)
	var j map[string]any
	json.Unmarshal(b, &j)
	j["hidden_size"] = 16
	// Without its decoder_states (as attnx.json files written before they
	// were recorded), so that attnx.json agrees with itself and only the
	// graphs disagree.
	delete(j, "decoder_states")
	badWriteJSON(t, info, j)
	os.Remove(filepath.Join(m.noInfo, "attnx.json"))
	// Escaping: attnx.json names a greedy graph outside the directory.
	m.escaping = filepath.Join(tmp, "escaping-model")
	m.truncInfo = filepath.Join(tmp, "truncated-info-model")
	for _, d := range []string{m.escaping, m.truncInfo} {
		if code, _, errs := badRun(nil, "export", badFixture, "-o", d); code != 0 {
			t.Fatalf("export: %s", errs)
		}
	}
	b, _ = os.ReadFile(filepath.Join(m.escaping, "attnx.json"))
	j = map[string]any{}
	json.Unmarshal(b, &j)
	j["files"].(map[string]any)["greedy"] = "../ids-model/encoder.onnx"
	badWriteJSON(t, filepath.Join(m.escaping, "attnx.json"), j)
	b, _ = os.ReadFile(filepath.Join(m.truncInfo, "attnx.json"))
	os.WriteFile(filepath.Join(m.truncInfo, "attnx.json"), b[:len(b)/2], 0o644)
	return m
}

// badCase is one row of the table.
type badCase struct {
	name  string
	args  []string
	stdin string
	code  int
	// want are key words the error must contain, in order; absent are
	// words it must not contain (a Go API's names, say).
	want, absent []string
	// noPath, when set, must not exist after the run (nothing half-made).
	noPath string
}

func TestBadInput(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	tmp := t.TempDir()
	m := badSetup(t, tmp)
	out := filepath.Join(tmp, "out")
	ck := badFixture
	wrongArch := "../../testdata/fixtures/bahdanau_b1_l1/checkpoint.pt"

	nan := badCheckpoint(t, filepath.Join(tmp, "nan.safetensors"), func(ts map[string]*builder.Tensor) {
		binary.LittleEndian.PutUint32(ts["decoder.classifier.weight"].Raw[8:], math.Float32bits(float32(math.NaN())))
	})
	inf := badCheckpoint(t, filepath.Join(tmp, "inf.safetensors"), func(ts map[string]*builder.Tensor) {
		binary.LittleEndian.PutUint32(ts["encoder.lstm.weight_hh_l0"].Raw[4:], math.Float32bits(float32(math.Inf(-1))))
	})
	f16 := badCheckpoint(t, filepath.Join(tmp, "f16.safetensors"), func(ts map[string]*builder.Tensor) { toHalf(ts, false) })
	bf16 := badCheckpoint(t, filepath.Join(tmp, "bf16.safetensors"), func(ts map[string]*builder.Tensor) { toHalf(ts, true) })
	whole, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(tmp, "truncated.pt")
	os.WriteFile(truncated, whole[:len(whole)*2/3], 0o644)
	random := filepath.Join(tmp, "random.pt")
	rnd := make([]byte, 4096)
	for i := range rnd {
		rnd[i] = byte(i*7919 + i*i*31)
	}
	os.WriteFile(random, rnd, 0o644)
	notModel := "../../checkpoint/testdata/linear.pt"
	nonEmpty := filepath.Join(tmp, "nonempty")
	os.MkdirAll(nonEmpty, 0o755)
	os.WriteFile(filepath.Join(nonEmpty, "notes.txt"), []byte("mine"), 0o644)
	corruptOnnx := filepath.Join(tmp, "corrupt.onnx")
	os.WriteFile(corruptOnnx, []byte("\x08\x07\x12\xffnot really protobuf"), 0o644)
	longLine := strings.Repeat("a", translate.MaxLineBytes+1) + "\n"
	missing := filepath.Join(tmp, "no-such-dir")
	missingKey := badCheckpoint(t, filepath.Join(tmp, "missing-key.safetensors"), func(ts map[string]*builder.Tensor) {
		delete(ts, "decoder.classifier.bias")
	})
	wrongShape := badCheckpoint(t, filepath.Join(tmp, "wrong-shape.safetensors"), func(ts map[string]*builder.Tensor) {
		w := ts["decoder.lstm.weight_hh_l0"]
		w.Dims = []int64{w.Dims[0] / 4, w.Dims[1] * 4} // same bytes, transposed-looking shape
	})
	aFile := filepath.Join(tmp, "a-file")
	os.WriteFile(aFile, []byte("x"), 0o644)
	shortVocab := badWriteJSON(t, filepath.Join(tmp, "short-vocab.json"), badVocab(10))
	notJSON := filepath.Join(tmp, "vocab.txt")
	os.WriteFile(notJSON, []byte("a\nb\nc\n"), 0o644)

	cases := []badCase{
		// export
		{name: "export: missing checkpoint", args: []string{"export", filepath.Join(tmp, "none.pt"), "-o", out}, code: 1,
			want: []string{"attnx export:", "reading checkpoint", "none.pt", "no such file"}, noPath: out},
		{name: "export: truncated checkpoint", args: []string{"export", truncated, "-o", out}, code: 1,
			want: []string{"attnx export:", "truncated.pt"}, noPath: out},
		{name: "export: random bytes as checkpoint", args: []string{"export", random, "-o", out}, code: 1,
			want: []string{"attnx export:", "random.pt", "not a PyTorch zip checkpoint or safetensors file"}, noPath: out},
		{name: "export: checkpoint of no attention model", args: []string{"export", notModel, "-o", out}, code: 1,
			want: []string{"attnx export:", "linear.pt"}, noPath: out},
		{name: "export: checkpoint of the wrong architecture", args: []string{"export", ck, "-o", out, "--arch", "bahdanau"}, code: 1,
			want: []string{"--arch bahdanau disagrees with the checkpoint", "luong-general"}, noPath: out},
		{name: "export: NaN weights refused", args: []string{"export", nan, "-o", out}, code: 1,
			want: []string{"decoder.classifier.weight", "non-finite", "NaN", "--allow-nonfinite"}, noPath: out},
		{name: "export: Inf weights refused", args: []string{"export", inf, "-o", out}, code: 1,
			want: []string{"encoder.lstm.weight_hh_l0", "non-finite", "-Inf", "--allow-nonfinite"}, noPath: out},
		{name: "export: NaN weights with --allow-nonfinite", args: []string{"export", nan, "-o", filepath.Join(tmp, "nan-model"), "--allow-nonfinite"}, code: 0},
		{name: "export: float16 checkpoint converted with a note", args: []string{"export", f16, "-o", filepath.Join(tmp, "f16-model")}, code: 0,
			want: []string{"notes", "converted", "from float16 to float32"}},
		{name: "export: bfloat16 checkpoint converted with a note", args: []string{"export", bf16, "-o", filepath.Join(tmp, "bf16-model")}, code: 0,
			want: []string{"notes", "converted", "from bfloat16 to float32"}},
		{name: "export: checkpoint missing a key", args: []string{"export", missingKey, "-o", out}, code: 1,
			want: []string{"missing-key.safetensors", "decoder.classifier.bias"}, noPath: out},
		{name: "export: checkpoint tensor of the wrong shape", args: []string{"export", wrongShape, "-o", out}, code: 1,
			want: []string{"wrong-shape.safetensors", "decoder.lstm.weight_hh_l0"}, noPath: out},
		{name: "export: checkpoint path is a directory", args: []string{"export", tmp, "-o", out}, code: 1,
			want: []string{"attnx export:", tmp, "not a regular file"}, noPath: out},
		{name: "export: -o names a file", args: []string{"export", ck, "-o", aFile}, code: 1,
			want: []string{aFile, "not a directory"}},
		{name: "export: vocabulary of the wrong length", args: []string{"export", ck, "-o", out, "--src-vocab", shortVocab}, code: 1,
			want: []string{"--src-vocab", "has 10 tokens", "19"}, noPath: out},
		{name: "export: vocabulary that is not JSON", args: []string{"export", ck, "-o", out, "--tgt-vocab", notJSON}, code: 1,
			want: []string{"--tgt-vocab", "not a JSON array of strings"}, noPath: out},
		{name: "export: non-empty output dir without --force", args: []string{"export", ck, "-o", nonEmpty}, code: 1,
			want: []string{nonEmpty, "is not empty", "--force"}},
		{name: "export: --force on a dir that is no model", args: []string{"export", ck, "-o", nonEmpty, "--force"}, code: 1,
			want: []string{"has no attnx.json", "--force only replaces attnx model directories"}},
		{name: "export: unknown flag", args: []string{"export", ck, "-o", out, "--bogus"}, code: 2,
			want: []string{"unknown flag: --bogus", "attnx help export"}, noPath: out},
		{name: "export: missing checkpoint argument", args: []string{"export", "-o", out}, code: 2,
			want: []string{"missing CHECKPOINT"}, noPath: out},
		{name: "export: missing -o", args: []string{"export", ck}, code: 2,
			want: []string{"missing -o DIR"}},
		{name: "export: -o without its value", args: []string{"export", ck, "-o"}, code: 2,
			want: []string{"flag needs an argument: 'o' in -o"}},

		// translate
		{name: "translate: missing model dir", args: []string{"translate", "--model", missing, "--ids", "4 5"}, code: 1,
			want: []string{"attnx translate:", missing, "does not exist"}},
		{name: "translate: --model names a file", args: []string{"translate", "--model", aFile, "--ids", "4 5"}, code: 1,
			want: []string{aFile, "is not a directory"}},
		{name: "translate: token id out of range on stdin", args: []string{"translate", "--model", m.ids}, stdin: "4 5\n4 5 23\n", code: 1,
			want: []string{`line 2 ("4 5 23")`, "token id 23 at position 2", "outside the source vocabulary [0, 19)"}},
		{name: "translate: attnx.json names a graph outside the dir", args: []string{"translate", "--model", m.escaping, "--ids", "4 5"}, code: 1,
			want: []string{"attnx.json", `files.greedy = "../ids-model/encoder.onnx"`, "must be a plain file name"}},
		{name: "translate: truncated attnx.json", args: []string{"translate", "--model", m.truncInfo, "--ids", "4 5"}, code: 1,
			want: []string{"attnx.json", "not a valid attnx.json", "unexpected EOF"}},
		{name: "inspect: attnx.json names a graph outside the dir", args: []string{"inspect", m.escaping}, code: 1,
			want: []string{"attnx.json", `files.greedy = "../ids-model/encoder.onnx"`, "must be a plain file name"}},
		{name: "translate: dir without attnx.json", args: []string{"translate", "--model", m.noInfo, "--ids", "4 5"}, code: 1,
			want: []string{"has no attnx.json", "not an attnx model directory"}},
		{name: "translate: corrupt .onnx", args: []string{"translate", "--model", m.corrupt, "--ids", "4 5"}, code: 1,
			want: []string{"encoder model", "encoder.onnx", "cannot be loaded"}},
		{name: "translate: attnx.json disagrees with the graphs", args: []string{"translate", "--model", m.disagree, "--ids", "4 5"}, code: 1,
			want: []string{"attnx translate:", "encoder"}},
		{name: "translate: token id out of vocabulary range", args: []string{"translate", "--model", m.ids, "--ids", "4 19"}, code: 1,
			want: []string{`--ids #1 ("4 19")`, "token id 19 at position 1", "outside the source vocabulary [0, 19)"}},
		{name: "translate: negative token id", args: []string{"translate", "--model", m.ids, "--ids", "-1"}, code: 1,
			want: []string{"token id -1 at position 0", "outside the source vocabulary"}},
		{name: "translate: character not in the vocabulary", args: []string{"translate", "--model", m.text, "abc", "abz"}, code: 1,
			// The hint must name the CLI's flag, not the Go API's option.
			want: []string{`argument 2 ("abz")`, "'z'", "at position 2", "not in the source vocabulary", "--unk"}},
		{name: "translate: text for a model without vocabulary", args: []string{"translate", "--model", m.ids, "abc"}, code: 1,
			// The flags to use, not the Go API's TranslateIDs.
			want: []string{"no source vocabulary", "give token ids with --ids", "--src-vocab"}, absent: []string{"TranslateIDs"}},
		{name: "translate: empty text argument", args: []string{"translate", "--model", m.text, ""}, code: 1,
			want: []string{`argument 1 ("")`, "empty input"}},
		{name: "translate: ids line that is not numbers", args: []string{"translate", "--model", m.ids}, stdin: "4 5\n4 x\n", code: 1,
			want: []string{"line 2", `"x" is not a token id`}},
		{name: "translate: source longer than the line limit", args: []string{"translate", "--model", m.text}, stdin: longLine, code: 1,
			want: []string{"line 1", fmt.Sprintf("longer than %d bytes", translate.MaxLineBytes)}},
		{name: "translate: --device cuda on a machine without CUDA", args: []string{"translate", "--model", m.ids, "--device", "cuda", "--ids", "4 5"}, code: 1,
			want: []string{"cuda", "CUDA"}},
		{name: "translate: unknown device", args: []string{"translate", "--model", m.ids, "--device", "tpu", "--ids", "4"}, code: 2,
			want: []string{`--device "tpu"`, "want cpu, cuda or auto"}},
		{name: "translate: unknown flag", args: []string{"translate", "--model", m.ids, "--bogus"}, code: 2,
			want: []string{"unknown flag: --bogus", "attnx help translate"}},
		{name: "translate: missing --model", args: []string{"translate", "abc"}, code: 2,
			want: []string{"--model DIR is required"}},
		{name: "translate: --batch 0", args: []string{"translate", "--model", m.ids, "--batch", "0"}, code: 2,
			want: []string{"--batch 0", "at least 1"}},

		// inspect
		{name: "inspect: missing path", args: []string{"inspect", missing}, code: 1,
			want: []string{"attnx inspect:", missing, "no such file"}},
		{name: "inspect: corrupt .onnx", args: []string{"inspect", corruptOnnx}, code: 1,
			want: []string{"attnx inspect:", corruptOnnx, "not an ONNX model"}},
		{name: "inspect: truncated graph in a model dir", args: []string{"inspect", m.corrupt}, code: 1,
			want: []string{"attnx inspect:", "encoder.onnx", "not an ONNX model", "truncated"}},
		{name: "inspect: dir without attnx.json", args: []string{"inspect", m.noInfo}, code: 1,
			want: []string{"is not a model directory", "no attnx.json"}},
		{name: "inspect: a checkpoint says what export makes of it", args: []string{"inspect", ck}, code: 0,
			want: []string{"checkpoint.pt: a checkpoint attnx export converts as follows", "arch     luong-general"}},
		{name: "inspect: neither a model nor a checkpoint", args: []string{"inspect", filepath.Join(m.ids, "attnx.json")}, code: 1,
			want: []string{"attnx inspect:", "attnx.json", "not a PyTorch zip checkpoint or safetensors file"}},
		{name: "inspect: missing argument", args: []string{"inspect"}, code: 2,
			want: []string{"want one FILE.onnx, model DIR or CHECKPOINT, got 0 arguments"}},
		{name: "inspect: unknown flag", args: []string{"inspect", "--bogus", m.ids}, code: 2,
			want: []string{"unknown flag: --bogus"}},

		// verify
		{name: "verify: missing model dir", args: []string{"verify", "--model", missing, "--checkpoint", ck}, code: 1,
			want: []string{"attnx verify:", missing}},
		{name: "verify: corrupt .onnx", args: []string{"verify", "--model", m.corrupt, "--checkpoint", ck}, code: 1,
			want: []string{"attnx verify:", "encoder.onnx"}},
		{name: "verify: checkpoint of the wrong architecture", args: []string{"verify", "--model", m.ids, "--checkpoint", wrongArch}, code: 1,
			want: []string{"attnx verify:", "bahdanau", "luong-general"}},
		{name: "verify: truncated checkpoint", args: []string{"verify", "--model", m.ids, "--checkpoint", truncated}, code: 1,
			want: []string{"attnx verify:", "truncated.pt"}},
		{name: "verify: random bytes as checkpoint", args: []string{"verify", "--model", m.ids, "--checkpoint", random}, code: 1,
			want: []string{"attnx verify:", "random.pt"}},
		{name: "verify: attnx.json disagrees with the graphs", args: []string{"verify", "--model", m.disagree, "--checkpoint", ck}, code: 1,
			want: []string{"attnx verify:"}},
		{name: "verify: missing --checkpoint", args: []string{"verify", "--model", m.ids}, code: 2,
			want: []string{"--checkpoint"}},
		{name: "verify: missing --model", args: []string{"verify", "--checkpoint", ck}, code: 2,
			want: []string{"--model"}},
		{name: "verify: unknown flag", args: []string{"verify", "--bogus"}, code: 2,
			want: []string{"unknown flag: --bogus"}},

		// the command line itself
		{name: "unknown command", args: []string{"exprot"}, code: 2, want: []string{`unknown command "exprot"`}},
		{name: "no command", args: nil, code: 2, want: []string{"Commands:"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, errs := badRun(strings.NewReader(c.stdin), c.args...)
			all := stdout + errs
			if code != c.code {
				t.Errorf("attnx %q: exit %d, want %d\nstdout %q\nstderr %q", c.args, code, c.code, stdout, errs)
			}
			if c.code != 0 && strings.TrimSpace(errs) == "" {
				t.Errorf("attnx %q failed with nothing on stderr", c.args)
			}
			rest := all
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Errorf("attnx %q: output lacks %q (in order)\nstdout %q\nstderr %q", c.args, w, stdout, errs)
					break
				}
				rest = rest[i+len(w):]
			}
			for _, a := range c.absent {
				if strings.Contains(all, a) {
					t.Errorf("attnx %q: output has %q\nstderr %q", c.args, a, errs)
				}
			}
			badNoTrace(t, all)
			if c.noPath != "" {
				if _, err := os.Stat(c.noPath); !os.IsNotExist(err) {
					t.Errorf("%s exists after a failed run", c.noPath)
					os.RemoveAll(c.noPath)
				}
			}
			if testing.Verbose() && c.code != 0 {
				t.Logf("exit %d: %s", code, strings.TrimSpace(errs))
			}
		})
	}
	// Nothing a failed export did may be left in tmp: no temporary dirs.
	ents, _ := os.ReadDir(tmp)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") || strings.Contains(e.Name(), ".old-") {
			t.Errorf("temporary %s left in the output's parent", e.Name())
		}
	}
	// The user's file in the refused directory is untouched.
	if b, err := os.ReadFile(filepath.Join(nonEmpty, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("a refused export touched %s: %q, %v", nonEmpty, b, err)
	}
}

// badNoTrace fails when output looks like a Go panic or stack trace.
func badNoTrace(t *testing.T, out string) {
	t.Helper()
	for _, w := range []string{"panic", "goroutine ", "runtime error", "internal error", ".go:"} {
		if strings.Contains(out, w) {
			t.Errorf("output contains %q, a crash rather than a message:\n%s", w, out)
		}
	}
}

// TestBadInputHelperProcess is not a test: TestBadInputMissingORT (and
// TestServeSIGTERMDuringLoad) run the
// test binary again with it selected, to run the CLI in a process of its
// own (ONNX Runtime is loaded once per process).
func TestBadInputHelperProcess(t *testing.T) {
	args := os.Getenv("ATTNX_BADINPUT_ARGS")
	if args == "" {
		t.Skip("helper process for TestBadInputMissingORT")
	}
	var argv []string
	if err := json.Unmarshal([]byte(args), &argv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(99)
	}
	os.Exit(run(argv))
}

// TestBadInputMissingORT runs translate and verify with ATTNX_ORT_LIB
// pointing at nothing, in a subprocess: with --backend ort the message
// names the library path and the variable, and there is no panic; on the
// default (native) backend they do not need the library and succeed.
func TestBadInputMissingORT(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	tmp := t.TempDir()
	model := filepath.Join(tmp, "m")
	if code, _, errs := badRun(nil, "export", badFixture, "-o", model); code != 0 {
		t.Fatalf("export: %s", errs)
	}
	for _, args := range [][]string{
		{"translate", "--model", model, "--ids", "4 5 6"},
		{"verify", "--model", model, "--checkpoint", badFixture},
	} {
		a, _ := json.Marshal(args)
		native := exec.Command(os.Args[0], "-test.run=^TestBadInputHelperProcess$")
		native.Env = append(os.Environ(), "ATTNX_BADINPUT_ARGS="+string(a), "ATTNX_ORT_LIB=/nonexistent/libonnxruntime.so")
		if out, err := native.CombinedOutput(); err != nil {
			t.Errorf("%q on the default backend with a missing ORT library: %v\n%s", args, err, out)
		}
		args = append(args, "--backend", "ort")
		a, _ = json.Marshal(args)
		cmd := exec.Command(os.Args[0], "-test.run=^TestBadInputHelperProcess$")
		cmd.Env = append(os.Environ(), "ATTNX_BADINPUT_ARGS="+string(a), "ATTNX_ORT_LIB=/nonexistent/libonnxruntime.so")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		cmd.Stdout = io.Discard
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if code != 1 {
			t.Errorf("%q with a missing ORT library: exit %d (%v), want 1\n%s", args, code, err, errb.String())
		}
		msg := errb.String()
		for _, w := range []string{"/nonexistent/libonnxruntime.so", "ATTNX_ORT_LIB"} {
			if !strings.Contains(msg, w) {
				t.Errorf("%q: stderr lacks %q:\n%s", args, w, msg)
			}
		}
		badNoTrace(t, msg)
		t.Logf("%s: exit %d: %s", args[0], code, strings.TrimSpace(msg))
	}
}

// badLines is an endless-looking stdin: n lines of token ids, generated as
// they are read, counting how many have been handed out.
type badLines struct {
	n, made int
	read    atomic.Int64
	buf     []byte
}

func (r *badLines) Read(p []byte) (int, error) {
	for len(r.buf) < len(p) && r.made < r.n {
		i := r.made
		r.buf = fmt.Appendf(r.buf, "%d %d %d %d %d\n", 4+i%15, 4+(i/15)%15, 4+(i/225)%15, 4+i%7, 4+i%11)
		r.made++
	}
	if len(r.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	r.read.Store(int64(r.made))
	return n, nil
}

// badLineCounter counts output lines and remembers how many input lines
// had been read when the first output arrived.
type badLineCounter struct {
	lines        atomic.Int64
	in           *badLines
	readAtFirst  int64
	sawFirstLine bool
}

func (w *badLineCounter) Write(p []byte) (int, error) {
	if !w.sawFirstLine && bytes.IndexByte(p, '\n') >= 0 {
		w.sawFirstLine = true
		w.readAtFirst = w.in.read.Load()
	}
	w.lines.Add(int64(bytes.Count(p, []byte{'\n'})))
	return len(p), nil
}

// TestTranslateStdinStreamsWithBoundedMemory pipes 100,000 lines of ids
// through `attnx translate`: every line gets its output line, the first
// outputs are written long before the input is read to its end, and the Go
// heap and the process RSS stay bounded throughout.
func TestTranslateStdinStreamsWithBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 translations")
	}
	testenv.ORT(t, onnxrun.Init())
	tmp := t.TempDir()
	model := filepath.Join(tmp, "m")
	if code, _, errs := badRun(nil, "export", badFixture, "-o", model); code != 0 {
		t.Fatalf("export: %s", errs)
	}
	const lines = 100_000
	in := &badLines{n: lines}
	outw := &badLineCounter{in: in}
	var errb bytes.Buffer
	stdout, stderr, stdin = outw, &errb, in
	defer func() { stdout, stderr, stdin = os.Stdout, os.Stderr, os.Stdin }()

	runtime.GC()
	heap0, rss0 := badHeap(), procstat.RSS()
	var maxHeap, maxRSS uint64
	var samples int
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				maxHeap, maxRSS = max(maxHeap, badHeap()), max(maxRSS, procstat.RSS())
				samples++
			}
		}
	}()
	start := time.Now()
	code := run([]string{"translate", "--model", model, "--max-len", "6", "--batch", "64", "--threads", "1"})
	close(stop)
	wg.Wait()
	elapsed := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if got := outw.lines.Load(); got != lines {
		t.Errorf("%d output lines for %d input lines", got, lines)
	}
	if outw.readAtFirst >= lines/2 {
		t.Errorf("the first output came after %d of %d lines were read: not streaming", outw.readAtFirst, lines)
	}
	const mib = 1 << 20
	t.Logf("%d lines in %v (%.0f lines/s); first output after %d lines read; heap %.1f MiB at start, max %.1f MiB; RSS %.1f MiB at start, max %.1f MiB (%d samples)",
		lines, elapsed.Round(time.Millisecond), lines/elapsed.Seconds(), outw.readAtFirst,
		float64(heap0)/mib, float64(maxHeap)/mib, float64(rss0)/mib, float64(maxRSS)/mib, samples)
	// 100,000 results kept in memory would take well over 30 MiB of heap
	// (ids, tokens, strings, attention); a batch takes a few KiB.
	if maxHeap > heap0+16*mib {
		t.Errorf("Go heap grew from %.1f MiB to %.1f MiB while streaming", float64(heap0)/mib, float64(maxHeap)/mib)
	}
	if rss0 > 0 && maxRSS > rss0+128*mib {
		t.Errorf("RSS grew from %.1f MiB to %.1f MiB while streaming", float64(rss0)/mib, float64(maxRSS)/mib)
	}
}

// badHeap is the live Go heap (HeapAlloc, without forcing a GC).
func badHeap() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestDecodingRangesRefused: settings that passed validation and broke
// the output (issue 36) are refused naming the flag and the range: a
// length penalty of 400 under Wu's form printed "score NaN" (and --json
// failed), a temperature of 1e-40 under fairseq's rules gave an empty
// translation and exit 0, and min_len at or above the output limit gave
// empty text.
func TestDecodingRangesRefused(t *testing.T) {
	model := translateTestModel(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rules", "opennmt", "--beam", "4", "--length-penalty", "400", "--length-penalty-form", "wu"}, "--length-penalty 400: want a finite value from 0 to 10"},
		{[]string{"--rules", "fairseq", "--temperature", "1e-40"}, "--temperature 1e-40: want 0 (none) or a value from 0.001 to 1000"},
	} {
		args := append([]string{"translate", "--model", model}, c.args...)
		code, out, stderr := attnx(append(args, "abc")...)
		if code != 2 || !strings.Contains(stderr, c.want) || out != "" {
			t.Errorf("attnx %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(args, " "), code, out, stderr, c.want)
		}
	}
	// fairseq's rules, min_len above the limit of a one-token source.
	dir := filepath.Join(t.TempDir(), "fs")
	if code, _, stderr := attnx("export", filepath.Join("..", "..", "testdata", "toolkits", "fairseq-long", "checkpoint_best.pt"), "-o", dir); code != 0 {
		t.Fatalf("export: %s", stderr)
	}
	code, out, stderr := attnx("translate", "--model", dir, "--min-len", "300", "Hello")
	if code != 1 || out != "" || !strings.Contains(stderr, "min_len 300 is at or above this input's output limit of") {
		t.Errorf("--min-len 300 under fairseq's rules: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
