package subword

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
)

// TestSentencePieceLive trains fresh models with spm_train (both model
// types, other vocabulary sizes and coverage than the fixtures, and a
// model type per normalisation rule) and compares every line of the corpus
// with spm_encode's pieces and spm_decode's text, so that the comparison
// does not rest on the committed fixtures alone.
func TestSentencePieceLive(t *testing.T) {
	train := testenv.Command(t, "spm_train", "sentencepiece")
	encode := testenv.Command(t, "spm_encode", "sentencepiece")
	decode := testenv.Command(t, "spm_decode", "sentencepiece")
	dir := t.TempDir()
	corpus := filepath.Join("testdata", "corpus.txt")
	lines := readLines(t, corpus)
	cases := []struct{ name, args string }{
		{"unigram-500-nfkc", "--model_type=unigram --vocab_size=500 --character_coverage=0.98"},
		{"bpe-700-nfkc", "--model_type=bpe --vocab_size=700 --character_coverage=0.98"},
		{"bpe-600-identity-split-digits", "--model_type=bpe --vocab_size=600 --normalization_rule_name=identity --split_digits=true"},
		{"unigram-900-bytes", "--model_type=unigram --vocab_size=900 --byte_fallback=true --character_coverage=0.99"},
		{"char", "--model_type=char --character_coverage=0.999"},
		{"word-2000", "--model_type=word --vocab_size=2000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prefix := filepath.Join(dir, c.name)
			args := append([]string{"--input=" + corpus, "--model_prefix=" + prefix, "--num_threads=2", "--minloglevel=2"}, strings.Fields(c.args)...)
			if out, err := exec.Command(train, args...).CombinedOutput(); err != nil {
				t.Fatalf("spm_train %s: %v\n%s", c.args, err, out)
			}
			model := prefix + ".model"
			pieces := run(t, encode, corpus, "--model="+model, "--output_format=piece")
			decoded := run(t, decode, writeTemp(t, dir, strings.Join(pieces, "\n")+"\n"), "--model="+model, "--input_format=piece")
			sp, err := LoadSentencePiece(model)
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i, line := range lines {
				got := strings.Join(sp.Encode(line), " ")
				var want []string
				if pieces[i] != "" {
					want = strings.Split(pieces[i], " ")
				}
				if got != pieces[i] || sp.Decode(want) != decoded[i] {
					if bad++; bad <= 3 {
						t.Errorf("line %d %q:\n got  %s (%q)\n want %s (%q)", i+1, line, got, sp.Decode(want), pieces[i], decoded[i])
					}
				}
			}
			if bad > 0 {
				t.Fatalf("%d of %d lines differ from spm_encode/spm_decode", bad, len(lines))
			}
			t.Logf("%d lines identical to spm_encode and spm_decode", len(lines))
		})
	}
}

func writeTemp(t *testing.T, dir, text string) string {
	f, err := os.CreateTemp(dir, "in")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// run runs a SentencePiece tool on a file and returns its output lines.
func run(t *testing.T, tool, input string, args ...string) []string {
	t.Helper()
	in, err := os.Open(input)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd := exec.Command(tool, args...)
	cmd.Stdin = in
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", tool, args, err, stderr.String())
	}
	s := strings.TrimSuffix(string(out), "\n")
	return strings.Split(s, "\n")
}

// TestSentencePieceVocabularyLive compares SetVocabulary with spm_encode
// --vocabulary (the same constraint): every other piece of each fixture
// model is left out of the vocabulary.
func TestSentencePieceVocabularyLive(t *testing.T) {
	encode := testenv.Command(t, "spm_encode", "sentencepiece")
	dir := t.TempDir()
	corpus := filepath.Join("testdata", "corpus.txt")
	lines := readLines(t, corpus)
	for _, name := range []string{"unigram", "bpe"} {
		t.Run(name, func(t *testing.T) {
			model := filepath.Join("testdata", name+".model")
			sp, err := LoadSentencePiece(model)
			if err != nil {
				t.Fatal(err)
			}
			var vocab []string
			var file strings.Builder
			for id := 0; id < sp.Size(); id += 2 {
				vocab = append(vocab, sp.Piece(id))
				file.WriteString(sp.Piece(id) + "\t1\n")
			}
			vf := writeTemp(t, dir, file.String())
			want := run(t, encode, corpus, "--model="+model, "--output_format=piece", "--vocabulary="+vf, "--vocabulary_threshold=1")
			if err := sp.SetVocabulary(vocab); err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i, line := range lines {
				if got := strings.Join(sp.Encode(line), " "); got != want[i] {
					if bad++; bad <= 3 {
						t.Errorf("line %d %q:\n got  %s\n want %s", i+1, line, got, want[i])
					}
				}
			}
			if bad > 0 {
				t.Fatalf("%d of %d lines differ from spm_encode --vocabulary", bad, len(lines))
			}
			t.Logf("%d lines identical to spm_encode --vocabulary (%d of %d pieces allowed)", len(lines), len(vocab), sp.Size())
		})
	}
}
