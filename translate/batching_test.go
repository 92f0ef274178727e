package translate

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/attnx/attnx/modeldir"
)

// TestBatchLongestMatchesToolkits checks batchLongest against the batches
// OpenNMT-py's and JoeyNMT's own batching code made of the same test sets
// (testdata/batching, written by make_fixtures.py).
func TestBatchLongestMatchesToolkits(t *testing.T) {
	raw, err := os.ReadFile("testdata/batching/batching.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Cases []struct {
			Name    string
			Style   string
			Size    int
			Tokens  bool
			Lengths []int
			Batches [][]int
		}
	}
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Cases) < 30 {
		t.Fatalf("%d cases in batching.json; want the 36 make_fixtures.py writes", len(fx.Cases))
	}
	for _, c := range fx.Cases {
		t.Run(c.Name, func(t *testing.T) {
			rows := make([][]int64, len(c.Lengths))
			for i, n := range c.Lengths {
				rows[i] = make([]int64, n)
			}
			want := make([]int, len(rows))
			for _, b := range c.Batches {
				longest := 0
				for _, i := range b {
					longest = max(longest, c.Lengths[i])
				}
				for _, i := range b {
					want[i] = longest
				}
			}
			got := batchLongest(rows, &modeldir.Batching{Style: c.Style, Size: c.Size, Tokens: c.Tokens})
			if !slices.Equal(got, want) {
				t.Errorf("batchLongest = %v\n                  want %v (the toolkit's batches %v)", got, want, c.Batches)
			}
		})
	}
}

// TestBatchLongestSkipsBlankLines: blank lines (nil rows) are in no batch.
func TestBatchLongestSkipsBlankLines(t *testing.T) {
	rows := [][]int64{make([]int64, 3), nil, make([]int64, 8), make([]int64, 2)}
	got := batchLongest(rows, &modeldir.Batching{Style: modeldir.BatchingOpenNMT, Size: 2})
	if want := []int{3, 0, 8, 3}; !slices.Equal(got, want) {
		t.Errorf("batchLongest = %v, want %v", got, want)
	}
}

// TestCorpusLimitPerToolkitBatch: with attnx.json's defaults.batching a
// test set's sentences get the output limit of the toolkit batch they
// would be in (the longest source of it), however attnx batches them; a
// sentence translated alone gets its own; Options.MaxLen overrides both.
func TestCorpusLimitPerToolkitBatch(t *testing.T) {
	needORT(t)
	// onmt_translate's limit over batches of 2 sentences sorted by length.
	dir, info := modelWithDefaults(t, &modeldir.Defaults{MaxLen: 250, MaxLenFactor: 1.25, MaxLenAdd: 5, Batching: &modeldir.Batching{Style: modeldir.BatchingOpenNMT, Size: 2}})
	// Sorted: lengths 2, 3 | 8, 12 | 20: limits 8, 8 | 20, 20 | 30.
	rows := [][]int64{make([]int64, 12), make([]int64, 3), make([]int64, 20), make([]int64, 2), make([]int64, 8)}
	for i, r := range rows {
		for j := range r {
			r[j] = int64(4 + (i+j)%5) // random weights rarely reach EOS
		}
	}
	for _, c := range []struct {
		opt  Options
		co   CorpusOptions
		want []int
	}{
		{Options{}, CorpusOptions{BatchSize: 5}, []int{20, 8, 30, 8, 20}},
		{Options{}, CorpusOptions{BatchSize: 1, Lanes: 2}, []int{20, 8, 30, 8, 20}},
		{Options{MaxLen: 6}, CorpusOptions{}, []int{6, 6, 6, 6, 6}},
	} {
		tr, err := Open(dir, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]int, len(rows))
		_, err = tr.TranslateCorpusIDs(context.Background(), rows, c.co, func(i int, res Result) error {
			got[i] = len(res.Tokens)
			if n := len(res.Tokens); n < c.want[i] && res.Tokens[n-1] != info.Special.EOS {
				t.Errorf("%+v: sentence %d stopped at %d tokens without EOS, limit %d", c.opt, i, n, c.want[i])
			}
			return nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		alone, err := tr.TranslateIDs(context.Background(), rows[3:4])
		tr.Close()
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range got {
			if n > c.want[i] {
				t.Errorf("%+v: sentence %d has %d tokens, limit %d", c.opt, i, n, c.want[i])
			}
		}
		if !slices.Equal(got, c.want) {
			t.Logf("%+v: lengths %v (limits %v; shorter ones ended in EOS)", c.opt, got, c.want)
		}
		if c.opt.MaxLen == 0 && len(alone[0].Tokens) > 7 {
			t.Errorf("sentence of 2 tokens alone: %d output tokens, want at most its own limit 7", len(alone[0].Tokens))
		}
	}
}
