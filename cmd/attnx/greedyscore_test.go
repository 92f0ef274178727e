package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// TestGreedyScoresWritten: with --beam 1 (onmt_translate -beam_size 1,
// whose output is expected/greedy.txt) every surface writes the greedy
// translation's score, on the loop engine (greedy.onnx) and the steps
// engine: --json its one hypothesis, score, normalized_score and
// positional_scores (OpenNMT-py 3.5.1's avg penalty with alpha 1:
// normalized_score is the log-probs' sum over the tokens plus the start
// token); --with-score each line's text TAB that score; --format onmt
// PRED and PRED SCORE (to four decimals) for each sentence.
func TestGreedyScoresWritten(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	src := filepath.Join("..", "..", "testdata", "toolkits", "onmt-sp")
	dir := exportModel(t, filepath.Join(src, "model.pt"), "--greedy")
	test := filepath.Join(src, "test.src")
	want := readToolkitLines(t, filepath.Join(src, "expected", "greedy.txt"))
	for _, engine := range []string{"loop", "steps"} {
		var flags []string
		if engine == "steps" {
			flags = []string{"--engine", "steps"}
		}
		tmp := t.TempDir()
		run := func(out string, more ...string) []string {
			t.Helper()
			args := append([]string{"translate", "--model", dir, "--src", test, "--beam", "1", "--output", filepath.Join(tmp, out)}, append(flags, more...)...)
			if code, _, stderr := attnx(args...); code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, stderr)
			}
			return readToolkitLines(t, filepath.Join(tmp, out))
		}
		var norms []float32
		for i, l := range run("json", "--json") {
			var r translate.ResultJSON
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			if len(r.Hypotheses) != 1 || r.Score == nil || r.NormalizedScore == nil || len(r.PositionalScores) != len(r.Tokens) {
				t.Fatalf("%s --json line %d: %s", engine, i+1, l)
			}
			var sum float64
			for _, p := range r.PositionalScores {
				sum += float64(p)
			}
			avg := sum / float64(len(r.Tokens)+1)
			if n := float64(*r.NormalizedScore); math.Abs(n-avg) > 1e-5*math.Abs(avg) || math.Abs(float64(*r.Score)-sum) > 1e-5*math.Abs(sum) || r.Hypotheses[0].NormalizedScore != *r.NormalizedScore {
				t.Errorf("%s sentence %d: score %v normalised %v; the %d log-probs sum to %v, over %d tokens + 1 %v", engine, i+1, *r.Score, n, len(r.PositionalScores), sum, len(r.Tokens), avg)
			}
			norms = append(norms, *r.NormalizedScore)
		}
		if len(norms) != len(want) {
			t.Fatalf("%s: %d results for %d sentences", engine, len(norms), len(want))
		}
		for i, l := range run("ws", "--with-score") {
			text, score, ok := strings.Cut(l, "\t")
			got, err := strconv.ParseFloat(score, 64)
			if !ok || err != nil || text != want[i] || float32(got) != norms[i] {
				t.Errorf("%s --with-score line %d: %q, want %q TAB %v", engine, i+1, l, want[i], norms[i])
			}
		}
		b := strings.Join(run("onmt", "--format", "onmt"), "\n")
		blocks := strings.Split(strings.TrimPrefix(b, "\n"), "\n\n")
		if len(blocks) != len(want) {
			t.Fatalf("%s --format onmt: %d blocks for %d sentences", engine, len(blocks), len(want))
		}
		for i, blk := range blocks {
			lines := strings.Split(blk, "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[1], fmt.Sprintf("PRED %d: ", i+1)) || lines[2] != fmt.Sprintf("PRED SCORE: %.4f", norms[i]) {
				t.Errorf("%s --format onmt block %d: %q, want SENT, PRED and PRED SCORE: %.4f", engine, i+1, blk, norms[i])
			}
		}
	}
}
