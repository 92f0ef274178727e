package translate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/modeldir"
)

// TestTranslateBlankAndInvalidInputs: a blank text gets the zero Result
// (as TranslateCorpus and Stream answer a blank line) where it failed the
// whole call, invalid UTF-8 is refused naming its row where it was
// translated silently, and an *InputError's row counts among all the
// texts, blank ones included, for Translate, TranslateCall and a
// Scheduler's Translate alike.
func TestTranslateBlankAndInvalidInputs(t *testing.T) {
	dir, _ := fixtureModel(t, fixtures.List(t)[0])
	tr, err := Open(dir, Options{Threads: 1, MaxLen: 5, Engine: EngineSteps})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	sched, err := tr.NewScheduler(decode.SchedulerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close()
	ctx := context.Background()
	calls := map[string]func([]string) ([]Result, error){
		"Translate":           func(s []string) ([]Result, error) { return tr.Translate(ctx, s) },
		"TranslateCall":       func(s []string) ([]Result, error) { return tr.TranslateCall(ctx, s, CallOptions{}) },
		"Scheduler.Translate": func(s []string) ([]Result, error) { return sched.Translate(ctx, s, CallOptions{}) },
	}
	cases := []struct {
		name   string
		texts  []string
		blanks []int  // rows that get the zero Result
		row    int    // the refused row, -1 for none
		msg    string // the refusal's message holds it
	}{
		{"blank line among texts", []string{"abc", "", "ba"}, []int{1}, -1, ""},
		{"white space only", []string{" \t", "abc"}, []int{0}, -1, ""},
		{"all blank", []string{"", "  "}, []int{0, 1}, -1, ""},
		{"invalid UTF-8", []string{"abc", "a\xffb"}, nil, 1, "input row 1: invalid UTF-8 at byte 1"},
		{"invalid UTF-8 after a blank", []string{"", "\xc3"}, nil, 1, "input row 1: invalid UTF-8 at byte 0"},
		{"unknown character after a blank", []string{"", "ab", "abz"}, nil, 2, "input row 2: character 'z' (U+007A) at position 2"},
	}
	for name, call := range calls {
		for _, c := range cases {
			res, err := call(c.texts)
			if c.row >= 0 {
				var ie *InputError
				var re *RequestError
				if !errors.As(err, &ie) || ie.Row != c.row || !strings.Contains(err.Error(), c.msg) {
					t.Errorf("%s, %s: %v; want an *InputError of row %d saying %q", name, c.name, err, c.row, c.msg)
				} else if !errors.As(err, &re) || re.Row != c.row || re.Field != "" {
					t.Errorf("%s, %s: errors.As *RequestError: %+v", name, c.name, re)
				}
				continue
			}
			if err != nil || len(res) != len(c.texts) {
				t.Errorf("%s, %s: %d results, %v; want %d", name, c.name, len(res), err, len(c.texts))
				continue
			}
			for i, r := range res {
				isBlank := strings.TrimSpace(c.texts[i]) == ""
				switch {
				case isBlank && !reflect.DeepEqual(r, Result{}):
					t.Errorf("%s, %s: row %d (blank): %+v; want the zero Result", name, c.name, i, r)
				case !isBlank && (len(r.Tokens) == 0 || len(r.Hypotheses) != 1 || r.Score >= 0):
					t.Errorf("%s, %s: row %d: %d tokens, %d hypotheses, score %v; want a decoded, scored result", name, c.name, i, len(r.Tokens), len(r.Hypotheses), r.Score)
				}
			}
		}
	}
}

// TestTranslateLimitsAsToolkit: for a model whose toolkit limits a
// sentence's output by the longest source of its batch (attnx.json's
// defaults.batching, here JoeyNMT's), Translate with zero Options gives
// every text the limit TranslateCorpus gives it, where it gave each text
// the limit of its own length (issue 54: joey-sp 44 of 48 lines, onmt-bpe
// 47 of 48, against 48 with TranslateCorpus); PerSentenceLimits asks for
// the limit of each text's own length, as the text translated alone has.
func TestTranslateLimitsAsToolkit(t *testing.T) {
	dir, _ := fixtureModel(t, fixtures.List(t)[0])
	info, err := modeldir.ReadInfo(filepath.Join(dir, modeldir.InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	info.Defaults = &modeldir.Defaults{Rules: RulesJoeyNMT, MaxLenFactor: 1.5, Batching: &modeldir.Batching{Style: modeldir.BatchingJoeyNMT, Size: 10}}
	writeInfo(t, dir, info)
	texts := []string{"ab", "", "abcdefghijklmn", "cab"}
	ctx := context.Background()

	tr, err := Open(dir, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	got, err := tr.Translate(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	corpus := make([]Result, len(texts))
	if _, err := tr.TranslateCorpus(ctx, texts, 1, CorpusOptions{}, func(i int, r Result) error { corpus[i] = r; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		if !reflect.DeepEqual(got[i].Tokens, corpus[i].Tokens) {
			t.Errorf("row %d: Translate %v, TranslateCorpus %v", i, got[i].Tokens, corpus[i].Tokens)
		}
	}

	per, err := Open(dir, Options{Threads: 1, PerSentenceLimits: true})
	if err != nil {
		t.Fatal(err)
	}
	defer per.Close()
	gotPer, err := per.Translate(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	differ := 0
	for i, s := range texts {
		if s == "" {
			continue
		}
		alone, err := per.Translate(ctx, []string{s})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gotPer[i].Tokens, alone[0].Tokens) {
			t.Errorf("row %d, PerSentenceLimits: %v beside the others, %v alone", i, gotPer[i].Tokens, alone[0].Tokens)
		}
		if !reflect.DeepEqual(gotPer[i].Tokens, got[i].Tokens) {
			differ++
		}
	}
	// The random fixture rarely reaches EOS: its outputs run to their
	// limits, which differ for the short texts batched with the long one.
	if differ == 0 {
		t.Errorf("PerSentenceLimits gave the same outputs as the toolkit's batch limits (%v): the test shows nothing", got)
	}
}

// TestErrorClasses: each class of error a caller branches on matches its
// target with errors.Is or errors.As, so that a handler maps refusals
// (a *RequestError naming the field or the row) to 400 without calling
// CheckCall, a missing model to fs.ErrNotExist, a full queue and a
// closed Translator to the package's sentinels.
func TestErrorClasses(t *testing.T) {
	dir, _ := fixtureModel(t, fixtures.List(t)[0])
	noInfo := t.TempDir()
	noGreedy := filepath.Join(t.TempDir(), "m")
	if err := os.CopyFS(noGreedy, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(noGreedy, "greedy.onnx")); err != nil {
		t.Fatal(err)
	}
	noEncoder := filepath.Join(t.TempDir(), "m")
	if err := os.CopyFS(noEncoder, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(noEncoder, "encoder.onnx")); err != nil {
		t.Fatal(err)
	}
	onmt := filepath.Join(t.TempDir(), "m")
	if err := os.CopyFS(onmt, os.DirFS(noGreedy)); err != nil {
		t.Fatal(err)
	}
	info, err := modeldir.ReadInfo(filepath.Join(onmt, modeldir.InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	delete(info.Files, "greedy")
	info.Defaults = &modeldir.Defaults{Rules: RulesOpenNMT, Beam: 5}
	writeInfo(t, onmt, info)

	cases := []struct {
		name  string
		dir   string
		opt   Options
		is    error  // errors.Is target, or nil
		field string // the *RequestError's Field, "" for none expected
		msg   string
	}{
		{"missing directory", filepath.Join(dir, "nope"), Options{}, fs.ErrNotExist, "", "does not exist"},
		{"no attnx.json", noInfo, Options{}, fs.ErrNotExist, "", "has no attnx.json"},
		{"no encoder.onnx", noEncoder, Options{Engine: EngineSteps}, fs.ErrNotExist, "", "encoder model " + filepath.Join(noEncoder, "encoder.onnx") + " does not exist"},
		{"BanUNK on the loop engine", dir, Options{Engine: EngineLoop, BanUNK: true}, nil, "BanUNK", "BanUNK runs on the steps engine"},
		{"NBest over Beam", dir, Options{Beam: 2, NBest: 3}, nil, "NBest", "NBest = 3: want 1 <= NBest <= Beam = 2"},
		{"unknown engine", dir, Options{Engine: "fast"}, nil, "Engine", `unknown engine "fast"`},
		{"negative BatchSize", dir, Options{BatchSize: -1}, nil, "BatchSize", "BatchSize = -1"},
		{"setting the rules lack", dir, Options{Ratio: 0.5}, nil, "Ratio", "Ratio = 0.5"},
		{"rules table refusal", dir, Options{Rules: RulesFairseq, NoRepeatNgram: 2}, nil, "NoRepeatNgram", "NoRepeatNgram"},
		{"loop without greedy.onnx", noGreedy, Options{Engine: EngineLoop}, nil, "Engine", filepath.Join(noGreedy, "greedy.onnx") + " does not exist"},
		// OpenNMT-py's rules were refused on the loop engine first: the
		// missing graph is what the caller must hear of.
		{"loop, model defaults, no beam.onnx", onmt, Options{Engine: EngineLoop}, nil, "Engine", "needs beam.onnx, and " + filepath.Join(onmt, "attnx.json") + " names no beam model"},
		{"loop, greedy, names no greedy.onnx", onmt, Options{Engine: EngineLoop, Beam: 1}, nil, "Engine", "needs greedy.onnx, and " + filepath.Join(onmt, "attnx.json") + " names no greedy model (files.greedy)"},
	}
	for _, c := range cases {
		tr, err := Open(c.dir, c.opt)
		if err == nil {
			tr.Close()
			t.Errorf("%s: Open succeeded", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v; want it to say %q", c.name, err, c.msg)
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: %v: errors.Is %v is false", c.name, err, c.is)
		}
		var re *RequestError
		switch {
		case c.field == "" && errors.As(err, &re):
			t.Errorf("%s: %v is a *RequestError (field %q); want the model's error", c.name, err, re.Field)
		case c.field != "" && (!errors.As(err, &re) || re.Field != c.field || re.Row != -1):
			t.Errorf("%s: %v: errors.As *RequestError gives %+v; want field %s", c.name, err, re, c.field)
		}
	}

	tr, err := Open(dir, Options{Threads: 1, MaxLen: 4, Engine: EngineSteps})
	if err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		name  string
		opt   CallOptions
		field string
	}{
		{"call NBest over Beam", CallOptions{Beam: 2, NBest: 3}, "NBest"},
		{"call negative MaxLen", CallOptions{MaxLen: -1}, "MaxLen"},
		{"call unknown rules", CallOptions{Rules: "moses"}, "Rules"},
		{"call setting the rules lack", CallOptions{Ratio: new(0.5)}, "Ratio"},
	}
	for _, c := range calls {
		for _, err := range []error{tr.CheckCall(c.opt), func() error { _, err := tr.TranslateCall(context.Background(), []string{"abc"}, c.opt); return err }()} {
			var re *RequestError
			if !errors.As(err, &re) || re.Field != c.field || re.Row != -1 {
				t.Errorf("%s: %v: errors.As *RequestError gives %+v; want field %s", c.name, err, re, c.field)
			}
		}
	}
	_, err = tr.TranslateIDs(context.Background(), [][]int64{{5}, {99}})
	var re *RequestError
	if !errors.As(err, &re) || re.Row != 1 || re.Field != "" {
		t.Errorf("id outside the vocabulary: %v: *RequestError %+v; want row 1", err, re)
	}
	if _, err := tr.NewScheduler(decode.SchedulerConfig{MaxSlots: -1}); !errors.As(err, &re) || re.Field != "MaxSlots" {
		t.Errorf("NewScheduler MaxSlots -1: %v; want a *RequestError of MaxSlots", err)
	}
	sched, err := tr.NewScheduler(decode.SchedulerConfig{})
	if err != nil {
		t.Fatalf("NewScheduler of the zero SchedulerConfig: %v", err)
	}
	if res, err := sched.Translate(context.Background(), []string{"abc"}, CallOptions{}); err != nil || len(res) != 1 || len(res[0].Tokens) == 0 {
		t.Errorf("the zero config's scheduler: %v, %v", res, err)
	}
	sched.Close()
	_, err = sched.Translate(context.Background(), []string{"abc"}, CallOptions{})
	if !errors.Is(err, ErrClosed) || !errors.Is(err, decode.ErrSchedulerClosed) {
		t.Errorf("closed scheduler: %v; want ErrClosed and decode.ErrSchedulerClosed", err)
	}
	tr.Close()
	if _, err := tr.Translate(context.Background(), []string{"abc"}); !errors.Is(err, ErrClosed) {
		t.Errorf("closed Translator: %v; want ErrClosed", err)
	}
	// The queue's refusal as decode makes it matches either name.
	full := fmt.Errorf("serve: %w", decode.ErrQueueFull)
	if !errors.Is(full, ErrQueueFull) {
		t.Error("decode.ErrQueueFull is not translate.ErrQueueFull")
	}
}
