package translate_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// copyModelDir exports testdata/toolkits/onmt-sum-copy (OpenNMT-py
// 2.3.0's copy-attention summarizer) into a temporary directory.
func copyModelDir(t *testing.T) string {
	t.Helper()
	testenv.ORT(t, onnxrun.Init())
	dir := filepath.Join(t.TempDir(), "m")
	if _, err := modeldir.Export("../testdata/toolkits/onmt-sum-copy/model.pt", dir, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// secretText is one client's sentence, its words outside the
// vocabulary the ones another client must not read.
const secretText = "patient Jane Rosalind Okonkwo , born 1987-03-14 , card 4111111111111111 , was admitted in Leeds ."

// probeRow is a row of the ids from Vs up, as a client that read
// src_vocab_size would send them.
func probeRow(vs, n int) []int64 {
	row := make([]int64, n)
	for i := range row {
		row[i] = int64(vs + i)
	}
	return row
}

// TestCopyIDsFromCallersRefused: ids from the source vocabulary's size up
// given by a caller, through every call that takes rows, are refused with
// an *InputError naming the vocabulary's size, after another caller's
// text put its words outside the vocabulary through the same Translator;
// the text's own words still reach its result.
func TestCopyIDsFromCallersRefused(t *testing.T) {
	dir := copyModelDir(t)
	tr, err := translate.Open(dir, translate.Options{Engine: translate.EngineSteps, Beam: 1, Rules: translate.RulesSpec, NoModelDefaults: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := context.Background()
	res, err := tr.Translate(ctx, []string{secretText})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(res[0].SourceTokens, " "), secretText; got != want {
		t.Fatalf("source tokens %q, want the text's own %q", got, want)
	}
	vs := tr.Info().SrcVocab
	sched, err := tr.NewScheduler(decode.SchedulerConfig{MaxSlots: 4, MaxQueue: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close()
	// The sentence has 9 words outside the vocabulary.
	row := probeRow(vs, 9)
	calls := []struct {
		name string
		call func() ([]translate.Result, error)
	}{
		{"TranslateIDs", func() ([]translate.Result, error) { return tr.TranslateIDs(ctx, [][]int64{row}) }},
		{"TranslateIDsCall", func() ([]translate.Result, error) {
			return tr.TranslateIDsCall(ctx, [][]int64{row}, translate.CallOptions{MaxLen: 1})
		}},
		{"Scheduler.TranslateIDs", func() ([]translate.Result, error) {
			return sched.TranslateIDs(ctx, [][]int64{row}, translate.CallOptions{MaxLen: 1})
		}},
		{"TranslateCorpusIDs", func() ([]translate.Result, error) {
			var out []translate.Result
			_, err := tr.TranslateCorpusIDs(ctx, [][]int64{row}, translate.CorpusOptions{}, func(_ int, r translate.Result) error {
				out = append(out, r)
				return nil
			}, nil)
			return out, err
		}},
		{"TranslateInputs", func() ([]translate.Result, error) {
			var out []translate.Result
			err := tr.TranslateInputs(ctx, []translate.Input{{IDs: row, IsIDs: true, Where: "argument 1"}}, func(_ translate.Input, r translate.Result) error {
				out = append(out, r)
				return nil
			})
			return out, err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			res, err := c.call()
			var ie *translate.InputError
			if !errors.As(err, &ie) {
				var read []string
				for _, r := range res {
					read = append(read, r.SourceTokens...)
				}
				t.Fatalf("ids from Vs = %d up: err %v, read %q: want an *InputError", vs, err, read)
			}
			if ie.Row != 0 || ie.Position != 0 || !strings.Contains(ie.Msg, fmt.Sprint(vs)) {
				t.Errorf("refusal row %d position %d %q: want row 0, position 0, naming the vocabulary size %d", ie.Row, ie.Position, ie.Msg, vs)
			}
			if len(res) != 0 {
				t.Errorf("%d results beside the refusal", len(res))
			}
		})
	}
}

// TestCopyVocabularyPerRequest: two clients decode at the same time, one
// its own sentences with words outside the vocabulary (each request new
// ones), the other probing the ids from Vs up; the prober is refused every
// time, and every sentence's source tokens and copied words are its own.
func TestCopyVocabularyPerRequest(t *testing.T) {
	dir := copyModelDir(t)
	tr, err := translate.Open(dir, translate.Options{Engine: translate.EngineSteps, Beam: 1, Rules: translate.RulesSpec, NoModelDefaults: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	sched, err := tr.NewScheduler(decode.SchedulerConfig{MaxSlots: 8, MaxQueue: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close()
	ctx := context.Background()
	vs := tr.Info().SrcVocab
	const rounds = 12
	var wg sync.WaitGroup
	errs := make(chan error, rounds+1)
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		for i := range rounds {
			text := fmt.Sprintf("patient Zq%dxa Okonkwo%d , card 41111%d , was admitted in Leeds%d .", i, i, i, i)
			own := strings.Fields(text)
			res, err := sched.Translate(ctx, []string{text}, translate.CallOptions{MaxLen: 12})
			if err != nil {
				errs <- fmt.Errorf("round %d: %w", i, err)
				return
			}
			if !slices.Equal(res[0].SourceTokens, own) {
				errs <- fmt.Errorf("round %d: source tokens %q, want %q", i, res[0].SourceTokens, own)
			}
			for _, w := range res[0].OutputTokens {
				if strings.ContainsAny(w, "0123456789") && !slices.Contains(own, w) {
					errs <- fmt.Errorf("round %d: copied %q, not a word of %q", i, w, text)
				}
			}
		}
	})
	wg.Go(func() {
		// Until the other client is done, and once more after: the table
		// of a shared vocabulary would hold its words by then.
		for i := 0; ; i++ {
			last := false
			select {
			case <-done:
				last = true
			default:
			}
			res, err := sched.TranslateIDs(ctx, [][]int64{probeRow(vs, 1)}, translate.CallOptions{MaxLen: 1})
			var ie *translate.InputError
			if !errors.As(err, &ie) {
				var words []string
				for _, r := range res {
					words = append(words, r.SourceTokens...)
				}
				errs <- fmt.Errorf("probe %d: err %v, read %q: want an *InputError", i, err, words)
				return
			}
			if last {
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
