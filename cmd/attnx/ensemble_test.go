package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
)

// TestTranslateEnsemble: attnx translate --model A --model B, with A and B
// exported from two checkpoints of one training run
// (testdata/toolkits/make_ensemble.sh), writes the lines onmt_translate
// -model A B and fairseq-interactive --path A:B wrote for each variant,
// line for line (near ties aside), OpenNMT-py 2.3.0's -avg_raw_probs as
// --avg-raw-probs too; 3.5.1's -avg_raw_probs, which it takes over the
// members' raw logits, is refused by name.
func TestTranslateEnsemble(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	for _, c := range []struct {
		name, tool, test string
		spm              bool // export the fixture's SentencePiece models too
	}{
		{"onmt-ensemble", "onmt_translate -model A B (3.5.1)", "onmt-avg/test.src", false},
		{"fairseq-ensemble", "fairseq-interactive --path A:B", "fairseq-avg/test.raw.en", false},
		{"onmt2-ensemble", "onmt_translate -model A B (2.3.0)", "onmt2-ensemble/test.src", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := filepath.Join("..", "..", "testdata", "toolkits")
			src := filepath.Join(tk, c.name)
			data, err := os.ReadFile(filepath.Join(src, "members"))
			if err != nil {
				t.Fatal(err)
			}
			var models []string
			for i, ckpt := range strings.Fields(string(data)) {
				dir := filepath.Join(t.TempDir(), "m"+string(rune('1'+i)))
				args := []string{"export", filepath.Join(src, ckpt), "-o", dir}
				if c.spm {
					args = append(args, "--src-tokenizer", filepath.Join(src, "spm_src.model"), "--tgt-tokenizer", filepath.Join(src, "spm_tgt.model"))
				}
				if code, _, stderr := attnx(args...); code != 0 {
					t.Fatalf("export %s: exit %d: %s", ckpt, code, stderr)
				}
				models = append(models, dir)
			}
			// compareVariant reads the test set from the fixture's
			// directory: the members' one.
			fixture := filepath.Join(t.TempDir(), c.name)
			if err := os.MkdirAll(filepath.Join(fixture, "expected"), 0o755); err != nil {
				t.Fatal(err)
			}
			test, err := os.ReadFile(filepath.Join(tk, c.test))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(fixture, filepath.Base(c.test)), test, 0o644)
			lines, err := os.ReadFile(filepath.Join(src, "variants.tsv"))
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
				f := strings.Split(line, "\t")
				name, flags := f[0], append([]string{"--model", models[1]}, strings.Fields(f[2])...)
				for _, ext := range []string{".txt", ".gaps.json"} {
					if data, err := os.ReadFile(filepath.Join(src, "expected", name+ext)); err == nil {
						os.WriteFile(filepath.Join(fixture, "expected", name+ext), data, 0o644)
					}
				}
				t.Run(name, func(t *testing.T) {
					if strings.Contains(f[2], "--avg-raw-probs") && c.name == "onmt-ensemble" {
						args := append([]string{"translate", "--model", models[0], "--src", filepath.Join(fixture, filepath.Base(c.test)), "--output", filepath.Join(t.TempDir(), "out")}, flags...)
						code, _, stderr := attnx(args...)
						if want := "--avg-raw-probs: OpenNMT-py 3.x's -avg_raw_probs takes log(mean(exp(logits)))"; code == 0 || !strings.Contains(stderr, want) {
							t.Errorf("exit %d, stderr %q; want %q", code, stderr, want)
						}
						return
					}
					identical, ties := compareVariant(t, fixture, models[0], name, flags)
					t.Logf("%s (%s %s): %d lines identical, near ties %v", name, c.tool, f[1], identical, ties)
				})
			}
		})
	}
}
