package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
)

// TestTranslateCopyRefusals: on a copy-attention model (OpenNMT-py
// 2.3.0's onmt-sum-copy, Vs = 11195), ids from the source vocabulary's
// size up given with --ids are refused naming that size, and rules the
// model cannot decode with are a usage error naming the flags.
func TestTranslateCopyRefusals(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	model := filepath.Join(t.TempDir(), "m")
	if code, _, stderr := attnx("export", filepath.Join("..", "..", "testdata", "toolkits", "onmt-sum-copy", "model.pt"), "-o", model); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--ids", "11195 11196"}, 1, `--ids #1 ("11195 11196"): token id 11195 at position 0 is outside the source vocabulary [0, 11195): ids from the vocabulary's size 11195 up`},
		{[]string{"--rules", "spec", "patient Jane Okonkwo was admitted in Leeds ."}, 2, `attnx translate: --rules "spec" with --beam 5: `},
		{[]string{"--rules", "fairseq", "--beam", "1", "patient Jane Okonkwo was admitted in Leeds ."}, 2, `attnx translate: --rules "fairseq": `},
	} {
		code, stdout, stderr := attnx(append([]string{"translate", "--model", model}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, stdout, stderr, c.code, c.want)
		}
	}
}
