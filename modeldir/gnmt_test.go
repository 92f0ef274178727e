package modeldir

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGNMTExportRefused: attnx export of either committed GNMT checkpoint
// is refused with an error naming the file, the repository whose train.py
// wrote it and the shape read from it, never "not a toolkit checkpoint";
// nothing is written.
func TestGNMTExportRefused(t *testing.T) {
	for _, c := range []struct{ kind, who, shape string }{
		{"dle", "DeepLearningExamples", "4 layers, hidden size 32"},
		{"mlperf", "MLPerf rnn_translator", "3 layers, hidden size 32"},
	} {
		path := filepath.Join("..", "testdata", "toolkits", "gnmt-"+c.kind, "model_best.pth")
		out := filepath.Join(t.TempDir(), "out")
		_, err := Export(path, out, Options{})
		if err == nil {
			t.Fatalf("%s: exported", c.kind)
		}
		for _, want := range []string{path, "GNMT v2 checkpoint", c.who, c.shape, "cannot write GNMT model directories yet"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", c.kind, err, want)
			}
		}
		if matches, _ := filepath.Glob(out + "*"); len(matches) != 0 {
			t.Errorf("%s: left %v", c.kind, matches)
		}
	}
}
