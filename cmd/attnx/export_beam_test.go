package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestExportBeamAndInspect: export --beam writes beam.onnx beside the
// other graphs and inspect shows it with its inputs (the beam size, max_len
// and length penalty given at run time) and outputs.
func TestExportBeamAndInspect(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	code, out, errs := attnx("export", fixtureCkpt("luong-general_b1_l1"), "-o", dir, "--greedy", "--beam")
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "    greedy.onnx ") || !strings.Contains(out, "    beam.onnx ") {
		t.Errorf("export output lacks greedy.onnx or beam.onnx:\n%s", out)
	}
	code, out, errs = attnx("inspect", dir)
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"  files    encoder=encoder.onnx decoder=decoder.onnx greedy=greedy.onnx beam=beam.onnx\n",
		"beam: " + filepath.Join(dir, "beam.onnx") + " (",
		"    beam_size       int64 []\n",
		"    length_penalty  float64 []\n",
		"    output_ids         int64 [batch,beam,out_len]\n",
		"    normalized_scores  float32 [batch,beam]\n",
		"    attention          float32 [batch,out_len,src_len]\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
}
