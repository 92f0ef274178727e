package translate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/modeldir"
)

// limitRows returns source rows of the given lengths (ids the bahdanau
// fixture's source vocabulary holds).
func limitRows(lens ...int) [][]int64 {
	rows := make([][]int64, len(lens))
	for i, n := range lens {
		rows[i] = make([]int64, n)
		for j := range rows[i] {
			rows[i][j] = int64(4 + (i+j)%5)
		}
	}
	return rows
}

// TestOutputLimits: the one function of a row's output limits, for each
// rules family and each setting that bears on them (the model's own
// limit, MaxLen, MaxLenRatio, MaxLenA, AsTestSet's batches, MaxLenCap),
// with the setting that gives each limit.
func TestOutputLimits(t *testing.T) {
	f64 := func(v float64) *float64 { return &v }
	fairseq := &modeldir.Defaults{Rules: RulesFairseq, MaxLen: 201}
	onmt := &modeldir.Defaults{Rules: RulesOpenNMT, MaxLen: 250, MaxLenFactor: 1.25, MaxLenAdd: 5, Batching: &modeldir.Batching{Style: modeldir.BatchingOpenNMT, Size: 30}}
	joey := &modeldir.Defaults{Rules: RulesJoeyNMT, MaxLenFactor: 1.5, Batching: &modeldir.Batching{Style: modeldir.BatchingJoeyNMT, Size: 10}}
	rows := limitRows(3, 12, 20)
	type lim struct {
		max, want int
		by        string
	}
	cases := []struct {
		name     string
		defaults *modeldir.Defaults
		opt      CallOptions
		want     []lim
		min      int
	}{
		{"spec: 2n+10", nil, CallOptions{}, []lim{{16, 16, ""}, {34, 34, ""}, {50, 50, ""}}, 0},
		{"spec: MaxLen", nil, CallOptions{MaxLen: 7}, []lim{{7, 7, "MaxLen"}, {7, 7, "MaxLen"}, {7, 7, "MaxLen"}}, 0},
		{"spec: MinLen reported", nil, CallOptions{MinLen: 40}, []lim{{16, 16, ""}, {34, 34, ""}, {50, 50, ""}}, 40},
		{"spec: 2n+10 capped", nil, CallOptions{MaxLenCap: 30}, []lim{{16, 16, ""}, {30, 34, ""}, {30, 50, ""}}, 0},
		// onmt_translate's min(250, int(1.25 n + 5)).
		{"opennmt rules: its default", nil, CallOptions{Rules: RulesOpenNMT}, []lim{{8, 8, ""}, {20, 20, ""}, {30, 30, ""}}, 0},
		// min(30, int(2 n + 5)): the ratio gives 11 and 29, -max_length 30.
		{"opennmt: MaxLenRatio and MaxLen", nil, CallOptions{Rules: RulesOpenNMT, MaxLenRatio: f64(2), MaxLen: 30},
			[]lim{{11, 11, "MaxLenRatio"}, {29, 29, "MaxLenRatio"}, {30, 30, "MaxLen"}}, 0},
		// min(250, int(20 n + 5)): 65, then the default -max_length the
		// ratio brings (without it the rules' default gives 30).
		{"opennmt: MaxLenRatio alone", nil, CallOptions{Rules: RulesOpenNMT, MaxLenRatio: f64(20)},
			[]lim{{65, 65, "MaxLenRatio"}, {245, 245, "MaxLenRatio"}, {250, 250, "MaxLenRatio"}}, 0},
		{"opennmt: MaxLenRatio capped", nil, CallOptions{Rules: RulesOpenNMT, MaxLenRatio: f64(20), MaxLenCap: 100},
			[]lim{{65, 65, "MaxLenRatio"}, {100, 245, "MaxLenRatio"}, {100, 250, "MaxLenRatio"}}, 0},
		// Ratio 0 leaves -max_length alone.
		{"opennmt: MaxLenRatio 0", nil, CallOptions{Rules: RulesOpenNMT, MaxLenRatio: f64(0)},
			[]lim{{250, 250, ""}, {250, 250, ""}, {250, 250, ""}}, 0},
		{"opennmt: MaxLenRatio 0 and MaxLen", nil, CallOptions{Rules: RulesOpenNMT, MaxLenRatio: f64(0), MaxLen: 12},
			[]lim{{12, 12, "MaxLen"}, {12, 12, "MaxLen"}, {12, 12, "MaxLen"}}, 0},
		// The model's ratio, per row (no AsTestSet) and over its batch of
		// 30 (every row gets the longest, 20: 30 tokens).
		{"opennmt model", onmt, CallOptions{}, []lim{{8, 8, ""}, {20, 20, ""}, {30, 30, ""}}, 0},
		{"opennmt model, AsTestSet", onmt, CallOptions{AsTestSet: true}, []lim{{30, 30, ""}, {30, 30, ""}, {30, 30, ""}}, 0},
		// JoeyNMT's max_output_length: int(1.5 n), over its batch.
		{"joeynmt model", joey, CallOptions{}, []lim{{4, 4, ""}, {18, 18, ""}, {30, 30, ""}}, 0},
		{"joeynmt model, AsTestSet", joey, CallOptions{AsTestSet: true}, []lim{{30, 30, ""}, {30, 30, ""}, {30, 30, ""}}, 0},
		{"joeynmt model, MaxLen", joey, CallOptions{AsTestSet: true, MaxLen: 9}, []lim{{9, 9, "MaxLen"}, {9, 9, "MaxLen"}, {9, 9, "MaxLen"}}, 0},
		// fairseq-interactive's --max-len-b 200, then </s>.
		{"fairseq model", fairseq, CallOptions{}, []lim{{201, 201, ""}, {201, 201, ""}, {201, 201, ""}}, 0},
		{"fairseq model capped", fairseq, CallOptions{MaxLenCap: 100, MinLen: 99}, []lim{{100, 201, ""}, {100, 201, ""}, {100, 201, ""}}, 99},
		// int(1.5 n + 200) + 1.
		{"fairseq: MaxLenA", fairseq, CallOptions{MaxLenA: f64(1.5)}, []lim{{205, 205, "MaxLenA"}, {219, 219, "MaxLenA"}, {231, 231, "MaxLenA"}}, 0},
		// int(2 n + 9) + 1: --max-len-b 9 from MaxLen 10.
		{"fairseq: MaxLenA and MaxLen", fairseq, CallOptions{MaxLenA: f64(2), MaxLen: 10}, []lim{{16, 16, "MaxLenA"}, {34, 34, "MaxLenA"}, {50, 50, "MaxLenA"}}, 0},
		// Within the LSTM's 1,024 positions, then the cap.
		{"fairseq: MaxLenA 100", fairseq, CallOptions{MaxLenA: f64(100)}, []lim{{501, 501, "MaxLenA"}, {1024, 1024, "MaxLenA"}, {1024, 1024, "MaxLenA"}}, 0},
		{"fairseq: MaxLenA 100 capped", fairseq, CallOptions{MaxLenA: f64(100), MaxLenCap: 512}, []lim{{501, 501, "MaxLenA"}, {512, 1024, "MaxLenA"}, {512, 1024, "MaxLenA"}}, 0},
		{"fairseq rules on a model without defaults", nil, CallOptions{Rules: RulesFairseq, MaxLenA: f64(1)}, []lim{{204, 204, "MaxLenA"}, {213, 213, "MaxLenA"}, {221, 221, "MaxLenA"}}, 0},
	}
	dirs := map[*modeldir.Defaults]string{}
	for _, d := range []*modeldir.Defaults{nil, fairseq, onmt, joey} {
		dirs[d], _ = modelWithDefaults(t, d)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := dirs[c.defaults]
			tr, err := Open(dir, Options{Backend: "go", Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			got, err := tr.OutputLimits(rows, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			for r, l := range got {
				w := c.want[r]
				if l.Max != w.max || l.Want != w.want || l.By != w.by || l.Min != c.min {
					t.Errorf("row %d (%d tokens): Max %d, Want %d, By %q, Min %d; want %d, %d, %q, %d", r, len(rows[r]), l.Max, l.Want, l.By, l.Min, w.max, w.want, w.by, c.min)
				}
			}
		})
	}
}

// TestOutputLimitsRefusals: under fairseq's rules a min_len at or above a
// row's limit (the cap's included) is an InputError naming the first such
// row, from OutputLimits and from every way of decoding (the Scheduler's
// too, which answered empty rows); under the other rules it is not; a
// negative cap is refused by name.
func TestOutputLimitsRefusals(t *testing.T) {
	dir, _ := modelWithDefaults(t, &modeldir.Defaults{Rules: RulesFairseq, MaxLen: 201})
	tr, err := Open(dir, Options{Backend: "go", Threads: 1, Engine: EngineSteps})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	s, err := tr.NewScheduler(decode.SchedulerConfig{MaxSlots: 8, MaxQueue: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a1 := 1.0
	rows := limitRows(12, 3) // max_len_a 1: 213 and 204 tokens
	for _, c := range []struct {
		name string
		opt  CallOptions
		row  int
		msg  string
	}{
		{"min_len over the model's limit", CallOptions{MinLen: 300}, 0, "min_len 300 is at or above this input's output limit of 201 tokens"},
		{"min_len over the cap", CallOptions{MinLen: 150, MaxLenCap: 150}, 0, "min_len 150 is at or above this input's output limit of 150 tokens"},
		{"beam, min_len over the second row's limit", CallOptions{Beam: 3, MaxLenA: &a1, MinLen: 210}, 1, "min_len 210 is at or above this input's output limit of 204 tokens"},
		{"greedy, min_len over the second row's limit", CallOptions{Beam: 1, MaxLenA: &a1, MinLen: 210}, 1, "min_len 210 is at or above this input's output limit of 204 tokens"},
	} {
		check := func(how string, err error) {
			t.Helper()
			var ie *InputError
			if !errors.As(err, &ie) || ie.Row != c.row || !strings.Contains(ie.Msg, c.msg) {
				t.Errorf("%s, %s: %v; want an InputError for row %d: %s", c.name, how, err, c.row, c.msg)
			}
		}
		_, err := tr.OutputLimits(rows, c.opt)
		check("OutputLimits", err)
		_, err = s.TranslateIDs(context.Background(), rows, c.opt)
		check("Scheduler", err)
		_, err = tr.TranslateIDsCall(context.Background(), rows, c.opt)
		check("TranslateIDsCall", err)
	}
	// attnx's own rules decode such a row to its limit, without EOS.
	if _, err := tr.OutputLimits(rows, CallOptions{Rules: RulesSpec, MinLen: 300}); err != nil {
		t.Errorf("min_len 300 under attnx's rules: %v", err)
	}
	if _, err := tr.OutputLimits(rows, CallOptions{MaxLenCap: -1}); err == nil || !strings.Contains(err.Error(), "CallOptions.MaxLenCap = -1: must not be negative") {
		t.Errorf("MaxLenCap -1: %v", err)
	}
}

// TestMaxLenCapBoundsDecoding: the cap bounds what the searches decode,
// on the Scheduler and alone, greedy and beam: the random fixture rarely
// reaches EOS, so its rows run to the capped limit.
func TestMaxLenCapBoundsDecoding(t *testing.T) {
	dir, _ := modelWithDefaults(t, nil)
	tr, err := Open(dir, Options{Backend: "go", Threads: 1, Engine: EngineSteps})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	s, err := tr.NewScheduler(decode.SchedulerConfig{MaxSlots: 8, MaxQueue: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows := limitRows(3, 12)
	for _, beam := range []int{1, 3} {
		opt := CallOptions{Beam: beam, MaxLen: 40, MaxLenCap: 6}
		for how, run := range map[string]func() ([]Result, error){
			"Scheduler":        func() ([]Result, error) { return s.TranslateIDs(context.Background(), rows, opt) },
			"TranslateIDsCall": func() ([]Result, error) { return tr.TranslateIDsCall(context.Background(), rows, opt) },
		} {
			res, err := run()
			if err != nil {
				t.Fatal(err)
			}
			longest := 0
			for _, r := range res {
				longest = max(longest, len(r.Tokens))
			}
			if longest != 6 {
				t.Errorf("beam %d, %s, MaxLen 40 under MaxLenCap 6: the longest output has %d tokens, want 6", beam, how, longest)
			}
		}
	}
}
