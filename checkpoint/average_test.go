package checkpoint

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
)

// averageFixtures are testdata/toolkits/make_average.sh's: checkpoints of
// one training run each, and the file the toolkit's own script averaged
// them into (averaged.inputs: the files in the order the script took them).
var averageFixtures = []string{"onmt-avg", "onmt-avg-shared", "fairseq-avg"}

func averageInputs(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "averaged.inputs"))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, name := range strings.Fields(string(data)) {
		paths = append(paths, filepath.Join(dir, name))
	}
	if len(paths) < 2 {
		t.Fatalf("%s/averaged.inputs names %d checkpoints, want several", dir, len(paths))
	}
	return paths
}

// TestAverageToolkitFiles: Average of the checkpoints OpenNMT-py's
// onmt_train and fairseq-train wrote equals, tensor by tensor and bit for
// bit, the file OpenNMT-py's average_models.py and fairseq's
// average_checkpoints.py wrote from them, with the same other entries
// (the first file's opt, vocab and cfg; OpenNMT-py's optim None); and it
// is no input's weights.
func TestAverageToolkitFiles(t *testing.T) {
	for _, name := range averageFixtures {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "toolkits", name)
			inputs := averageInputs(t, dir)
			got, err := Average(inputs)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Load(filepath.Join(dir, "averaged.pt"))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Keys, want.Keys) {
				t.Fatalf("keys %v, the toolkit's file has %v", got.Keys, want.Keys)
			}
			same := 0
			for _, k := range want.Keys {
				g, w := got.Tensors[k], want.Tensors[k]
				switch {
				case g.DType != w.DType || !reflect.DeepEqual(g.Dims, w.Dims):
					t.Errorf("%s: %s %v, the toolkit wrote %s %v", k, g.DType, g.Dims, w.DType, w.Dims)
				case !bytes.Equal(g.Raw, w.Raw):
					t.Errorf("%s: %d of %d elements differ from the toolkit's", k, differing(g, w), g.NumElements())
				default:
					same++
				}
			}
			t.Logf("%s: %d/%d tensors bit-identical to the toolkit's averaged file", name, same, len(want.Keys))
			if !reflect.DeepEqual(got.Origin.Entries, want.Origin.Entries) {
				for k := range want.Origin.Entries {
					if !reflect.DeepEqual(got.Origin.Entries[k], want.Origin.Entries[k]) {
						t.Errorf("entry %q differs from the toolkit's averaged file's", k)
					}
				}
			}
			for _, in := range inputs {
				sd, err := Load(in)
				if err != nil {
					t.Fatal(err)
				}
				moved := false
				for _, k := range sd.Keys {
					moved = moved || !bytes.Equal(sd.Tensors[k].Raw, got.Tensors[k].Raw)
				}
				if !moved {
					t.Errorf("the average equals %s", in)
				}
			}
		})
	}
}

func differing(a, b *builder.Tensor) int {
	n, size := 0, a.DType.Size()
	for i := 0; i+size <= len(a.Raw) && i+size <= len(b.Raw); i += size {
		if !bytes.Equal(a.Raw[i:i+size], b.Raw[i:i+size]) {
			n++
		}
	}
	return n
}

