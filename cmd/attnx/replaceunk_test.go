package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
)

// TestOpenNMTReplaceUnk exports onmt-sum-unk, a copy-attention summarizer
// OpenNMT-py 2.3.0's own onmt_train trained with a target vocabulary of 8
// words and a source vocabulary of 40 (make_onmt_unk.sh), so that many
// output tokens are <unk> and most source words lie outside the
// vocabulary. Every setting of its variants.tsv, with and without
// -replace_unk, must give 2.3.0's onmt_translate's lines, except near
// ties: 2.3.0 replaces an <unk> with the raw source word at the copy
// attention's argmax, a word outside the source vocabulary included,
// where 3.x writes the vocabulary's <unk>. The test first checks that the
// toolkit's outputs hold what it is about: many <unk>s without
// -replace_unk, none with it, and replacements that are words outside the
// source vocabulary.
func TestOpenNMTReplaceUnk(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	src := filepath.Join("..", "..", "testdata", "toolkits", "onmt-sum-unk")
	model := filepath.Join(t.TempDir(), "m")
	if code, _, stderr := attnx("export", filepath.Join(src, "model.pt"), "-o", model); code != 0 {
		t.Fatalf("export model.pt with no flags: exit %d: %s", code, stderr)
	}
	info, err := modeldir.ReadInfo(filepath.Join(model, "attnx.json"))
	if err != nil || len(info.SrcTokens) == 0 {
		t.Fatalf("attnx.json's source vocabulary: %v", err)
	}
	inVocab := map[string]bool{}
	for _, w := range info.SrcTokens {
		inVocab[w] = true
	}
	for _, v := range []string{"default", "greedy", "nbest3"} {
		plain := readToolkitLines(t, filepath.Join(src, "expected", v+".txt"))
		repl := readToolkitLines(t, filepath.Join(src, "expected", v+"-replaceunk.txt"))
		unks, left, outside := 0, 0, 0
		for i, line := range plain {
			if i >= len(repl) {
				break
			}
			pw, rw := strings.Fields(line), strings.Fields(repl[i])
			for j, w := range pw {
				if w != "<unk>" {
					continue
				}
				unks++
				if j < len(rw) && !inVocab[rw[j]] && rw[j] != "<unk>" {
					outside++
				}
			}
			left += strings.Count(repl[i], "<unk>")
		}
		t.Logf("%s: %d <unk> without -replace_unk, %d with it; %d replaced by a word outside the source vocabulary", v, unks, left, outside)
		if len(plain) != len(repl) || unks < 20 || left > 0 || outside < 10 {
			t.Fatalf("%s: %d and %d lines, %d <unk>s without -replace_unk, %d with it, %d replaced by a word outside the source vocabulary: the fixture does not test what it should", v, len(plain), len(repl), unks, left, outside)
		}
	}
	runVariants(t, filepath.Join(src, "variants.tsv"), src, model, "onmt_translate 2.3.0 -batch_size 1")
}
