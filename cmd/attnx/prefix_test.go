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

// TestGeneratePrefixSize runs attnx generate --prefix-size 2 on the
// data-bin fairseq-generate --prefix-size 2 decoded
// (make_fairseq_prefix.sh, beam 5 and --beam 1): its output is
// fairseq-generate's line for line; a negative size is a usage error.
func TestGeneratePrefixSize(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	root := filepath.Join("..", "..", "testdata", "toolkits")
	model := filepath.Join(t.TempDir(), "m")
	if code, _, stderr := attnx("export", filepath.Join(root, "fairseq-long", "checkpoint_best.pt"), "-o", model); code != 0 {
		t.Fatalf("export: %s", stderr)
	}
	dataBin := filepath.Join(root, "fairseq-generate", "data-bin")
	for _, c := range []struct {
		name  string
		flags []string
	}{{"prefix2", nil}, {"prefix2-beam1", []string{"--beam", "1"}}} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"generate", dataBin, "--model", model, "--prefix-size", "2"}, c.flags...)
			code, stdout, stderr := attnx(args...)
			if code != 0 {
				t.Fatalf("attnx %s: exit %d: %s", strings.Join(args, " "), code, stderr)
			}
			cmp := fairseqtest.Compare(t, filepath.Join(root, "fairseq-prefix", c.name), stdout)
			t.Logf("%s: %d of %d lines identical, the others within tolerance; near ties %v", c.name, cmp.Identical, cmp.Lines, cmp.Ties)
		})
	}
	code, stdout, stderr := attnx("generate", dataBin, "--model", model, "--prefix-size", "-1")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "--prefix-size -1: want 0 or more") {
		t.Errorf("--prefix-size -1: exit %d, stdout %q, stderr %q; want a usage error naming it", code, stdout, stderr)
	}
}

// TestTranslateTgtPrefix runs attnx translate --src with --tgt-prefix on
// onmt-sp: its lines are onmt_translate 3.5.1 -tgt prefix.tgt
// -tgt_file_prefix's (make_onmt_prefix.sh, beam 5 and --beam 1); a prefix
// file of another length, --tgt-prefix without --src and OpenNMT-py's
// spelling are usage errors naming what to give.
func TestTranslateTgtPrefix(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	root := filepath.Join("..", "..", "testdata", "toolkits")
	model := filepath.Join(t.TempDir(), "m")
	if code, _, stderr := attnx("export", filepath.Join(root, "onmt-sp", "model.pt"), "-o", model); code != 0 {
		t.Fatalf("export: %s", stderr)
	}
	src, prefix := filepath.Join(root, "onmt-sp", "test.src"), filepath.Join(root, "onmt-prefix", "prefix.tgt")
	for _, k := range []string{"5", "1"} {
		code, stdout, stderr := attnx("translate", "--model", model, "--src", src, "--tgt-prefix", prefix, "--beam", k)
		if code != 0 {
			t.Fatalf("beam %s: exit %d: %s", k, code, stderr)
		}
		want, err := os.ReadFile(filepath.Join(root, "onmt-prefix", "beam"+k+".pred"))
		if err != nil {
			t.Fatal(err)
		}
		if stdout != string(want) {
			t.Errorf("beam %s: output\n%s\nwant onmt_translate's\n%s", k, stdout, want)
		}
	}
	short := filepath.Join(t.TempDir(), "short.tgt")
	if err := os.WriteFile(short, []byte("Die\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--src", src, "--tgt-prefix", short}, "has 1 lines, --src"},
		{[]string{"--tgt-prefix", prefix, "some text"}, "give --src FILE too"},
		{[]string{"--src", src, "-tgt_file_prefix"}, "--tgt-prefix FILE with --src FILE"},
	} {
		code, stdout, stderr := attnx(append([]string{"translate", "--model", model}, c.args...)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want a usage error saying %q", c.args, code, stdout, stderr, c.msg)
		}
	}
}
