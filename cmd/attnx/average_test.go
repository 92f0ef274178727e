package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
)

// TestExportAverage: attnx export A B C --average on the checkpoints
// onmt_train and fairseq-train saved during one run
// (testdata/toolkits/make_average.sh) writes the very graphs that
// exporting the file the toolkit's own averaging script wrote from them
// gives (encoder.onnx and decoder.onnx byte for byte), and both
// directories translate the test set into the lines onmt_translate and
// fairseq-interactive wrote with that averaged file (beam 5 and greedy),
// near ties aside.
func TestExportAverage(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	for _, name := range []string{"onmt-avg", "onmt-avg-shared", "fairseq-avg"} {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join("..", "..", "testdata", "toolkits", name)
			data, err := os.ReadFile(filepath.Join(src, "averaged.inputs"))
			if err != nil {
				t.Fatal(err)
			}
			var inputs []string
			for _, f := range strings.Fields(string(data)) {
				inputs = append(inputs, filepath.Join(src, f))
			}
			tmp := t.TempDir()
			avg, direct := filepath.Join(tmp, "avg"), filepath.Join(tmp, "direct")
			args := append(append([]string{"export"}, inputs...), "--average", "-o", avg)
			code, stdout, stderr := attnx(args...)
			if code != 0 {
				t.Fatalf("attnx %s: exit %d: %s", strings.Join(args, " "), code, stderr)
			}
			script, tool := "average_models.py", "onmt_translate"
			if strings.HasPrefix(name, "fairseq") {
				script, tool = "average_checkpoints.py", "fairseq-interactive"
			}
			for _, want := range []string{"from the average of " + filepath.Base(inputs[0]), fmt.Sprintf("averaged %d checkpoints as", len(inputs)), script} {
				if !strings.Contains(stdout, want) {
					t.Errorf("export's report lacks %q:\n%s", want, stdout)
				}
			}
			if code, _, stderr := attnx("export", filepath.Join(src, "averaged.pt"), "-o", direct); code != 0 {
				t.Fatalf("export averaged.pt: exit %d: %s", code, stderr)
			}
			for _, f := range []string{modeldir.EncoderFile, modeldir.DecoderFile} {
				a, err := os.ReadFile(filepath.Join(avg, f))
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(filepath.Join(direct, f))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a, b) {
					t.Errorf("%s of --average differs from the one exported from the toolkit's averaged.pt", f)
				}
			}
			t.Run("average", func(t *testing.T) {
				runVariants(t, filepath.Join(src, "variants.tsv"), src, avg, tool+" on averaged.pt")
			})
			t.Run("toolkit-averaged", func(t *testing.T) {
				runVariants(t, filepath.Join(src, "variants.tsv"), src, direct, tool+" on averaged.pt")
			})
		})
	}
}

// TestExportAverageUsage: several checkpoints without --average, --average
// with one checkpoint or with --encoder/--decoder, and checkpoints of two
// models are refused, saying what to give instead or what differs.
func TestExportAverageUsage(t *testing.T) {
	tk := filepath.Join("..", "..", "testdata", "toolkits")
	a := filepath.Join(tk, "onmt-avg", "model_step_200.pt")
	b := filepath.Join(tk, "onmt-avg", "model_step_400.pt")
	other := filepath.Join(tk, "onmt-avg-shared", "model_step_600.pt")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"several without --average", []string{a, b}, 2, "one CHECKPOINT expected, got 2 arguments: " + a + " " + b + " (to export their average, add --average)"},
		{"one with --average", []string{a, "--average"}, 2, "--average needs two or more checkpoints of one model, got 1"},
		{"pair with --average", []string{"--encoder", a, "--decoder", b, "--average"}, 2, "--average takes the checkpoints to average as CHECKPOINT..."},
		{"two models", []string{a, other, "--average"}, 1, "must be of one model"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "m")
			code, _, stderr := attnx(append(append([]string{"export"}, c.args...), "-o", out)...)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, want %d, stderr:\n%s\nwant it to say %q", code, c.code, stderr, c.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}
