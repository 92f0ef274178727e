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

// TestGenerateCommand runs attnx generate on the data-bins
// fairseq-preprocess wrote (testdata/toolkits/fairseq-generate) with
// fairseq-long's exported checkpoint (fairseq-moses's for the settings
// with --tokenizer moses) and each setting of
// fairseq_generate_variants.tsv, its attnx flags: stdout must be what
// fairseq-generate printed with the same setting (fairseqtest.Compare:
// texts identical, numbers to float32's reach, the BLEU line identical),
// stderr only attnx's summary line; --max-tokens below the longest pair
// fails as fairseq's assertion does, naming the sentence, and prints
// nothing on stdout.
func TestGenerateCommand(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	root := filepath.Join("..", "..", "testdata", "toolkits")
	fx := filepath.Join(root, "fairseq-generate")
	models := map[string]string{}
	for _, fx := range []string{"fairseq-long", "fairseq-moses"} {
		models[fx] = filepath.Join(t.TempDir(), fx)
		if code, _, stderr := attnx("export", filepath.Join(root, fx, "checkpoint_best.pt"), "-o", models[fx]); code != 0 {
			t.Fatalf("export %s: %s", fx, stderr)
		}
	}
	model := models["fairseq-long"]
	data, err := os.ReadFile(filepath.Join(root, "fairseq_generate_variants.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Split(line, "\t")
		if strings.HasPrefix(f[0], "#") || len(f) < 3 {
			continue
		}
		name, flags := f[0], strings.Fields(f[2])
		t.Run(name, func(t *testing.T) {
			dataBin, model := "data-bin", model
			for i, fl := range flags {
				switch {
				case fl == "--dataset-impl" && flags[i+1] != "mmap":
					dataBin = "data-bin-" + flags[i+1]
				case fl == "--tokenizer" && flags[i+1] == "moses":
					dataBin, model = "data-bin-moses", models["fairseq-moses"]
				}
			}
			args := append([]string{"generate", filepath.Join(fx, dataBin), "--model", model}, flags...)
			code, stdout, stderr := attnx(args...)
			if code != 0 {
				t.Fatalf("attnx %s: exit %d: %s", strings.Join(args, " "), code, stderr)
			}
			if !strings.HasPrefix(stderr, "attnx generate: ") || !strings.Contains(stderr, " en-de (") || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr: %q; want attnx's one summary line", stderr)
			}
			c := fairseqtest.Compare(t, filepath.Join(fx, "expected", name), stdout)
			t.Logf("%s (attnx generate %s): %d of %d lines identical, the others within tolerance; near ties %v", name, strings.Join(flags, " "), c.Identical, c.Lines, c.Ties)
		})
	}
	want, err := os.ReadFile(filepath.Join(fx, "expected", "maxtokens50.err"))
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := attnx("generate", filepath.Join(fx, "data-bin"), "--model", model, "--max-tokens", "50")
	fairseqMsg := strings.TrimPrefix(strings.TrimSpace(string(want)), "AssertionError: ")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "(fairseq asserts: "+fairseqMsg+")") || !strings.Contains(stderr, "more than --max-tokens 50") {
		t.Errorf("--max-tokens 50: exit %d, stdout %d bytes, stderr %q; want exit 1, nothing on stdout and fairseq's %q", code, len(stdout), stderr, fairseqMsg)
	}
}

// TestGenerateAlignmentFlag: --print-alignment takes hard or soft after
// "=" or, as fairseq's argparse does, as the next argument (alone it is
// hard); another value is a usage error naming it, before any model is
// opened.
func TestGenerateAlignmentFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"d", "--print-alignment", "soft"}, []string{"d", "--print-alignment=soft"}},
		{[]string{"--print-alignment", "hard", "d"}, []string{"--print-alignment=hard", "d"}},
		{[]string{"--print-alignment", "d"}, []string{"--print-alignment", "d"}},
		{[]string{"d", "--", "--print-alignment", "soft"}, []string{"d", "--", "--print-alignment", "soft"}},
	} {
		if got := joinOptional(c.args, "--print-alignment", "hard", "soft"); strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("joinOptional(%q): %q, want %q", c.args, got, c.want)
		}
	}
	code, stdout, stderr := attnx("generate", "data-bin", "--model", "m", "--print-alignment=medium")
	if code != 2 || stdout != "" || !strings.Contains(stderr, `--print-alignment "medium": want hard or soft`) {
		t.Errorf("--print-alignment=medium: exit %d, stdout %q, stderr %q; want exit 2 naming the value", code, stdout, stderr)
	}
}

// TestGenerateRemoveBPEValue: fairseq's --remove-bpe takes an optional
// value from the next argument (argparse's nargs="?"), so
// "--remove-bpe subword_nmt DATA-BIN" is the symbol and then the data,
// where pflag took subword_nmt for a second DATA-BIN and failed with
// "one DATA-BIN directory expected". fairseq's post_process treats
// subword_nmt as the "@@ " that --remove-bpe alone stands for, so the
// output is fairseq-generate's removebpe fixture.
func TestGenerateRemoveBPEValue(t *testing.T) {
	for _, c := range []struct{ args, want []string }{
		{[]string{"--remove-bpe", "subword_nmt", "d"}, []string{"--remove-bpe=subword_nmt", "d"}},
		{[]string{"--post-process", "sentencepiece", "d"}, []string{"--post-process=sentencepiece", "d"}},
		{[]string{"--remove-bpe", "d"}, []string{"--remove-bpe", "d"}},
	} {
		got := c.args
		for _, f := range []string{"--remove-bpe", "--post-process"} {
			got = joinOptional(got, f, postProcessNames...)
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%q: %q, want %q", c.args, got, c.want)
		}
	}
	testenv.ORT(t, onnxrun.Init())
	root := filepath.Join("..", "..", "testdata", "toolkits")
	fx := filepath.Join(root, "fairseq-generate")
	model := filepath.Join(t.TempDir(), "m")
	if code, _, stderr := attnx("export", filepath.Join(root, "fairseq-long", "checkpoint_best.pt"), "-o", model); code != 0 {
		t.Fatalf("export: %s", stderr)
	}
	code, stdout, stderr := attnx("generate", "--model", model, "--remove-bpe", "subword_nmt", filepath.Join(fx, "data-bin"))
	if code != 0 {
		t.Fatalf("generate --remove-bpe subword_nmt DATA-BIN: exit %d: %s", code, stderr)
	}
	fairseqtest.Compare(t, filepath.Join(fx, "expected", "removebpe"), stdout)
}
