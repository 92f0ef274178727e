package modeldir

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/quant"
)

// validInfoJSON is an attnx.json as modeldir writes it for a small
// character-level model with vocabularies and greedy.onnx.
const validInfoJSON = `{
  "format": "attnx-model",
  "format_version": 1,
  "arch": "luong-general",
  "hidden_size": 8,
  "num_layers": 2,
  "src_vocab_size": 5,
  "tgt_vocab_size": 4,
  "opset": 17,
  "special_tokens": {"sos": 1, "eos": 2, "pad": 0, "unk": 3},
  "src_vocab": ["<pad>", "<sos>", "<eos>", "<unk>", "a"],
  "tgt_vocab": ["<pad>", "<sos>", "<eos>", "b"],
  "files": {"encoder": "encoder.onnx", "decoder": "decoder.onnx", "greedy": "greedy.onnx"},
  "producer": "attnx",
  "source": "model.pt"
}
`

// FuzzInfo feeds arbitrary bytes to ParseInfo: it must never
// panic; an error names the file; an accepted Info validates again,
// survives a marshal/parse round trip unchanged, and names only plain files
// inside the model directory, for every role.
func FuzzInfo(f *testing.F) {
	f.Add([]byte(validInfoJSON))
	f.Add([]byte(`{"format":"attnx-model","format_version":1,"arch":"bahdanau","hidden_size":1,"num_layers":1,"src_vocab_size":1,"tgt_vocab_size":3,"opset":17,"special_tokens":{"sos":1,"eos":2,"pad":0,"unk":-1},"files":{"encoder":"e.onnx","decoder":"d.onnx"},"producer":"attnx"}`))
	f.Add([]byte(strings.Replace(validInfoJSON, `"greedy.onnx"`, `"../greedy.onnx"`, 1)))
	f.Add([]byte(strings.Replace(validInfoJSON, `"unk": 3`, `"unk": -7`, 1)))
	f.Add([]byte(strings.Replace(validInfoJSON, `"hidden_size": 8`, `"hidden_size": 1e400`, 1)))
	f.Add([]byte(`{"format":"attnx-model"} trailing`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[]`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseInfo(data, "fuzz.json")
		if err != nil {
			if m != nil {
				t.Fatal("ParseInfo returned an Info with an error")
			}
			if !strings.HasPrefix(err.Error(), "fuzz.json: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted, but does not validate again: %v", err)
		}
		checkInfoInvariants(t, m)
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("accepted, but does not marshal: %v", err)
		}
		back, err := ParseInfo(out, "again.json")
		if err != nil {
			t.Fatalf("accepted, but its own marshalling is refused: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(m, back) {
			t.Fatalf("changed in a marshal/parse round trip:\n%+v\n%+v", m, back)
		}
	})
}

// checkInfoInvariants asserts what users of a valid Info rely on
// without checking it again.
func checkInfoInvariants(t *testing.T, m *Info) {
	t.Helper()
	for role, f := range m.Files {
		if f == "" || f == "." || f == ".." || strings.ContainsAny(f, `/\`) || strings.ContainsRune(f, 0) {
			t.Fatalf("files.%s = %q accepted: not a plain file name inside the model directory", role, f)
		}
	}
	if m.Special.UNK < -1 {
		t.Fatalf("special token unk = %d accepted (want an id or -1 for unknown)", m.Special.UNK)
	}
	for _, id := range []int64{m.Special.SOS, m.Special.EOS, m.Special.PAD} {
		if id < 0 || id >= int64(m.TgtVocab) {
			t.Fatalf("special token %d accepted outside [0, %d)", id, m.TgtVocab)
		}
	}
	if m.Hidden < 1 || m.Layers < 1 || m.SrcVocab < 1 || m.TgtVocab < 1 {
		t.Fatalf("config %+v accepted", m.Config)
	}
}

// TestParseInfoRefusesUnsafeFields holds the inputs FuzzInfo
// found (or would find) that ParseInfo once accepted: file names for
// any role that leave the model directory, and an unk id below -1.
func TestParseInfoRefusesUnsafeFields(t *testing.T) {
	cases := []struct{ from, to, want string }{
		{`"greedy.onnx"`, `"../greedy.onnx"`, `files.greedy = "../greedy.onnx": must be a plain file name`},
		{`"greedy.onnx"`, `"/tmp/greedy.onnx"`, `files.greedy = "/tmp/greedy.onnx": must be a plain file name`},
		{`"greedy.onnx"`, `".."`, `files.greedy = "..": must be a plain file name`},
		{`"greedy.onnx"`, `""`, `files.greedy = "": must be a plain file name`},
		{`"decoder.onnx"`, `"a\u0000b"`, `files.decoder = "a\x00b": must be a plain file name`},
		{`"unk": 3`, `"unk": -2`, "special token unk = -2: outside the source vocabulary [0, 5) (or -1 for none)"},
		{`"format_version": 1`, `"format_version": 1, "format_version": 2`, "format_version 2"},
		{`"hidden_size": 8`, `"hidden_size": 8.5`, "cannot unmarshal number 8.5"},
		{`"source": "model.pt"
}`, `"source": "model.pt"
}
{"format": "attnx-model"}`, "unexpected data after the JSON object"},
		{`"source": "model.pt"
}`, `"source": "model.pt"
} x`, "unexpected data after the JSON object"},
	}
	for _, c := range cases {
		if !strings.Contains(validInfoJSON, c.from) {
			t.Fatalf("%s not in the valid JSON", c.from)
		}
		data := strings.Replace(validInfoJSON, c.from, c.to, 1)
		_, err := ParseInfo([]byte(data), "attnx.json")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "attnx.json: ") {
			t.Errorf("%s -> %s: error %v, want %q", c.from, c.to, err, c.want)
		}
	}
	if _, err := ParseInfo([]byte(validInfoJSON), "attnx.json"); err != nil {
		t.Errorf("the valid JSON: %v", err)
	}
}

// TestParseInfoWeights: attnx.json records the weights' precision; files
// written before it was recorded read as fp32, and an unknown precision is
// refused.
func TestParseInfoWeights(t *testing.T) {
	for _, c := range []struct {
		to   string
		want quant.Precision
		err  string
	}{
		{`"opset": 17,`, quant.PrecisionFP32, ""},
		{`"opset": 17, "weights": "fp32",`, quant.PrecisionFP32, ""},
		{`"opset": 17, "weights": "int8",`, quant.PrecisionInt8, ""},
		{`"opset": 17, "weights": "int4",`, quant.PrecisionInt4, ""},
		{`"opset": 17, "weights": "fp16",`, "", `attnx.json: weights: unknown weights precision "fp16"`},
	} {
		m, err := ParseInfo([]byte(strings.Replace(validInfoJSON, `"opset": 17,`, c.to, 1)), "attnx.json")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.to, err, c.err)
			}
			continue
		}
		if err != nil || m.Weights != c.want {
			t.Errorf("%s: weights %q, %v; want %q", c.to, m.Weights, err, c.want)
			continue
		}
		out, _ := json.Marshal(m)
		if !strings.Contains(string(out), `"weights":"`+string(c.want)+`"`) {
			t.Errorf("%s: written back as %s", c.to, out)
		}
	}
}

// TestParseInfoCellsAndSizes: attnx.json records the cell, the embedding
// size and, for tutorial-location, max_length; files written before they
// existed read as LSTM with E = H.
func TestParseInfoCellsAndSizes(t *testing.T) {
	cases := []struct {
		name, from, to string
		want           attention.Config
		err            string
	}{
		{"before cells", "", "", attention.Config{Arch: attention.LuongGeneral, Cell: attention.LSTM, Hidden: 8, Embedding: 8, Layers: 2, SrcVocab: 5, TgtVocab: 4}, ""},
		{"gru with E", `"hidden_size": 8,`, `"hidden_size": 8, "cell": "gru", "embedding_size": 6,`,
			attention.Config{Arch: attention.LuongGeneral, Cell: attention.GRU, Hidden: 8, Embedding: 6, Layers: 2, SrcVocab: 5, TgtVocab: 4}, ""},
		{"tutorial-location", `"arch": "luong-general",`, `"arch": "tutorial-location", "cell": "gru", "max_length": 10,`,
			attention.Config{Arch: attention.TutorialLocation, Cell: attention.GRU, Hidden: 8, Embedding: 8, Layers: 2, SrcVocab: 5, TgtVocab: 4, MaxLength: 10}, ""},
		{"unknown cell", `"hidden_size": 8,`, `"hidden_size": 8, "cell": "rnn",`, attention.Config{}, `unknown cell "rnn"`},
		{"no max_length", `"arch": "luong-general",`, `"arch": "tutorial-location",`, attention.Config{}, "max_length 0: a tutorial-location model needs"},
		{"stray max_length", `"hidden_size": 8,`, `"hidden_size": 8, "max_length": 3,`, attention.Config{}, "max_length 3: only tutorial-location models have one"},
	}
	for _, c := range cases {
		data := strings.Replace(validInfoJSON, c.from, c.to, 1)
		m, err := ParseInfo([]byte(data), "attnx.json")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if m.Config != c.want {
			t.Errorf("%s: config %+v, want %+v", c.name, m.Config, c.want)
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, field := range []string{`"cell":"` + string(c.want.Cell) + `"`, fmt.Sprintf(`"embedding_size":%d`, c.want.Embedding)} {
			if !strings.Contains(string(out), field) {
				t.Errorf("%s: written back without %s: %s", c.name, field, out)
			}
		}
		if has := strings.Contains(string(out), `"max_length"`); has != (c.want.MaxLength > 0) {
			t.Errorf("%s: max_length written = %v: %s", c.name, has, out)
		}
	}
}

// FuzzReadVocab feeds arbitrary bytes to the reader of --src-vocab and
// --tgt-vocab files (a JSON array of tokens).
func FuzzReadVocab(f *testing.F) {
	f.Add([]byte(`["<pad>", "<sos>", "<eos>", "a"]`), uint8(4))
	f.Add([]byte(`["a", null, 3]`), uint8(3))
	f.Add([]byte(`{"itos": ["a"]}`), uint8(1))
	f.Add([]byte(`["\ud800"]`), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, want uint8) {
		path := filepath.Join(t.TempDir(), "vocab.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		toks, err := ReadVocab(path, "--src-vocab", "source", int(want))
		if err == nil && len(toks) != int(want) {
			t.Fatalf("%d tokens read, want %d or an error", len(toks), want)
		}
	})
}

// TestDefaultsCheck: each bad decoding default is refused by its own
// attnx.json name, without naming the others beside it.
func TestDefaultsCheck(t *testing.T) {
	cases := []struct {
		name  string
		d     Defaults
		want  string
		other string // a field the message must not name
	}{
		{"beam", Defaults{Beam: -1}, "beam -1: want 1 (greedy) or more", "n_best"},
		{"no_repeat_ngram", Defaults{NoRepeatNgram: -2, RepetitionPenalty: 1.5}, "no_repeat_ngram -2: must not be negative", "repetition_penalty"},
		{"repetition_penalty", Defaults{NoRepeatNgram: 3, RepetitionPenalty: -1}, "repetition_penalty -1: want a finite value >= 0", "no_repeat_ngram"},
		{"repetition_penalty NaN", Defaults{RepetitionPenalty: math.NaN()}, "repetition_penalty NaN", "no_repeat_ngram"},
		{"min_len", Defaults{MinLen: -1}, "min_len -1: must not be negative", "max_len"},
		{"max_len", Defaults{MaxLen: -4, MaxLenFactor: 1.5}, "max_len -4: must not be negative", "max_len_factor"},
		{"max_len_factor", Defaults{MaxLen: 100, MaxLenFactor: -1}, "max_len_factor -1: want a finite value >= 0", "max_len "},
		{"max_len_factor Inf", Defaults{MaxLenFactor: math.Inf(1)}, "max_len_factor +Inf", "max_len "},
		{"max_len_add alone", Defaults{MaxLenAdd: 5}, "max_len_add 5: want a value >= 0, with max_len_factor", "max_len "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.d.check()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("check() = %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), c.other) {
				t.Errorf("check() = %q names %q too", err, c.other)
			}
		})
	}
	ok := Defaults{Beam: 5, NBest: 2, NoRepeatNgram: 3, RepetitionPenalty: 1.2, MaxLen: 100, MaxLenFactor: 1.5, MaxLenAdd: 5}
	if err := ok.check(); err != nil {
		t.Errorf("valid defaults: %v", err)
	}
}