// TestAverageRefusals: checkpoints that are not of one toolkit's one
// model are refused, naming the file and what differs.
func TestAverageRefusals(t *testing.T) {
	tk := filepath.Join("..", "testdata", "toolkits")
	onmt := filepath.Join(tk, "onmt-avg", "model_step_200.pt")
	onmt2 := filepath.Join(tk, "onmt-avg", "model_step_400.pt")
	shared := filepath.Join(tk, "onmt-avg-shared", "model_step_400.pt")
	fairseq := averageInputs(t, filepath.Join(tk, "fairseq-avg"))[0]
	for _, c := range []struct {
		name  string
		paths []string
		want  []string
	}{
		{"two toolkits", []string{onmt, fairseq}, []string{fairseq, "is a fairseq checkpoint but", "OpenNMT-py's"}},
		{"other sizes", []string{onmt, onmt2, shared}, []string{"tensor \"encoder.embeddings.make_embedding.emb_luts.0.weight\" is [", "in " + shared, "must be of one model"}},
		{"other fairseq model", []string{fairseq, filepath.Join(tk, "fairseq-lstm", "checkpoint_best.pt")}, []string{"fairseq-lstm", "must be of one model"}},
		{"no toolkit", []string{filepath.Join("testdata", "s2s_flat.pt"), onmt}, []string{"s2s_flat.pt: not a toolkit's training checkpoint", "average_models.py"}},
		{"none", nil, []string{"no checkpoints given"}},
		{"missing file", []string{onmt, filepath.Join(tk, "onmt-avg", "model_step_999.pt")}, []string{"model_step_999.pt"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Average(c.paths)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestAverageVocabDiffers: OpenNMT-py checkpoints of one shape whose
// vocabularies differ are refused, naming the entry.
func TestAverageVocabDiffers(t *testing.T) {
	p := filepath.Join("..", "testdata", "toolkits", "onmt-avg", "model_step_200.pt")
	a, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	vocab, ok := b.Origin.Entries["vocab"].(map[string]any)
	if !ok {
		t.Fatalf("vocab is %T", b.Origin.Entries["vocab"])
	}
	tgt, ok := vocab["tgt"].([]any)
	if !ok || len(tgt) < 10 {
		t.Fatalf("vocab[\"tgt\"] is %T", vocab["tgt"])
	}
	tgt[7] = "▁Zwischenablage"
	err = sameModel(a, b, "a.pt", "b.pt")
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{`vocab["tgt"][7]`, `"▁Zwischenablage" in b.pt`, "a.pt", "share their vocabulary"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

func filesOf(sds []*StateDict) files {
	return files{n: len(sds), get: func(i int) (*StateDict, error) { return sds[i], nil }}
}

func f32Tensor(key string, v ...float32) *builder.Tensor {
	t := &builder.Tensor{Name: key, DType: builder.Float, Dims: []int64{int64(len(v))}, Raw: make([]byte, 4*len(v))}
	for i, x := range v {
		binary.LittleEndian.PutUint32(t.Raw[4*i:], math.Float32bits(x))
	}
	return t
}

func floats32(t *builder.Tensor) []float32 {
	out := make([]float32, len(t.Raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Raw[4*i:]))
	}
	return out
}

// TestAverageOpenNMTArithmetic: average_models.py's running mean, rounded
// at each operation, with a tensor saved under two names (tied) updated
// twice per file and an untied one once; and fairseq's sum then division,
// float16 summed as float32, integers floor-divided.
func TestAverageOpenNMTArithmetic(t *testing.T) {
	vals := [][]float32{{0.1, -3, 1e-7}, {0.7, 2.5, 3e-7}, {0.3, 1, -1e-7}}
	var sds []*StateDict
	for _, v := range vals {
		sds = append(sds, &StateDict{Keys: []string{"a", "tied1", "tied2"},
			Tensors: map[string]*builder.Tensor{"a": f32Tensor("a", v...), "tied1": f32Tensor("tied1", v...), "tied2": f32Tensor("tied2", v...)},
			Views:   map[string]View{"a": {"0", 0, "[3]", "[1]"}, "tied1": {"1", 0, "[3]", "[1]"}, "tied2": {"1", 0, "[3]", "[1]"}},
			Origin:  &Origin{Toolkit: ToolkitOpenNMT}})
	}
	out := &StateDict{Tensors: map[string]*builder.Tensor{}}
	if err := averageOpenNMT(filesOf(sds), out); err != nil {
		t.Fatal(err)
	}
	step := func(x, p float32, i int) float32 {
		m := float32(x * float32(i))
		s := float32(m + p)
		return float32(s / float32(i+1))
	}
	for j := range vals[0] {
		once, twice := vals[0][j], vals[0][j]
		for i := 1; i < len(vals); i++ {
			once = step(once, vals[i][j], i)
			twice = step(step(twice, vals[i][j], i), vals[i][j], i)
		}
		if g := floats32(out.Tensors["a"])[j]; math.Float32bits(g) != math.Float32bits(once) {
			t.Errorf("a[%d] = %v, want the running mean %v", j, g, once)
		}
		for _, k := range []string{"tied1", "tied2"} {
			if g := floats32(out.Tensors[k])[j]; math.Float32bits(g) != math.Float32bits(twice) {
				t.Errorf("%s[%d] = %v, want %v (updated once per name)", k, j, g, twice)
			}
		}
	}
	if floats32(out.Tensors["a"])[0] == floats32(out.Tensors["tied1"])[0] {
		t.Errorf("the tied tensor got the untied one's value %v", floats32(out.Tensors["a"])[0])
	}

	// fairseq: sum in order, then divide; float16 in float32; integers.
	half := &builder.Tensor{DType: builder.Float16, Dims: []int64{2}, Raw: []byte{0x00, 0x3c, 0x00, 0xc0}} // 1, -2
	ints := func(v ...int64) *builder.Tensor {
		t := &builder.Tensor{DType: builder.Int64, Dims: []int64{int64(len(v))}, Raw: make([]byte, 8*len(v))}
		for i, x := range v {
			binary.LittleEndian.PutUint64(t.Raw[8*i:], uint64(x))
		}
		return t
	}
	var fs []*StateDict
	for i, v := range vals {
		fs = append(fs, &StateDict{Keys: []string{"w", "h", "n"},
			Tensors: map[string]*builder.Tensor{"w": f32Tensor("w", v...), "h": half, "n": ints(int64(i*i)-5, 7)},
			Origin:  &Origin{Toolkit: ToolkitFairseq}})
	}
	out = &StateDict{Tensors: map[string]*builder.Tensor{}}
	if err := averageFairseq(filesOf(fs), out); err != nil {
		t.Fatal(err)
	}
	for j := range vals[0] {
		want := float32(float32(float32(vals[0][j]+vals[1][j])+vals[2][j]) / 3)
		if g := floats32(out.Tensors["w"])[j]; math.Float32bits(g) != math.Float32bits(want) {
			t.Errorf("w[%d] = %v, want the sum over 3 %v", j, g, want)
		}
	}
	if h := out.Tensors["h"]; h.DType != builder.Float || !reflect.DeepEqual(floats32(h), []float32{1, -2}) {
		t.Errorf("float16 average is %s %v, want float32 [1 -2]", h.DType, floats32(h))
	}
	// (-5 + -4 + -1) // 3 = -4 (truncation would give -3); (7*3) // 3 = 7.
	if n := out.Tensors["n"]; n.DType != builder.Int64 || int64(binary.LittleEndian.Uint64(n.Raw)) != -4 || int64(binary.LittleEndian.Uint64(n.Raw[8:])) != 7 {
		t.Errorf("integer average is %s % x, want int64 [-4 7]", n.DType, n.Raw)
	}
}
