package translate

import (
	"context"
	"errors"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/fixtures"
)

func TestCorpusBatches(t *testing.T) {
	rows := [][]int64{{1, 2}, nil, {1, 2, 3, 4, 5}, {1}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3, 4}}
	if got, want := corpusBatches(rows, CorpusOptions{BatchSize: 2}, 64), [][]int{{2, 6}, {4, 5}, {0, 3}}; !reflect.DeepEqual(got, want) {
		t.Errorf("by sentences: %v, want %v", got, want)
	}
	// tokens: rows x longest <= 8: [5] alone (5, 5+4 would be 2x5=10), [4,3] = 8, [3,2] = 6 then +1 = 9 > 8
	if got, want := corpusBatches(rows, CorpusOptions{BatchTokens: 8}, 64), [][]int{{2}, {6, 4}, {5, 0}, {3}}; !reflect.DeepEqual(got, want) {
		t.Errorf("by tokens: %v, want %v", got, want)
	}
	if got := corpusBatches([][]int64{nil, nil}, CorpusOptions{}, 64); got != nil {
		t.Errorf("all blank: %v", got)
	}
}

// TestTranslateCorpus checks that a test set translated sorted, in
// batches and on several lanes gives each line the result of translating
// it alone, in the file's order, with blank lines kept.
func TestTranslateCorpus(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[1]
	dir, w := fixtureModel(t, f)
	tr, err := Open(dir, Options{Threads: 1, Engine: EngineSteps, BatchSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	chars := charVocab(w.Config.SrcVocab)[4:]
	rng := rand.New(rand.NewSource(3))
	var lines []string
	for i := 0; i < 57; i++ {
		if i%11 == 5 {
			lines = append(lines, []string{"", "   "}[i%2])
			continue
		}
		var b strings.Builder
		for n := 1 + rng.Intn(14); n > 0; n-- {
			b.WriteString(chars[rng.Intn(len(chars))])
		}
		lines = append(lines, b.String())
	}
	var want []Result
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			want = append(want, Result{})
			continue
		}
		r, err := tr.Translate(context.Background(), []string{l})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r[0])
	}
	for _, co := range []CorpusOptions{{BatchSize: 8}, {BatchSize: 5, Lanes: 3}, {BatchTokens: 30, Lanes: 2}, {BatchSize: 8, WithoutAttention: true}} {
		var order []int
		var got []Result
		progressCalls := 0
		st, err := tr.TranslateCorpus(context.Background(), lines, 1, co, func(i int, r Result) error {
			order = append(order, i)
			got = append(got, r)
			return nil
		}, func(n, toks int) { progressCalls++ })
		if err != nil {
			t.Fatal(err)
		}
		for i := range lines {
			if i >= len(order) || order[i] != i {
				t.Fatalf("%+v: emitted in order %v", co, order)
			}
			if !reflect.DeepEqual(got[i].Tokens, want[i].Tokens) || got[i].Text != want[i].Text {
				t.Errorf("%+v: line %d %q: %v, alone %v", co, i+1, lines[i], got[i].Tokens, want[i].Tokens)
			}
			if hasAtt := len(got[i].Attention) > 0; hasAtt != (len(want[i].Tokens) > 0 && !co.WithoutAttention) {
				t.Errorf("%+v: line %d has attention %v", co, i+1, hasAtt)
			}
		}
		if st.Sentences != len(lines) || st.Empty != 5 || st.Batches == 0 || progressCalls != st.Batches {
			t.Errorf("%+v: stats %+v, %d progress calls", co, st, progressCalls)
		}
	}

	// A line outside the vocabulary stops it, named by its line number.
	bad := append(append([]string(nil), lines[:3]...), "a\u00e9b")
	_, err = tr.TranslateCorpus(context.Background(), bad, 10, CorpusOptions{}, func(int, Result) error { return nil }, nil)
	var be *BadInputError
	if !errors.As(err, &be) || be.Input.Where != "line 13" {
		t.Fatalf("bad line: %v", err)
	}
	// An emit error stops it and is returned.
	stop := errors.New("disk full")
	_, err = tr.TranslateCorpus(context.Background(), lines, 1, CorpusOptions{BatchSize: 4, Lanes: 2}, func(i int, r Result) error {
		if i == 20 {
			return stop
		}
		return nil
	}, nil)
	if !errors.Is(err, stop) {
		t.Fatalf("emit error: %v", err)
	}
}

// TestTranslateCorpusIDs: a model without a source vocabulary reads token
// ids, and a bad id is refused with its line number before any decoding.
func TestTranslateCorpusIDs(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[0]
	w := fixtures.Weights(t, f.Path(t, "checkpoint.pt"))
	dir := t.TempDir()
	writeModelDir(t, dir, w, modelSpec{special: attention.Special{SOS: f.SOS, EOS: f.EOS, PAD: f.PAD, UNK: 3}})
	tr, err := Open(dir, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	lines := []string{"5 6 7", "", "8 9"}
	var got [][]int64
	if _, err := tr.TranslateCorpus(context.Background(), lines, 1, CorpusOptions{}, func(i int, r Result) error {
		got = append(got, r.Source)
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, [][]int64{{5, 6, 7}, nil, {8, 9}}) {
		t.Errorf("sources %v", got)
	}
	_, err = tr.TranslateCorpus(context.Background(), []string{"5 6", "5 999999"}, 1, CorpusOptions{}, func(int, Result) error { return nil }, nil)
	var be *BadInputError
	if !errors.As(err, &be) || be.Input.Where != "line 2" || !strings.Contains(err.Error(), "outside the source vocabulary") {
		t.Errorf("bad id: %v", err)
	}
}
