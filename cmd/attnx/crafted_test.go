package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
)

// badCharsmap appends to a SentencePiece model a normalizer_spec (field 3)
// whose precompiled_charsmap header claims a trie of 8 bytes where 6
// follow: the size check let it through and slicing the trie panicked.
func badCharsmap(model []byte) []byte {
	blob := []byte{8, 0, 0, 0, 1, 2, 3, 4, 5, 6}
	spec := append([]byte{0x0a, 8}, "nmt_nfkc"...)
	spec = append(append(spec, 0x12, byte(len(blob))), blob...)
	return append(append(model, 0x1a, byte(len(spec))), spec...)
}

// TestCraftedTokenizerModel: a model directory whose SentencePiece model
// has a charsmap header past its end is a clear error naming the file in
// translate and in serve (whose models load in a goroutine of their own),
// never a panic.
func TestCraftedTokenizerModel(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	dir := filepath.Join(t.TempDir(), "m")
	if code, _, errOut := attnx("export", "../../testdata/demo/onmt_dates_spm.pt", "-o", dir); code != 0 {
		t.Fatalf("export: %s", errOut)
	}
	models, _ := filepath.Glob(filepath.Join(dir, "*.model"))
	if len(models) == 0 {
		t.Fatal("no .model in the export")
	}
	for _, m := range models {
		good, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(m, badCharsmap(good), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := "precompiled_charsmap: the trie's size in its header (8 bytes) does not fit the 6 bytes after the header"
	for _, args := range [][]string{
		{"translate", "--model", dir, "3rd of March 2021"},
		{"serve", "--model", dir, "--addr", "127.0.0.1:0"},
	} {
		code, _, errOut := attnx(args...)
		if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, ".model") || strings.Contains(errOut, "internal error") {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 naming the file and %q", args[0], code, errOut, want)
		}
	}
}

// TestMissingTokenizerHint: a checkpoint copied without its SentencePiece
// models exports with a note; translating text then says that the model
// lacks its tokenizer and how to give one, not to map words to <unk>
// (which would translate garbage).
func TestMissingTokenizerHint(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	tmp := t.TempDir()
	data, err := os.ReadFile("../../testdata/demo/onmt_dates_spm.pt")
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(tmp, "model_step_450.pt")
	if err := os.WriteFile(ckpt, data, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "m")
	code, _, errOut := attnx("export", ckpt, "-o", dir)
	if code != 0 {
		t.Fatalf("export: %s", errOut)
	}
	code, _, errOut = attnx("translate", "--model", dir, "Wednesday 14 August 2030")
	if code != 1 || !strings.Contains(errOut, "the model has no source tokenizer, but its vocabulary holds SentencePiece pieces") ||
		!strings.Contains(errOut, "--src-tokenizer FILE") || strings.Contains(errOut, "--unk") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	t.Log(strings.TrimSpace(errOut))
}
