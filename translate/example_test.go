package translate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/translate"
)

// exampleModelDir exports the fixture checkpoint
// testdata/fixtures/bahdanau_b1_l1 (a small random Bahdanau model, Vs=19,
// Vt=23) with made-up character vocabularies, as `attnx export` does. The
// model lies in a subfolder of root, beside the vocabularies; the caller
// removes root.
func exampleModelDir() (dir, root string, err error) {
	tmp, err := os.MkdirTemp("", "attnx-example-")
	if err != nil {
		return "", "", err
	}
	vocab := func(name string, n int) (string, error) {
		v := []string{"<pad>", "<sos>", "<eos>", "<unk>"}
		for c := 'a'; len(v) < n; c++ {
			v = append(v, string(c))
		}
		data, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		path := filepath.Join(tmp, name)
		return path, os.WriteFile(path, data, 0o644)
	}
	src, err := vocab("src.json", 19)
	if err != nil {
		return "", tmp, err
	}
	tgt, err := vocab("tgt.json", 23)
	if err != nil {
		return "", tmp, err
	}
	dir = filepath.Join(tmp, "model")
	_, err = modeldir.Export("../testdata/fixtures/bahdanau_b1_l1/checkpoint.pt", dir, modeldir.Options{SrcVocab: src, TgtVocab: tgt})
	return dir, tmp, err
}

// Without MaxLen, a row of n tokens decodes at most 2n+10 tokens.
func ExampleOpen() {
	dir, root, err := exampleModelDir()
	defer os.RemoveAll(root)
	if err != nil {
		log.Fatal(err)
	}

	tr, err := translate.Open(dir, translate.Options{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	info := tr.Info()
	fmt.Println(info.Config, "engine", tr.Engine(), "device", tr.Device())

	res, err := tr.TranslateIDs(context.Background(), [][]int64{{5, 9, 2, 7}, {11, 4}})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res {
		fmt.Println(r.Source, "->", r.Tokens, len(r.Attention), "attention rows of", len(r.Attention[0]))
	}
	// Output:
	// bahdanau H=13 L=1 Vs=19 Vt=23 engine steps device cpu
	// [5 9 2 7] -> [13 0 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15] 18 attention rows of 4
	// [11 4] -> [13 0 15 15 15 15 15 15 15 15 15 15 15 15] 14 attention rows of 2
}

// The fixture model is random, so its outputs are not meaningful; with no
// EOS emitted, each row stops at MaxLen tokens. PAD (id 0) is left out of
// Text.
func ExampleTranslator_Translate() {
	dir, root, err := exampleModelDir()
	defer os.RemoveAll(root)
	if err != nil {
		log.Fatal(err)
	}

	tr, err := translate.Open(dir, translate.Options{Threads: 1, MaxLen: 8})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	res, err := tr.Translate(context.Background(), []string{"abc", "hello"})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res {
		fmt.Printf("%s -> %s %v\n", strings.Join(r.SourceTokens, ""), r.Text, r.Tokens)
	}
	_, err = tr.Translate(context.Background(), []string{"abc", "abz"})
	fmt.Println(err)
	// Output:
	// abc -> lfffffff [15 9 9 9 9 9 9 9]
	// hello -> jmjjlll [13 16 13 0 13 15 15 15]
	// translate: input row 1: character 'z' (U+007A) at position 2 is not in the source vocabulary (set UnknownToUNK to map unknown characters to <unk> (id 3))
}

// Beam search keeps 3 hypotheses per input; Result.Hypotheses lists the
// best 2 with their scores (the sum of the tokens' log-probabilities) and
// normalised scores (score / length ** LengthPenalty, here the default 1),
// and Text is the best one's. Here beam search finds an output the model
// gives a higher probability than greedy decoding's "lfffffff".
func ExampleOptions_beam() {
	dir, root, err := exampleModelDir()
	defer os.RemoveAll(root)
	if err != nil {
		log.Fatal(err)
	}

	tr, err := translate.Open(dir, translate.Options{Threads: 1, MaxLen: 8, Beam: 3, NBest: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	res, err := tr.Translate(context.Background(), []string{"abc"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("best:", res[0].Text)
	for _, h := range res[0].Hypotheses {
		fmt.Printf("%s %.4f %.4f\n", h.Text, h.Score, h.NormalizedScore)
	}
	// Output:
	// best: ffffffff
	// ffffffff -13.1898 -1.6487
	// lfffffff -13.4760 -1.6845
}

// A fairseq model as fairseq-train left it (checkpoints, data-bin, its BPE
// codes beside the checkpoint), exported with no options and opened with
// zero Options, decodes as fairseq-interactive does by default (beam 5,
// fairseq's SequenceGenerator, --max-len-b 200): these are the D- lines
// fairseq-interactive wrote for the same sentences
// (testdata/toolkits/fairseq-long/expected/default.txt).
func ExampleOpen_toolkitDefaults() {
	dir, err := os.MkdirTemp("", "attnx-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if _, err := modeldir.Export("../testdata/toolkits/fairseq-long/checkpoint_best.pt", dir, modeldir.Options{}); err != nil {
		log.Fatal(err)
	}
	tr, err := translate.Open(dir, translate.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	res, err := tr.Translate(context.Background(), []string{
		"Odile made a big difference to our perception of the hotel .",
		"Things have changed since 1991 .",
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res {
		fmt.Println(r.Text)
	}
	// Output:
	// Auf unserem Benutzen Sie unsere Zusammenarbeitung der Verfügung gestellt .
	// Deshalb über 51 Jahren 1991 Jahren .
}

// A summarizer trained with OpenNMT-py's copy attention (2.3.0's
// onmt_train, testdata/toolkits/onmt-sum-reuse) copies the names and
// sums outside its vocabulary from the source into its summaries, as
// onmt_translate does (these two with a margin: the gaps between their
// best candidates were 3.6% and 2.1% of their scores); the text is given
// as the toolkit read it, tokens separated by spaces.
func ExampleOpen_copyAttention() {
	dir, err := os.MkdirTemp("", "attnx-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if _, err := modeldir.Export("../testdata/toolkits/onmt-sum-reuse/model.pt", dir, modeldir.Options{}); err != nil {
		log.Fatal(err)
	}
	tr, err := translate.Open(dir, translate.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	res, err := tr.Translate(context.Background(), []string{
		"officials in lyon said on thursday that Nera , a farmer from Waneko , had signed a contract worth 207733 pounds with the university after 34 weeks of talks , according to a statement released late on thursday .",
		"at a meeting in geneva on tuesday , the bank named Ritu its new head ; the former farmer , born in Lori , takes over a staff of 6522 people and a budget of 81036 francs .",
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res {
		fmt.Println(r.Text)
	}
	// Output:
	// <t> Nera signs 207733 pounds contract with the university . </t>
	// <t> Ritu to lead the bank . </t>
}
