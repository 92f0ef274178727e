package translate

import (
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
)

// modelSpec says what writeModelDir writes.
type modelSpec struct {
	special  attention.Special
	src, tgt []string
	greedy   bool
	beam     bool // beam.onnx too
}

// writeModelDir writes encoder.onnx, decoder.onnx, optionally greedy.onnx
// and beam.onnx, and attnx.json for w into dir.
func writeModelDir(tb testing.TB, dir string, w *attention.Weights, ms modelSpec) {
	tb.Helper()
	files := map[string]string{"encoder": "encoder.onnx", "decoder": "decoder.onnx"}
	builds := map[string]func() (*builder.Model, error){
		"encoder": func() (*builder.Model, error) { return attention.Encoder(w, attention.BuildOptions{}) },
		"decoder": func() (*builder.Model, error) { return attention.Decoder(w, attention.BuildOptions{}) },
	}
	if ms.greedy {
		files["greedy"] = "greedy.onnx"
		builds["greedy"] = func() (*builder.Model, error) { return attention.Greedy(w, ms.special, attention.BuildOptions{}) }
	}
	if ms.beam {
		files[modeldir.RoleBeam] = modeldir.BeamFile
		builds[modeldir.RoleBeam] = func() (*builder.Model, error) { return attention.Beam(w, ms.special, attention.BuildOptions{}) }
	}
	for role, build := range builds {
		m, err := build()
		if err != nil {
			tb.Fatalf("%s: %v", role, err)
		}
		if err := onnxfile.WriteFile(filepath.Join(dir, files[role]), m, onnxfile.WriteOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
	info := modeldir.Info{
		Format: modeldir.InfoFormat, FormatVersion: 1, Config: w.Config, Opset: 17,
		Special: ms.special, SrcTokens: ms.src, TgtTokens: ms.tgt, Files: files, Producer: "attnx translate tests",
	}
	writeInfo(tb, dir, &info)
}

func writeInfo(tb testing.TB, dir string, info *modeldir.Info) {
	tb.Helper()
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "attnx.json"), data, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// charVocab returns the four special tokens followed by n-4 distinct
// single-character tokens.
func charVocab(n int) []string {
	v := []string{"<pad>", "<sos>", "<eos>", "<unk>"}
	for i := 0; len(v) < n; i++ {
		v = append(v, string(rune('a'+i)))
	}
	return v
}

// randomStateDict returns random weights with the spec's keys and PyTorch's
// shapes for cfg (L = 1 or more).
func randomStateDict(cfg attention.Config, seed int64) map[string]*builder.Tensor {
	r := rand.New(rand.NewSource(seed))
	H, Vs, Vt := int64(cfg.Hidden), int64(cfg.SrcVocab), int64(cfg.TgtVocab)
	sd := map[string]*builder.Tensor{}
	add := func(key string, dims ...int64) {
		v := make([]float32, builder.NumElements(dims))
		for i := range v {
			v[i] = float32(r.NormFloat64() * 0.1)
		}
		sd[key] = builder.FloatTensor(dims, v)
	}
	add("encoder.embedding.weight", Vs, H)
	add("decoder.embedding.weight", Vt, H)
	for _, part := range []string{"encoder", "decoder"} {
		for k := 0; k < cfg.Layers; k++ {
			in := H
			if part == "decoder" && k == 0 && cfg.Arch == attention.Bahdanau {
				in = 2 * H
			}
			p := func(s string) string { return part + ".lstm." + s + "_l" + string(rune('0'+k)) }
			add(p("weight_ih"), 4*H, in)
			add(p("weight_hh"), 4*H, H)
			add(p("bias_ih"), 4*H)
			add(p("bias_hh"), 4*H)
		}
	}
	cls := 2 * H
	switch cfg.Arch {
	case attention.Bahdanau:
		add("decoder.fc_hidden.weight", H, H)
		add("decoder.fc_encoder.weight", H, H)
		add("decoder.weight", 1, H)
		cls = H
	case attention.LuongGeneral:
		add("decoder.attention.fc.weight", H, H)
	case attention.LuongConcat:
		add("decoder.attention.fc.weight", H, H)
		add("decoder.attention.weight", 1, H)
	}
	add("decoder.classifier.weight", Vt, cls)
	add("decoder.classifier.bias", Vt)
	return sd
}

func needORT(tb testing.TB) {
	tb.Helper()
	testenv.ORT(tb, onnxrun.Init())
}

// modelWithDefaults exports the bahdanau fixture (random weights: its
// outputs rarely reach EOS) into a temporary directory with d as
// attnx.json's decoding defaults.
func modelWithDefaults(t *testing.T, d *modeldir.Defaults) (string, *modeldir.Info) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	if _, err := modeldir.Export("../testdata/fixtures/bahdanau_b1_l1/checkpoint.pt", dir, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	info, err := modeldir.ReadInfo(filepath.Join(dir, modeldir.InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	info.Defaults = d
	data, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(dir, modeldir.InfoFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, info
}
