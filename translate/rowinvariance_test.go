package translate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/attnx/attnx/compare"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/quant"
)

// TestReducedRowsDecodeAsAlone: with int8 and 4-bit weights, a row
// decodes the same alone and in batches of any size and company, its
// tokens identical and its attention within the float32 tolerance. Int8
// activations are quantized per row: with DynamicQuantizeLinear's one
// scale per batch, a row's result changed with the other rows (attention
// by 1e-2 between alone and a batch of 64), and under continuous batching
// with other users' traffic.
func TestReducedRowsDecodeAsAlone(t *testing.T) {
	needORT(t)
	var src string
	for _, f := range fixtures.List(t) {
		if f.Name == "luong-general_b4_l2" {
			src = f.Path(t, "checkpoint.pt")
		}
	}
	for _, p := range []quant.Precision{quant.PrecisionInt8, quant.PrecisionInt4} {
		t.Run(string(p), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m")
			if _, err := modeldir.Export(src, dir, modeldir.Options{Weights: p}); err != nil {
				t.Fatal(err)
			}
			tr, err := Open(dir, Options{Threads: 1, Engine: EngineSteps, MaxLen: 12, BatchSize: 64})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			rng := rand.New(rand.NewPCG(3, 4))
			rows := make([][]int64, 64)
			for i := range rows {
				rows[i] = make([]int64, 1+rng.IntN(9))
				for j := range rows[i] {
					// Large and small ids alike: rows whose activations
					// span very different ranges.
					rows[i][j] = int64(4 + rng.IntN(15))
				}
			}
			alone := make([]Result, len(rows))
			for i, row := range rows {
				res, err := tr.TranslateIDs(context.Background(), [][]int64{row})
				if err != nil {
					t.Fatal(err)
				}
				alone[i] = res[0]
			}
			worst := 0.0
			for _, n := range []int{2, 5, 64} {
				for start := 0; start+n <= len(rows); start += n {
					res, err := tr.TranslateIDs(context.Background(), rows[start:start+n])
					if err != nil {
						t.Fatal(err)
					}
					for k, r := range res {
						i := start + k
						where := fmt.Sprintf("row %d in a batch of %d", i, n)
						if !slices.Equal(r.Tokens, alone[i].Tokens) {
							t.Fatalf("%s: tokens %v, alone %v", where, r.Tokens, alone[i].Tokens)
						}
						for s := range r.Attention {
							c := compare.Float32(r.Attention[s], alone[i].Attention[s], nil, compare.Float32Tol)
							if !c.OK {
								t.Fatalf("%s, step %d attention: %s", where, s, c)
							}
							worst = max(worst, c.MaxAbsErr)
						}
					}
				}
			}
			t.Logf("%s: 64 rows in batches of 2, 5 and 64: tokens identical to alone, attention within %.1e", p, worst)
		})
	}
}
