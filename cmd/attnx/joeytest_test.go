package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
)

// TestJoeyTestCommand runs `attnx test CONFIG -o PATH` on the configs
// JoeyNMT 2.3's own `joeynmt test` ran (testdata/toolkits/joey-*/test,
// make_joey_test.sh: its dev and test sets, seven settings, one with empty
// pairs in the dev set) with the export of the same best.ckpt: every file
// JoeyNMT wrote must be byte-identical to attnx's, and its result lines
// (Decoding on, Predicting, the sacreBLEU signatures, Evaluation result
// with each score to its printed precision, Translations saved to)
// identical, on the native
// backend and on ONNX Runtime, once the timings, the output folder and
// sacreBLEU's version field ("2.6.0" beside attnx's "2.6.0-attnx") are set
// aside.
func TestJoeyTestCommand(t *testing.T) {
	variants, err := os.ReadFile(filepath.Join("..", "..", "testdata", "toolkits", "joey_test_variants.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(variants)), "\n") {
		if f := strings.Split(l, "\t"); len(f) >= 2 && !strings.HasPrefix(l, "#") {
			names = append(names, f[0])
		}
	}
	if len(names) < 7 {
		t.Fatalf("joey_test_variants.tsv lists %d settings, want 7", len(names))
	}
	for _, kind := range []string{"joey-sp", "joey-bpe"} {
		t.Run(kind, func(t *testing.T) {
			src, err := filepath.Abs(filepath.Join("..", "..", "testdata", "toolkits", kind))
			if err != nil {
				t.Fatal(err)
			}
			model := filepath.Join(t.TempDir(), "m")
			if code, _, stderr := attnx("export", filepath.Join(src, "model", "best.ckpt"), "-o", model); code != 0 {
				t.Fatalf("export best.ckpt: exit %d: %s", code, stderr)
			}
			for _, backend := range []string{onnxrun.BackendGo, onnxrun.BackendORT} {
				t.Run(backend, func(t *testing.T) {
					if backend == onnxrun.BackendORT {
						err := onnxrun.Init()
						var native interface{ NativeOnly() bool }
						if errors.As(err, &native) && native.NativeOnly() {
							t.Skip("a build without cgo has no ONNX Runtime")
						}
						testenv.ORT(t, err)
					}
					compareJoeyTest(t, src, model, backend, names)
				})
			}
		})
	}
}

// compareJoeyTest runs attnx test with each config of names on backend and
// compares its files and lines with joeynmt test's (TestJoeyTestCommand).
func compareJoeyTest(t *testing.T, src, model, backend string, names []string) {
	files, lines := 0, 0
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			want := filepath.Join(src, "test", name)
			out := filepath.Join(t.TempDir(), "hyp")
			// The config's data paths are relative to where joeynmt
			// test ran: the fixture's test folder.
			t.Chdir(filepath.Join(src, "test"))
			code, _, stderr := attnx("test", name+".yaml", "--model", model, "--backend", backend, "-o", out)
			if code != 0 {
				t.Fatalf("attnx test %s.yaml: exit %d: %s", name, code, stderr)
			}
			entries, err := os.ReadDir(want)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, e := range entries {
				if e.Name() == "test.log" {
					continue
				}
				n++
				w, err := os.ReadFile(filepath.Join(want, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				g, err := os.ReadFile(filepath.Join(filepath.Dir(out), e.Name()))
				if err != nil {
					t.Errorf("%s: JoeyNMT wrote it, attnx did not: %v", e.Name(), err)
					continue
				}
				if string(g) != string(w) {
					t.Errorf("%s differs from JoeyNMT's:\n%s", e.Name(), firstDiff(string(w), string(g)))
				}
			}
			if n < 2 {
				t.Fatalf("%s holds %d output files of JoeyNMT's, want the dev and test sets'", want, n)
			}
			files += n
			log, err := os.ReadFile(filepath.Join(want, "test.log"))
			if err != nil {
				t.Fatal(err)
			}
			wl, gl := joeyResultLines(string(log)), joeyResultLines(stderr)
			if len(wl) < 8 {
				t.Fatalf("test.log holds %d result lines, want at least 8:\n%s", len(wl), log)
			}
			if strings.Join(gl, "\n") != strings.Join(wl, "\n") {
				t.Errorf("result lines differ from JoeyNMT's:\n%s", firstDiff(strings.Join(wl, "\n"), strings.Join(gl, "\n")))
			}
			lines += len(wl)
		})
	}
	t.Logf("%s on %s: %d output files and %d result lines compared with joeynmt test's", filepath.Base(src), backend, files, lines)
}

