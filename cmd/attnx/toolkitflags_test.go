package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolkitSpellingsAnswered: the toolkits' real spellings that were a
// bare "unknown flag" get the attnx equivalent, or why attnx has none; a
// spelling of no toolkit (-random_sampling: OpenNMT-py's flags are
// -random_sampling_topk, _topp and _temp) gets no hint.
func TestToolkitSpellingsAnswered(t *testing.T) {
	model := translateTestModel(t)
	for _, c := range []struct{ flag, want string }{
		{"-max_length_ratio", "unknown flag -max_length_ratio: attnx's is --max-len-ratio (OpenNMT-py's -max_length_ratio)"},
		{"-random_sampling_topk", "unknown flag -random_sampling_topk: attnx's is --sampling --sampling-topk K"},
		{"-random_sampling_topp", "unknown flag -random_sampling_topp: attnx's is --sampling --sampling-topp P"},
		{"-random_sampling_temp", "unknown flag -random_sampling_temp: attnx's is --sampling --temperature T"},
		{"--no-repeat-ngram-size", "unknown flag --no-repeat-ngram-size: attnx's is --no-repeat-ngram (JoeyNMT's no_repeat_ngram_size, with --rules spec or joeynmt; fairseq 0.12.2's"},
		{"--max-sentences", "unknown flag --max-sentences: attnx's is --batch (fairseq's --max-sentences"},
		{"--post-process", "unknown flag --post-process: attnx does this by default (the model's subword pieces are joined"},
		{"--unnormalized", "unknown flag --unnormalized: attnx's is --length-penalty 0"},
		{"-tgt", "--tgt FILE holds the references of --src FILE's lines: give --src FILE too"},
		{"-attn_debug", "unknown flag -attn_debug: attnx's is --json --attention"},
		{"-report_time", "unknown flag -report_time: attnx does this by default (with --src a final line on stderr gives the time"},
		{"-random_sampling", "unknown flag: -random_sampling (arguments that begin with - go after --)"},
	} {
		code, out, stderr := attnx("translate", "--model", model, c.flag, "2", "abc")
		if code != 2 || out != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, %q; want %q", c.flag, code, stderr, c.want)
		}
	}
}

// TestModelFlagOnce: --model takes one model directory; an ensemble
// repeats it. OpenNMT-py's ensemble spelling -model A B was decoded with
// A, B translated as a sentence: it is refused, naming attnx's spelling
// (--model A --model B), and nothing is translated; a directory given
// twice is refused; text after the directory still is translated.
func TestModelFlagOnce(t *testing.T) {
	model := translateTestModel(t)
	other := t.TempDir()
	ckpt := filepath.Join(other, "model_step_1000.pt")
	os.WriteFile(ckpt, []byte("not read"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-model", model, other}, "-model " + model + " " + other + ": attnx's is --model DIR, one model directory (OpenNMT-py's ensemble -model A B is --model A --model B)"},
		{[]string{"--model", model, ckpt, "--beam", "2"}, "would be translated as a sentence"},
		{[]string{"-model=" + model, "b.pt"}, "-model " + model + " b.pt: attnx's is --model DIR"},
		{[]string{"--model", model, "--model", model, "abc"}, `invalid argument "` + model + `" for "--model" flag: ` + model + " is given twice: each --model adds a member of an ensemble"},
		{[]string{"--model", model, "--avg-raw-probs", "abc"}, "--avg-raw-probs combines the members of an ensemble: give several --model"},
	} {
		code, out, stderr := attnx(append([]string{"translate"}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %q", c.args, code, out, stderr, c.want)
		}
	}
	for _, args := range [][]string{{"-model", model, "abc"}, {"-model", model, "--unk", "--", other}} {
		if code, out, stderr := attnx(append([]string{"translate"}, args...)...); code != 0 || !strings.HasPrefix(out, args[len(args)-1]+" -> ") {
			t.Errorf("%q: exit %d, %q %s", args, code, out, stderr)
		}
	}
}

// TestTranslateRulesLack: attnx translate refuses, by its flags, what the
// rules chosen do not implement; --no-repeat-ngram and
// --repetition-penalty under OpenNMT-py's rules left the output as it was.
func TestTranslateRulesLack(t *testing.T) {
	model := translateTestModel(t)
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--rules", "opennmt", "--beam", "3", "--no-repeat-ngram", "2"}, `--no-repeat-ngram = 2: --rules "opennmt" do not implement it: OpenNMT-py has no such option (its -block_ngram_repeat is --block-ngram-repeat`},
		{[]string{"--rules", "opennmt", "--beam", "3", "--repetition-penalty", "1.5"}, `--repetition-penalty = 1.5: --rules "opennmt" do not implement it: neither OpenNMT-py nor fairseq has a repetition penalty (it goes with --rules spec, joeynmt)`},
		{[]string{"--rules", "fairseq", "--beam", "3", "--length-penalty-form", "wu"}, "--length-penalty-form wu with --rules fairseq: fairseq ranks by score / len ** lenpen only"},
		{[]string{"--rules", "joeynmt", "--beam", "3", "--length-penalty-form", "power"}, "--length-penalty-form power with --rules joeynmt: JoeyNMT's beam_alpha is Wu's penalty only"},
	} {
		code, out, stderr := attnx(append(append([]string{"translate", "--model", model}, c.flags...), "abc")...)
		if code != 2 || out != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q %q; want %q", c.flags, code, out, stderr, c.want)
		}
	}
	if code, out, stderr := attnx("translate", "--model", model, "--rules", "spec", "--beam", "3", "--no-repeat-ngram", "2", "--repetition-penalty", "1.5", "abc"); code != 0 || !strings.HasPrefix(out, "abc -> ") {
		t.Errorf("repetition rules under spec: exit %d, %q %s", code, out, stderr)
	}
}
