package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/fairseqtest"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
)

// TestFairseqSearchFlags: generate's --match-source-len,
// --diverse-beam-groups and --diversity-rate are refused as fairseq
// refuses them (groups that do not divide the beam, two searches at
// once), naming the flags; a --diversity-rate of 0 gives way to
// --match-source-len as in fairseq's build_generator (the output is
// fairseq-generate's matchsrc fixture); translate refuses them under
// rules other than fairseq's.
func TestFairseqSearchFlags(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	root := filepath.Join("..", "..", "testdata", "toolkits")
	fx := filepath.Join(root, "fairseq-generate")
	model := filepath.Join(t.TempDir(), "m")
	if code, _, stderr := attnx("export", filepath.Join(root, "fairseq-long", "checkpoint_best.pt"), "-o", model); code != 0 {
		t.Fatalf("export: %s", stderr)
	}
	data := filepath.Join(fx, "data-bin")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"generate", data, "--model", model, "--diverse-beam-groups", "2"}, "--diverse-beam-groups = 2 with --beam 5: want groups that divide the beam"},
		{[]string{"generate", data, "--model", model, "--match-source-len", "--diversity-rate", "0.5"}, "--match-source-len with --diversity-rate: at most one"},
		{[]string{"generate", data, "--model", model, "--beam", "4", "--diverse-beam-groups", "2", "--diversity-rate", "1"}, "with --diversity-rate: at most one"},
		{[]string{"translate", "--model", model, "--rules", "spec", "--diverse-beam-groups", "2", "--ids", "5 6 2"}, `--diverse-beam-groups = 2: --rules "spec" do not implement it`},
		{[]string{"translate", "--model", model, "--rules", "opennmt", "--match-source-len", "--ids", "5 6 2"}, `--match-source-len = true: --rules "opennmt" do not implement it`},
	} {
		code, stdout, stderr := attnx(c.args...)
		if code == 0 || stdout != "" || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "goroutine") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want a refusal with %q", c.args, code, stdout, stderr, c.want)
		}
	}
	code, stdout, stderr := attnx("generate", data, "--model", model, "--match-source-len", "--nbest", "5", "--diversity-rate", "0")
	if code != 0 {
		t.Fatalf("--match-source-len --diversity-rate 0: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(fx, "expected", "matchsrc.out")); err != nil {
		t.Fatal(err)
	}
	fairseqtest.Compare(t, filepath.Join(fx, "expected", "matchsrc"), stdout)
}
