package ops

import (
	"math"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/ortest"
	"github.com/attnx/attnx/onnxrun"
)

// The backend node cases of the selection operators join the others.
func init() {
	backendCases = append(backendCases,
		backendCase{names: matching("test_top_k"), build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
			v, i := TopK(in[0], in[1], TopKOpts{Axis: Int(n.i("axis", -1)), Smallest: n.i("largest", 1) == 0, Unsorted: n.i("sorted", 1) == 0})
			return []*builder.Value{v, i}
		}},
		backendCase{names: matching("test_gather_elements_"), build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
			return []*builder.Value{GatherElements(in[0], in[1], n.i("axis", 0))}
		}},
		backendCase{names: matching("test_mod_", "float16"), build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
			return []*builder.Value{Mod(in[0], in[1], ModOpts{Fmod: n.i("fmod", 0) == 1})}
		}},
		backendCase{names: matching("test_cumsum_"), consts: []int{1}, build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
			return []*builder.Value{CumSum(in[0], in[1], CumSumOpts{Exclusive: n.i("exclusive", 0) == 1, Reverse: n.i("reverse", 0) == 1})}
		}},
	)
}

func TestInferSelect(t *testing.T) {
	cases := []struct {
		name  string
		build func(g *builder.Graph) *builder.Value
		want  string
	}{
		{"TopK constant k", func(g *builder.Graph) *builder.Value {
			v, _ := TopK(in(g, "x", f32, "b", 40), ConstInt64s(g, 8), TopKOpts{})
			return v
		}, "float32[b,8]"},
		{"TopK indices", func(g *builder.Graph) *builder.Value {
			_, i := TopK(in(g, "x", f32, "b", 40), ConstInt64s(g, 8), TopKOpts{Axis: Int(0)})
			return i
		}, "int64[8,40]"},
		{"TopK runtime k", func(g *builder.Graph) *builder.Value {
			v, _ := TopK(in(g, "x", f32, "b", 40), in(g, "k", i64, 1), TopKOpts{})
			return v
		}, "float32[b,?]"},
		{"GatherElements", func(g *builder.Graph) *builder.Value {
			return GatherElements(in(g, "x", f32, "b", 40), in(g, "i", i64, "b", 3), 1)
		}, "float32[b,3]"},
		{"Mod", func(g *builder.Graph) *builder.Value {
			return Mod(in(g, "x", i64, "b", 7), ScalarInt64(g, 5), ModOpts{})
		}, "int64[b,7]"},
		{"CumSum", func(g *builder.Graph) *builder.Value {
			return CumSum(in(g, "x", i64, "b", 7), ScalarInt64(g, 1), CumSumOpts{Exclusive: true})
		}, "int64[b,7]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := builder.New("g")
			v := c.build(g)
			if err := g.Err(); err != nil {
				t.Fatal(err)
			}
			if got := v.Type().String(); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestSelectErrors(t *testing.T) {
	cases := []struct {
		name  string
		build func(g *builder.Graph)
		want  string
	}{
		{"TopK k too large", func(g *builder.Graph) { TopK(in(g, "x", f32, 2, 5), ConstInt64s(g, 6), TopKOpts{}) }, "K is 6 but X has only 5"},
		{"TopK k of two", func(g *builder.Graph) { TopK(in(g, "x", f32, 2, 5), ConstInt64s(g, 1, 2), TopKOpts{}) }, "want one element"},
		{"TopK k scalar", func(g *builder.Graph) { TopK(in(g, "x", f32, 2, 5), ScalarInt64(g, 1), TopKOpts{}) }, "want rank 1"},
		{"TopK bool", func(g *builder.Graph) { TopK(in(g, "x", bl, 5), ConstInt64s(g, 1), TopKOpts{}) }, "X is bool"},
		{"GatherElements ranks", func(g *builder.Graph) { GatherElements(in(g, "x", f32, 2, 5), in(g, "i", i64, 2), 1) }, "want rank 2 (data's rank)"},
		{"GatherElements axis", func(g *builder.Graph) { GatherElements(in(g, "x", f32, 2, 5), in(g, "i", i64, 2, 1), 2) }, "axis"},
		{"Mod float", func(g *builder.Graph) { Mod(in(g, "x", f32, 5), in(g, "y", f32, 5), ModOpts{}) }, "needs Fmod"},
		{"CumSum bool", func(g *builder.Graph) { CumSum(in(g, "x", bl, 5), ScalarInt64(g, 0), CumSumOpts{}) }, "x is bool"},
		{"CumSum axis", func(g *builder.Graph) { CumSum(in(g, "x", f32, 5), ScalarInt64(g, 1), CumSumOpts{}) }, "axis"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := builder.New("g")
			c.build(g)
			err := g.Err()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestTopKTiesInIndexOrder checks, in ONNX Runtime, what beam search relies
// on: TopK returns equal values in ascending index order, whatever the
// sizes (ONNX Runtime picks different selection algorithms for small and
// large k), with -Inf among the values. Each row is compared with a stable
// sort of the row by value, descending.
func TestTopKTiesInIndexOrder(t *testing.T) {
	ortest.Require(t)
	rng := rand.New(rand.NewSource(9))
	for _, c := range []struct{ rows, n, k int }{
		{3, 5, 5}, {4, 16, 1}, {4, 16, 2}, {4, 16, 8}, {4, 16, 16}, {2, 1000, 8},
		{2, 1000, 600}, {2, 40000, 8}, {2, 40000, 16}, {1, 40000, 40000}, {64, 300, 24},
	} {
		// Few distinct values, so that most elements tie with others.
		data := make([]float32, c.rows*c.n)
		for i := range data {
			switch rng.Intn(10) {
			case 0:
				data[i] = float32(math.Inf(-1))
			default:
				data[i] = -float32(rng.Intn(6)) / 4
			}
		}
		g := builder.New("topk")
		x := g.Input("x", builder.Float, builder.Dims("r", "n"))
		k := g.Input("k", builder.Int64, builder.Dims(1))
		v, idx := TopK(x, k, TopKOpts{})
		g.Output("values", v)
		g.Output("indices", idx)
		out := ortest.Run(t, g, map[string]*onnxrun.Tensor{
			"x": onnxrun.NewFloat32([]int64{int64(c.rows), int64(c.n)}, data),
			"k": onnxrun.NewInt64([]int64{1}, []int64{int64(c.k)}),
		})
		got, err := out["indices"].Int64s()
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < c.rows; r++ {
			row := data[r*c.n : (r+1)*c.n]
			want := make([]int64, c.n)
			for i := range want {
				want[i] = int64(i)
			}
			sort.SliceStable(want, func(a, b int) bool { return row[want[a]] > row[want[b]] })
			if g := got[r*c.k : (r+1)*c.k]; !slices.Equal(g, want[:c.k]) {
				t.Errorf("rows %d, n %d, k %d: row %d indices %v, want %v", c.rows, c.n, c.k, r, head(g), head(want[:c.k]))
			}
		}
	}
}

// head returns at most the first 12 elements, for messages.
func head(xs []int64) []int64 { return xs[:min(len(xs), 12)] }
