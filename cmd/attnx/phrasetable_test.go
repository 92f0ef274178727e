package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// TestOpenNMTPhraseTable replays onmt-sum-unk-phrase: OpenNMT-py 2.3.0's
// onmt_translate -replace_unk -phrase_table on onmt-sum-unk's copy model
// (make_onmt_phrase.sh). Every setting of its variants.tsv must give the
// toolkit's lines with attnx translate --replace-unk --phrase-table,
// except near ties. The test first checks that the toolkit's outputs hold
// what it is about: words the table maps (its PT_ entries) and copied
// source words it lacks.
func TestOpenNMTPhraseTable(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	src := filepath.Join("..", "..", "testdata", "toolkits", "onmt-sum-unk-phrase")
	table := filepath.Join(src, "phrase_table.txt")
	model := filepath.Join(t.TempDir(), "m")
	if code, _, stderr := attnx("export", filepath.Join(src, "..", "onmt-sum-unk", "model.pt"), "-o", model); code != 0 {
		t.Fatalf("export onmt-sum-unk/model.pt with no flags: exit %d: %s", code, stderr)
	}
	plain := readToolkitLines(t, filepath.Join(src, "..", "onmt-sum-unk", "expected", "default-replaceunk.txt"))
	mapped := readToolkitLines(t, filepath.Join(src, "expected", "default.txt"))
	entries, copiedAsIs := 0, 0
	for i := range min(len(plain), len(mapped)) {
		pw, mw := strings.Fields(plain[i]), strings.Fields(mapped[i])
		for j := range min(len(pw), len(mw)) {
			switch {
			case strings.HasPrefix(mw[j], "PT_"):
				entries++
			case pw[j] == mw[j] && !strings.HasPrefix(pw[j], "<"):
				copiedAsIs++
			}
		}
	}
	if len(plain) != len(mapped) || entries < 10 || copiedAsIs < 10 {
		t.Fatalf("%d and %d lines, %d words from the table, %d others: the fixture does not test what it should", len(plain), len(mapped), entries, copiedAsIs)
	}
	data, err := os.ReadFile(filepath.Join(src, "variants.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 3 {
			t.Fatalf("variants.tsv: %q: want name, OpenNMT-py's flags, attnx's", line)
		}
		flags := strings.Fields(strings.ReplaceAll(f[2], "phrase_table.txt", table))
		n++
		t.Run(f[0], func(t *testing.T) {
			identical, ties := compareVariant(t, src, model, f[0], flags)
			t.Logf("%s (onmt_translate 2.3.0 -batch_size 1 %s): %d lines identical, near ties %v", f[0], f[1], identical, ties)
		})
	}
	if n != 3 {
		t.Fatalf("variants.tsv lists %d settings, want 3", n)
	}
}

// TestUnkDictFlags: --replace-unk-dict turns --replace-unk on, as
// fairseq's --replace-unk DICT does; --phrase-table without --replace-unk
// (which OpenNMT-py ignores), both dictionaries at once, and a table
// OpenNMT-py could not read are usage errors naming the flag or file.
func TestUnkDictFlags(t *testing.T) {
	dir := t.TempDir()
	good, table := filepath.Join(dir, "dict.txt"), filepath.Join(dir, "table.txt")
	os.WriteFile(good, []byte("Leeds Lids\n"), 0o644)
	os.WriteFile(table, []byte("Leeds|||Lids\n"), 0o644)
	for _, c := range []struct {
		args []string
		err  string
		on   bool
	}{
		{[]string{"--replace-unk-dict", good}, "", true},
		{[]string{"--replace-unk", "--phrase-table", table}, "", true},
		{[]string{"--phrase-table", table}, "--phrase-table " + table + ": needs --replace-unk", false},
		{[]string{"--replace-unk-dict", good, "--phrase-table", table}, "give one dictionary", false},
		{[]string{"--replace-unk", "--phrase-table", good}, good + `:1: "Leeds Lids": expected a source word, "|||"`, false},
		{[]string{"--replace-unk-dict", filepath.Join(dir, "missing.txt")}, "missing.txt", false},
	} {
		f := newTranslateFlags()
		if err := f.fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := f.resolve()
		if c.err == "" {
			if err != nil || *f.replaceUnk != c.on || f.unkDict.dict["Leeds"] != "Lids" {
				t.Errorf("%q: error %v, replace-unk %v, dictionary %q", c.args, err, *f.replaceUnk, f.unkDict.dict)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: error %v, want one with %q", c.args, err, c.err)
		}
	}
}

// TestFairseqReplaceUnkFails: fairseq 0.12.2's fairseq-interactive
// --replace-unk DICT stops at the first <unk> with and without
// --print-alignment (make_fairseq_replace_unk.sh), so attnx's
// --replace-unk-dict has no run of fairseq to replay: the fixture keeps
// both tracebacks, and its dictionary reads as load_align_dict reads it
// (two columns of three, every entry PT_ and the piece).
func TestFairseqReplaceUnkFails(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "toolkits", "fairseq-spm-replace-unk")
	data, err := os.ReadFile(filepath.Join(src, "fairseq-interactive-failure.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"--replace-unk dict.txt (fairseq-spm", "IndexError: index 5 is out of bounds for dimension 0 with size 0",
		"--replace-unk dict.txt --print-alignment (fairseq-spm", "TypeError: list indices must be integers or slices, not tuple",
		"src_token = src_tokens[alignment[i]]",
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("fairseq-interactive-failure.txt lacks %q", want)
		}
	}
	d, err := translate.LoadAlignDict(filepath.Join(src, "dict.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 164 {
		t.Errorf("dict.txt: %d entries, want 164", len(d))
	}
	for k, v := range d {
		if v != "PT_"+k {
			t.Errorf("dict.txt: %q -> %q, want PT_%s", k, v, k)
		}
	}
}
