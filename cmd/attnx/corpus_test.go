package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTranslateSrcFile(t *testing.T) {
	model := translateTestModel(t)
	tmp := t.TempDir()
	src := filepath.Join(tmp, "test.src")
	lines := []string{"abc", "", "hello", "ab", "fedcba", "  ", "gg"}
	os.WriteFile(src, []byte(strings.Join(lines, "\n")+"\n"), 0o644)

	// each line as translate gives it alone, in the file's order
	var want []string
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			want = append(want, "")
			continue
		}
		code, out, errOut := attnx("translate", "--model", model, l)
		if code != 0 {
			t.Fatalf("translate %q: %s", l, errOut)
		}
		want = append(want, strings.TrimSpace(strings.SplitN(out, " -> ", 2)[1]))
	}
	if strings.Join(want, "") == "" {
		t.Fatal("every translation is empty: nothing to compare")
	}
	code, out, errOut := attnx("translate", "--model", model, "--src", src, "--batch", "2", "--lanes", "2")
	if code != 0 || out != strings.Join(want, "\n")+"\n" {
		t.Fatalf("exit %d\n got  %q\n want %q\n%s", code, out, strings.Join(want, "\n")+"\n", errOut)
	}
	if !strings.Contains(errOut, "attnx translate: 7 sentences (2 blank) in ") || !strings.Contains(errOut, "on 2 lanes -> stdout") {
		t.Errorf("totals line: %q", errOut)
	}

	// --output, --n-best: N lines per sentence
	pred := filepath.Join(tmp, "pred.txt")
	code, out, errOut = attnx("translate", "--model", model, "--src", src, "--output", pred, "--beam", "3", "--n-best", "2", "--batch-tokens", "9")
	data, _ := os.ReadFile(pred)
	if code != 0 || out != "" || len(strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")) != 2*len(lines) {
		t.Fatalf("exit %d, stdout %q, %s holds %q; stderr %s", code, out, pred, data, errOut)
	}

	// a bad line: nothing is written, the error names the line
	bad := filepath.Join(tmp, "bad.src")
	os.WriteFile(bad, []byte("abc\nab\u00e9\n"), 0o644)
	out2 := filepath.Join(tmp, "out2.txt")
	code, _, errOut = attnx("translate", "--model", model, "--src", bad, "--output", out2)
	if _, statErr := os.Stat(out2); code != 1 || !strings.Contains(errOut, "line 2") || statErr == nil {
		t.Errorf("bad line: exit %d, stderr %q, output exists: %v", code, errOut, statErr == nil)
	}
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--src", filepath.Join(tmp, "nope.txt")}, "--src: open"},
		{[]string{"--output", pred}, "--output, --batch-tokens, --lanes and --shard go with --src FILE"},
		{[]string{"--src", src, "abc"}, "give --src FILE or inputs"},
	} {
		code, _, errOut := attnx(append([]string{"translate", "--model", model}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}
}
