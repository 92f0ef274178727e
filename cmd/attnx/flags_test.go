package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestNormalizeArgs(t *testing.T) {
	newSet := func() *testFlagSet {
		fs := newFlagSet("test")
		s := &testFlagSet{}
		s.model = fs.String("model", "", "")
		s.json = fs.Bool("json", false, "")
		s.out = fs.StringP("output", "o", "", "")
		s.verbose = fs.BoolP("verbose", "v", false, "")
		s.fs = fs
		return s
	}
	cases := []struct {
		args []string
		want []string
		err  string
	}{
		{args: nil, want: []string{}},
		{args: []string{"-model", "m", "text"}, want: []string{"--model", "m", "text"}},
		{args: []string{"text", "-model=m", "-json"}, want: []string{"text", "--model=m", "--json"}},
		{args: []string{"--model", "m", "--json=false"}, want: []string{"--model", "m", "--json=false"}},
		// A flag's value is never rewritten, whatever it looks like.
		{args: []string{"--model", "-json", "-json"}, want: []string{"--model", "-json", "--json"}},
		{args: []string{"-model", "-bogus"}, want: []string{"--model", "-bogus"}},
		{args: []string{"-o", "-json"}, want: []string{"-o", "-json"}},
		// Nothing after "--" is touched.
		{args: []string{"-json", "--", "-model", "-bogus"}, want: []string{"--json", "--", "-model", "-bogus"}},
		// Shorthands stay; --o, which package flag accepted, becomes -o.
		{args: []string{"-o", "d", "-v", "x"}, want: []string{"-o", "d", "-v", "x"}},
		{args: []string{"--o", "d", "--v"}, want: []string{"-o", "d", "-v"}},
		{args: []string{"--o=d", "-odir", "-vo", "d"}, want: []string{"-o=d", "-odir", "-vo", "d"}},
		{args: []string{"-", "--output", "d"}, want: []string{"-", "--output", "d"}},
		{args: []string{"-help"}, want: []string{"--help"}},
		{args: []string{"-h"}, want: []string{"-h"}},
		// Unknown long names are left to pflag, which names them.
		{args: []string{"--bogus"}, want: []string{"--bogus"}},
		{args: []string{"-bogus"}, err: "unknown flag: -bogus"},
		{args: []string{"-bogus=1"}, err: "unknown flag: -bogus"},
		{args: []string{"-test.v"}, err: "unknown flag: -test.v"},
		{args: []string{"text", "-1"}, err: "unknown flag: -1 (arguments that begin with - go after --)"},
	}
	for _, c := range cases {
		got, err := normalizeArgs(newSet().fs, c.args)
		switch {
		case c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err)):
			t.Errorf("normalizeArgs(%q): %q, %v; want error %q", c.args, got, err, c.err)
		case c.err == "" && (err != nil || !reflect.DeepEqual(got, c.want)):
			t.Errorf("normalizeArgs(%q) = %q, %v; want %q", c.args, got, err, c.want)
		}
	}

	// The rewritten arguments parse to the values they meant.
	s := newSet()
	if err := parseFlags(s.fs, []string{"a", "-model", "-m", "b", "--o", "-d", "-json", "-v", "--", "-model"}); err != nil {
		t.Fatal(err)
	}
	if *s.model != "-m" || *s.out != "-d" || !*s.json || !*s.verbose || !reflect.DeepEqual(s.fs.Args(), []string{"a", "b", "-model"}) {
		t.Errorf("model %q, output %q, json %v, verbose %v, args %q", *s.model, *s.out, *s.json, *s.verbose, s.fs.Args())
	}
}

type testFlagSet struct {
	fs            *pflag.FlagSet
	model, out    *string
	json, verbose *bool
}