var (
	joeyLogLine  = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - INFO - (joeynmt\.(?:prediction|metrics) - .*)$`)
	joeySeconds  = regexp.MustCompile(`\d+\.\d{4}\[sec\]`)
	joeySavedTo  = regexp.MustCompile(`(Translations saved to: ).*/`)
	joeyResultRe = regexp.MustCompile(`^joeynmt\.(?:metrics - nrefs|prediction - (?:Decoding on|Predicting|Generation took|Evaluation result|Translations saved to))`)
)

// joeyResultLines picks joeynmt test's result lines out of a log, its
// timings and output folder replaced (the fixture's log names the folder
// make_joey_test.sh wrote in, on the machine that ran it; attnx's a
// temporary one), sacreBLEU's version field left out.
func joeyResultLines(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		m := joeyLogLine.FindStringSubmatch(l)
		if m == nil || !joeyResultRe.MatchString(m[1]) {
			continue
		}
		s := joeySeconds.ReplaceAllString(m[1], "T[sec]")
		s = joeySavedTo.ReplaceAllString(s, "${1}OUT/")
		s = strings.Replace(s, "|version:2.6.0-attnx", "|version:2.6.0", 1)
		out = append(out, s)
	}
	return out
}

// firstDiff shows the first line where two texts differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n  want " + a + "\n  got  " + b
		}
	}
	return "(same lines)"
}

// TestJoeyTestRefusals checks that attnx test refuses what it cannot do
// with an error naming the thing at fault, before it writes anything: a
// missing config, a model_dir without an export and no --model, a model
// exported from another toolkit, a dev file that is not there, a setting
// joeynmt test refuses.
func TestJoeyTestRefusals(t *testing.T) {
	fx, err := filepath.Abs(filepath.Join("..", "..", "testdata", "toolkits"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	joey, onmt := filepath.Join(tmp, "joey"), filepath.Join(tmp, "onmt")
	for _, e := range [][2]string{{filepath.Join(fx, "joey-sp", "model", "best.ckpt"), joey}, {filepath.Join(fx, "onmt-sp", "model.pt"), onmt}} {
		if code, _, stderr := attnx("export", e[0], "-o", e[1]); code != 0 {
			t.Fatalf("export %s: exit %d: %s", e[0], code, stderr)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(fx, "joey-sp", "test", "greedy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	data := filepath.Join(fx, "joey-sp", "test")
	good := strings.Replace(strings.Replace(string(cfg), "dev: valid", "dev: "+filepath.Join(data, "valid"), 1), "test: test", "test: "+filepath.Join(data, "test"), 1)
	if good == string(cfg) {
		t.Fatal("greedy.yaml has no data.dev: valid to replace")
	}
	okCfg := write("ok.yaml", good)
	noDev := write("nodev.yaml", strings.Replace(good, filepath.Join(data, "valid"), filepath.Join(tmp, "nothere"), 1))
	nbest := write("nbest.yaml", strings.Replace(good, "testing:\n", "testing:\n  n_best: 2\n", 1))
	out := filepath.Join(tmp, "out", "hyp")
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no config", []string{"test"}, 2, "one JoeyNMT config.yaml expected, got 0"},
		{"save scores", []string{"test", okCfg, "-s"}, 2, "--save-scores is not supported: attnx test writes no .scores and .tokens files"},
		{"missing config", []string{"test", filepath.Join(tmp, "none.yaml"), "--model", joey}, 1, "JoeyNMT config: open " + filepath.Join(tmp, "none.yaml")},
		{"model_dir without export", []string{"test", okCfg}, 2, `--model DIR is required: the config's model_dir "model_sp" holds no attnx export`},
		{"another toolkit's model", []string{"test", okCfg, "--model", onmt, "-o", out}, 1, onmt + " was not exported from a JoeyNMT checkpoint"},
		{"missing dev file", []string{"test", noDev, "--model", joey, "-o", out}, 1, "dev set: open " + filepath.Join(tmp, "nothere.en")},
		{"n_best above beam_size", []string{"test", nbest, "--model", joey, "-o", out}, 1, "testing.n_best 2: `n_best` must be smaller than or equal to `beam_size` (1)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := attnx(c.args...)
			if code != c.code || !strings.Contains(stderr, c.msg) || strings.Contains(stderr, "goroutine") {
				t.Errorf("attnx %s: exit %d, stderr %q; want exit %d and %q", strings.Join(c.args, " "), code, stderr, c.code, c.msg)
			}
			if _, err := os.Stat(filepath.Dir(out)); err == nil {
				t.Errorf("%s exists after a refusal", filepath.Dir(out))
			}
		})
	}
	// The same config with its data found decodes (the refusals are the
	// settings', not the files').
	if err := os.Mkdir(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := attnx("test", okCfg, "--model", joey, "-o", out); code != 0 || !strings.Contains(stderr, "Evaluation result (greedy): bleu:   0.18") {
		t.Errorf("attnx test ok.yaml: exit %d: %s", code, stderr)
	}
	// A test set without its .de file is decoded and not scored, as
	// JoeyNMT's has_trg: the same translations, no Evaluation result.
	src, err := os.ReadFile(filepath.Join(data, "test.en"))
	if err != nil {
		t.Fatal(err)
	}
	write("noref.en", string(src))
	noRef := write("noref.yaml", strings.Replace(good, "test: "+filepath.Join(data, "test"), "test: "+filepath.Join(tmp, "noref"), 1))
	code, _, stderr := attnx("test", noRef, "--model", joey, "-o", out)
	if code != 0 || strings.Count(stderr, "Evaluation result") != 1 || !strings.Contains(stderr, "Translations saved to: "+out+".test.") {
		t.Errorf("attnx test noref.yaml: exit %d, want the dev set's Evaluation result alone and the test set saved: %s", code, stderr)
	}
	got, err := os.ReadFile(out + ".test")
	if err != nil {
		t.Fatal(err)
	}
	if want, err := os.ReadFile(filepath.Join(data, "greedy", "hyp.test")); err != nil || string(got) != string(want) {
		t.Errorf("the test set without references: %s differs from joeynmt test's greedy hyp.test (%v)", out+".test", err)
	}
}
