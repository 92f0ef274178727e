package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/verify"
)

// TestVerifySrc verifies the SentencePiece demo model on 25 held-out
// dates given as raw text, with references.
func TestVerifySrc(t *testing.T) {
	needTorch(t)
	ckpt := "../../testdata/demo/onmt_dates_spm.pt"
	dir := filepath.Join(t.TempDir(), "m")
	if code, _, errs := attnx("export", ckpt, "-o", dir, "--greedy"); code != 0 {
		t.Fatal(errs)
	}
	held, err := os.ReadFile("../../testdata/demo/heldout.txt")
	if err != nil {
		t.Fatal(err)
	}
	var src, ref []string
	for i, l := range strings.Split(strings.TrimSpace(string(held)), "\n")[:25] {
		s, r, _ := strings.Cut(l, "\t")
		if i == 7 {
			s, r = "", "" // a blank line is skipped and kept
		}
		src, ref = append(src, s), append(ref, r)
	}
	tmp := t.TempDir()
	srcFile, refFile := filepath.Join(tmp, "test.src"), filepath.Join(tmp, "test.ref")
	os.WriteFile(srcFile, []byte(strings.Join(src, "\n")+"\n"), 0o644)
	os.WriteFile(refFile, []byte(strings.Join(ref, "\n")+"\n"), 0o644)

	code, out, errs := attnx("verify", "--model", dir, "--checkpoint", ckpt, "--src", srcFile, "--ref", refFile, "--batch", "10", "--json")
	var o verify.TestSetOutcome
	if code != 0 || json.Unmarshal([]byte(out), &o) != nil {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !o.OK || o.Sentences != 25 || o.Blank != 1 || o.Identical != 24 || o.NearTies != 0 || o.Chunks != 3 || !o.StepsOK {
		t.Errorf("outcome %+v", o)
	}
	if !strings.Contains(o.AttnxVsPyTorch, " = 100.00 ") || o.Attnx[7] != "" || o.Attnx[0] != ref[0] {
		t.Errorf("BLEU %s, translations %q", o.AttnxVsPyTorch, o.Attnx[:2])
	}
	if len(o.AttnxVsRef) != 1 || len(o.PyTorchVsRef) != 1 || !strings.HasPrefix(o.AttnxVsRef[0], "BLEU|nrefs:1|") {
		t.Errorf("against the references: %q %q", o.AttnxVsRef, o.PyTorchVsRef)
	}

	// Reduced precision: the agreement with the float32 PyTorch model, as
	// plain verify judges it (this crashed: index out of range [-1]).
	for _, w := range []string{"int8", "int4"} {
		qdir := filepath.Join(t.TempDir(), w)
		if code, _, errs := attnx("export", ckpt, "-o", qdir, "--weights", w); code != 0 {
			t.Fatal(errs)
		}
		code, out, errs := attnx("verify", "--model", qdir, "--checkpoint", ckpt, "--src", srcFile, "--batch", "10", "--json")
		var q verify.TestSetOutcome
		if code != 0 || json.Unmarshal([]byte(out), &q) != nil {
			t.Fatalf("%s: exit %d\n%s\n%s", w, code, out, errs)
		}
		if !q.OK || q.Weights != w || q.MinAgreement != 0.9 || q.Sentences != 25 || q.Identical < 22 || q.Attnx[0] == "" || q.Attnx[7] != "" {
			t.Errorf("%s: outcome %+v", w, q)
		}
		t.Logf("%s: %d of 24 identical to PyTorch's float32", w, q.Identical)
		code, out, errs = attnx("verify", "--model", qdir, "--checkpoint", ckpt, "--src", srcFile)
		if code != 0 || !strings.Contains(out, w+" weights: each chunk's greedy decodes agree with the float32 PyTorch model's on at least 90% of its sentences") {
			t.Errorf("%s: exit %d\n%s\n%s", w, code, out, errs)
		}
	}

	short := filepath.Join(tmp, "short.ref")
	os.WriteFile(short, []byte("x\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--src", srcFile, "--ref", short}, "--ref " + short + " has 1 lines and --src " + srcFile + " has 25"},
		{[]string{"--ref", refFile}, "--ref goes with --src FILE"},
		{[]string{"--src", srcFile, "--seed", "3"}, "--src decodes the file's own sentences: drop --inputs, --src-len and --seed"},
	} {
		code, _, errs := attnx(append([]string{"verify", "--model", dir, "--checkpoint", ckpt}, c.args...)...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
	}
	// --beam compares the file's beam search, best hypothesis against the
	// reference's, under the model's rules (OpenNMT-py's, for this one).
	code, out, errs = attnx("verify", "--model", dir, "--checkpoint", ckpt, "--src", srcFile, "--beam", "2")
	if code != 0 || !strings.Contains(out, "beam search K=2 under opennmt rules") || !strings.Contains(out, "identical to PyTorch's") {
		t.Errorf("--src --beam 2: exit %d\n%s\n%s", code, out, errs)
	}
}