// TestFlagErrorsAndHelp checks, for every command, that unknown flags in
// both spellings are usage errors naming the flag, that every help flag
// prints the command's help, and that a flag missing its value is named.
func TestFlagErrorsAndHelp(t *testing.T) {
	for _, c := range commands {
		for _, bad := range []string{"--bogus", "-bogus", "--bogus=1"} {
			code, out, errs := attnx(c.name, "positional", bad)
			want := "attnx " + c.name + ": unknown flag: " + strings.TrimSuffix(bad, "=1")
			if code != 2 || out != "" || !strings.HasPrefix(errs, want) || !strings.Contains(errs, "Run 'attnx help "+c.name+"' for usage.") {
				t.Errorf("attnx %s positional %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.name, bad, code, out, errs, want)
			}
		}
		for _, h := range []string{"-h", "--help", "-help"} {
			code, out, errs := attnx(c.name, "positional", h)
			if code != 0 || !strings.HasPrefix(out, "Usage: attnx "+c.name+" ") || !strings.Contains(out, "\nFlags:\n") || errs != "" {
				t.Errorf("attnx %s positional %s: exit %d, stdout %q, stderr %q; want exit 0 and the help", c.name, h, code, out, errs)
			}
		}
	}
	code, _, errs := attnx("translate", "abc", "--model")
	if code != 2 || !strings.HasPrefix(errs, "attnx translate: flag needs an argument: --model\n") {
		t.Errorf("translate abc --model: exit %d, stderr %q", code, errs)
	}
	code, _, errs = attnx("bench", "-q", "--steps", "x")
	if code != 2 || !strings.HasPrefix(errs, `attnx bench: invalid argument "x" for "--steps" flag`) {
		t.Errorf("bench --steps x: exit %d, stderr %q", code, errs)
	}
}

// TestExportFlagPlacement writes a model directory with the flags before,
// between and after the checkpoint, in every spelling of -o.
func TestExportFlagPlacement(t *testing.T) {
	ck := fixtureCkpt("luong-general_b1_l1")
	tmp := t.TempDir()
	for i, args := range [][]string{
		{"-o", "DIR", ck},
		{ck, "-o", "DIR", "--greedy"},
		{"--greedy", ck, "--output=DIR"},
		{"-greedy", ck, "--o", "DIR"},
		{ck, "-oDIR", "-greedy=false"},
		{"-o", "DIR", "--", ck},
	} {
		dir := filepath.Join(tmp, string(rune('a'+i)))
		for j := range args {
			args[j] = strings.Replace(args[j], "DIR", dir, 1)
		}
		code, out, errs := attnx(append([]string{"export"}, args...)...)
		if code != 0 || !strings.HasPrefix(out, "wrote "+dir+" from checkpoint.pt\n") {
			t.Errorf("attnx export %q: exit %d, stdout %q, stderr %q", args, code, out, errs)
			continue
		}
		greedy := strings.Contains(strings.Join(args, " "), "greedy") && !strings.Contains(strings.Join(args, " "), "greedy=false")
		if _, err := os.Stat(filepath.Join(dir, "greedy.onnx")); (err == nil) != greedy {
			t.Errorf("attnx export %q: greedy.onnx exists: %v, want %v", args, err == nil, greedy)
		}
	}
	// After "--", an argument that looks like a flag is the checkpoint.
	code, _, errs := attnx("export", "-o", filepath.Join(tmp, "z"), "--", "-model.pt")
	if code != 1 || !strings.Contains(errs, "-model.pt: no such file or directory") {
		t.Errorf("export -- -model.pt: exit %d, stderr %q", code, errs)
	}
	// inspect takes its flag on either side.
	dir := filepath.Join(tmp, "a")
	for _, args := range [][]string{{"inspect", dir, "--json"}, {"inspect", "-json", dir}} {
		code, out, errs := attnx(args...)
		if code != 0 || !strings.HasPrefix(out, "{\n  \"dir\": \""+dir+"\"") {
			t.Errorf("attnx %q: exit %d, stdout %.80q, stderr %q", args, code, out, errs)
		}
	}
}

// TestTranslateFlagsAfterText checks that flags after the text are flags,
// and that after "--" every argument is text, "--model" included.
func TestTranslateFlagsAfterText(t *testing.T) {
	model := translateTestModel(t)
	cases := []struct {
		args []string
		out  string
	}{
		{[]string{"abc", "--model", model, "--max-len", "8"}, "abc -> lfffffff\n"},
		{[]string{"abc", "-model=" + model, "hello", "-max-len", "8"}, "abc -> lfffffff\nhello -> jmjjlll\n"},
		{[]string{"--max-len=8", "abc", "--engine", "steps", "--model", model}, "abc -> lfffffff\n"},
	}
	for _, c := range cases {
		code, out, errs := attnx(append([]string{"translate"}, c.args...)...)
		if code != 0 || out != c.out {
			t.Errorf("attnx translate %q: exit %d, stdout %q, stderr %q; want %q", c.args, code, out, errs, c.out)
		}
	}

	// "--model" after "--" is text: the same translation as the line
	// "--model" read from stdin (its '-' are not in the vocabulary, so
	// --unk maps them to <unk>).
	code, fromStdin, errs := attnxStdin("--model\n", "translate", "--model", model, "--unk", "--max-len", "8")
	if code != 0 || !strings.HasPrefix(fromStdin, "--model -> ") {
		t.Fatalf("stdin --model: exit %d, stdout %q, stderr %q", code, fromStdin, errs)
	}
	code, out, errs := attnx("translate", "--model", model, "--unk", "--max-len", "8", "--", "--model")
	if code != 0 || out != fromStdin {
		t.Errorf("translate --model DIR -- --model: exit %d, stdout %q, stderr %q; want %q", code, out, errs, fromStdin)
	}

	// An unknown flag after the text is a usage error naming it, and
	// nothing is translated.
	code, out, errs = attnx("translate", "--model", model, "abc", "--bogus")
	if code != 2 || out != "" || !strings.HasPrefix(errs, "attnx translate: unknown flag: --bogus\n") {
		t.Errorf("translate abc --bogus: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestToolkitFlagSpellings: a toolkit's spelling of a decoding option is
// answered with the attnx flag that does it (or that attnx does it by
// default), where it was a bare "unknown flag"; fairseq's --max-len-b is
// accepted as --max-len B+1.
func TestToolkitFlagSpellings(t *testing.T) {
	model := translateTestModel(t)
	for _, c := range []struct{ flag, want string }{
		{"--nbest", "unknown flag --nbest: attnx's is --n-best"},
		{"--lenpen", "unknown flag --lenpen: attnx's is --length-penalty"},
		{"--beam-size", "unknown flag --beam-size: attnx's is --beam"},
		{"--beam_size", "unknown flag --beam_size: attnx's is --beam"},
		{"--batch-size", "unknown flag --batch-size: attnx's is --batch"},
		{"--unkpen", "unknown flag --unkpen: attnx's is --unk-penalty"},
		{"-n_best", "unknown flag -n_best: attnx's is --n-best"},
		{"-replace_unk", "unknown flag -replace_unk: attnx's is --replace-unk"},
		{"--remove-bpe", "unknown flag --remove-bpe: attnx does this by default"},
		{"--bogus", "unknown flag: --bogus"},
	} {
		code, _, stderr := attnx("translate", "--model", model, c.flag, "2", "abc")
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, %q; want %q", c.flag, code, stderr, c.want)
		}
	}
	_, b, _ := attnx("translate", "--model", model, "--max-len-b", "3", "--json", "abc")
	_, l, _ := attnx("translate", "--model", model, "--max-len", "4", "--json", "abc")
	if b == "" || b != l {
		t.Errorf("--max-len-b 3 gave %q, --max-len 4 %q", b, l)
	}
	if code, _, stderr := attnx("translate", "--model", model, "--max-len-b", "3", "--max-len", "4", "abc"); code != 2 || !strings.Contains(stderr, "not with --max-len") {
		t.Errorf("--max-len-b with --max-len: exit %d, %q", code, stderr)
	}
}
