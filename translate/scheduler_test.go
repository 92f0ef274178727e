package translate

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/fixtures"
)

// sameResult reports how got differs from want: nothing ("") when every
// field is equal and the attention weights agree within 1e-5.
func sameResult(got, want Result) string {
	ga, wa := got.Attention, want.Attention
	got.Attention, want.Attention = nil, nil
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("%+v, want %+v", got, want)
	}
	return fixtures.AttentionDiff(ga, wa, 1e-5)
}

// TestSchedulerMatchesTranslator: calls from 16 goroutines through one
// Scheduler (texts and ids, with per-call limits, greedy and beam search
// of widths 2 and 3, a batch of at most 8 slots) give what the
// Translator's own calls give, with either engine (the steps engine for
// beam search), and so do lone TranslateIDsCall calls with the same
// settings.
func TestSchedulerMatchesTranslator(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[3] // luong-dot, two layers
	dir, w := fixtureModel(t, f)
	r := rand.New(rand.NewSource(8))
	type input struct {
		ids    [][]int64
		texts  []string
		maxLen int
		opt    CallOptions // beam search settings
	}
	inputs := make([]input, 24)
	for i := range inputs {
		in := &inputs[i]
		in.ids = randomRows(r, 1+i%3, w.Config.SrcVocab, 8)
		in.maxLen = []int{0, 3, 40}[i%3]
		switch alpha := 0.5; i % 6 {
		case 1:
			in.opt = CallOptions{Beam: 3, NBest: 3}
		case 4:
			in.opt = CallOptions{Beam: 2, LengthPenalty: &alpha}
		}
		if i%4 == 0 {
			// The same rows as text: ids 4.. are the letters a, b, ...
			for k, row := range in.ids {
				var b strings.Builder
				for j, id := range row {
					if id < 4 {
						row[j] = 4 + id
					}
					b.WriteRune(rune('a' + row[j] - 4))
				}
				in.texts = append(in.texts, b.String())
				in.ids[k] = row
			}
		}
	}
	tr, err := Open(dir, Options{Threads: 1, Engine: EngineSteps})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	want := make([][]Result, len(inputs))
	for _, engine := range []string{EngineLoop, EngineSteps} {
		for i, in := range inputs {
			if in.opt.Beam > 1 && engine == EngineLoop {
				continue // beam.onnx is not exported here
			}
			lone, err := Open(dir, Options{Threads: 1, Engine: engine, MaxLen: in.maxLen, Beam: in.opt.Beam, NBest: in.opt.NBest, LengthPenalty: in.opt.LengthPenalty})
			if err != nil {
				t.Fatal(err)
			}
			res, err := lone.TranslateIDs(context.Background(), in.ids)
			lone.Close()
			if err != nil {
				t.Fatal(err)
			}
			if in.opt.Beam > 1 && len(res[0].Hypotheses) != max(in.opt.NBest, 1) {
				t.Fatalf("input %d: %d hypotheses, want %d", i, len(res[0].Hypotheses), max(in.opt.NBest, 1))
			}
			if want[i] == nil {
				want[i] = res
				continue
			}
			for k := range res {
				if d := sameResult(res[k], want[i][k]); d != "" {
					t.Fatalf("input %d row %d: the engines disagree: %s", i, k, d)
				}
			}
		}
	}
	// A lone call with per-call settings gives what a Translator opened
	// with them gives.
	for i, in := range inputs {
		opt := in.opt
		opt.MaxLen = in.maxLen
		got, err := tr.TranslateIDsCall(context.Background(), in.ids, opt)
		if err != nil {
			t.Fatal(err)
		}
		for k := range got {
			if d := sameResult(got[k], want[i][k]); d != "" {
				t.Fatalf("TranslateIDsCall input %d row %d: %s", i, k, d)
			}
		}
	}
	sched, err := tr.NewScheduler(decode.SchedulerConfig{MaxSlots: 8, MaxQueue: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close()
	const goroutines, calls = 16, 30
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for c := 0; c < calls; c++ {
				i := (g*calls + c) % len(inputs)
				in := inputs[i]
				var got []Result
				var err error
				opt := in.opt
				opt.MaxLen = in.maxLen
				if in.texts != nil {
					got, err = sched.Translate(context.Background(), in.texts, opt)
				} else {
					got, err = sched.TranslateIDs(context.Background(), in.ids, opt)
				}
				if err != nil {
					errs <- err
					return
				}
				for k := range got {
					if d := sameResult(got[k], want[i][k]); d != "" {
						errs <- fmt.Errorf("goroutine %d call %d (input %d) row %d: %s", g, c, i, k, d)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := sched.Stats(); st.Queued != 0 || st.Removed != 0 || st.Joined == 0 {
		t.Errorf("stats after the calls: %+v", st)
	}
}

// TestSchedulerLifecycle: the loop engine cannot schedule; bad rows are
// refused before anything runs; Translator.Close closes an open
// Scheduler, whose later calls fail with ErrClosed.
func TestSchedulerLifecycle(t *testing.T) {
	needORT(t)
	dir, _ := fixtureModel(t, fixtures.List(t)[0])
	loop, err := Open(dir, Options{Threads: 1, Engine: EngineLoop})
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	if _, err := loop.NewScheduler(decode.SchedulerConfig{MaxSlots: 4, MaxQueue: 4}); err == nil || !strings.Contains(err.Error(), `continuous batching needs the "steps" engine`) {
		t.Errorf("scheduler on the loop engine: %v", err)
	}
	tr, err := Open(dir, Options{Threads: 1, Engine: EngineSteps})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.NewScheduler(decode.SchedulerConfig{MaxSlots: -1, MaxQueue: 4}); err == nil {
		t.Error("MaxSlots -1 accepted")
	}
	s, err := tr.NewScheduler(decode.SchedulerConfig{MaxSlots: 4, MaxQueue: 4})
	if err != nil {
		t.Fatal(err)
	}
	var ie *InputError
	if _, err := s.TranslateIDs(context.Background(), [][]int64{{5}, {}}, CallOptions{}); !errors.As(err, &ie) || ie.Row != 1 {
		t.Errorf("empty row: %v", err)
	}
	if _, err := s.TranslateIDs(context.Background(), [][]int64{{5}}, CallOptions{MaxLen: -1}); err == nil {
		t.Error("negative MaxLen accepted")
	}
	res, err := s.TranslateIDs(context.Background(), [][]int64{{5, 6}}, CallOptions{MaxLen: 2})
	if err != nil || len(res) != 1 || len(res[0].Tokens) == 0 || len(res[0].Tokens) > 2 {
		t.Fatalf("a call: %v %v", res, err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TranslateIDs(context.Background(), [][]int64{{5, 6}}, CallOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Translator.Close: %v", err)
	}
	s.Close()
	if _, err := tr.NewScheduler(decode.SchedulerConfig{MaxSlots: 4, MaxQueue: 4}); !errors.Is(err, ErrClosed) {
		t.Errorf("NewScheduler after Close: %v", err)
	}
}
