package onnxeval

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTransposeMatchesElementLoop checks transpose, which copies runs of
// elements when the last axes keep their order, against the definition
// element by element: output[i...] = input[perm applied], for every
// permutation of shapes of ranks 1 to 4 (runs shorter and longer than
// the copy threshold), in float32 and int64.
func TestTransposeMatchesElementLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := [][]int64{{9}, {3, 17}, {2, 3, 4}, {5, 2, 16}, {3, 1, 2, 33}, {2, 3, 4, 5}, {7, 2, 30, 64}, {0, 3, 9}}
	for _, in := range shapes {
		for _, perm := range permutations(len(in)) {
			out := make([]int64, len(in))
			for i, p := range perm {
				out[i] = in[p]
			}
			n := numel(in)
			f := make([]float32, n)
			g := make([]int64, n)
			for i := range f {
				f[i] = rng.Float32()
				g[i] = rng.Int64()
			}
			ts := strides(in)
			want := make([]int, numel(out)) // input position of each output element
			ctr := make([]int64, len(out))
			for i := range want {
				for d := range out {
					want[i] += int(ctr[d]) * ts[perm[d]]
				}
				for d := len(out) - 1; d >= 0; d-- {
					if ctr[d]++; ctr[d] < out[d] {
						break
					}
					ctr[d] = 0
				}
			}
			p64 := make([]int64, len(perm))
			for i, p := range perm {
				p64[i] = int64(p)
			}
			r := &runner{arena: &arena{}, budget: 1 << 30}
			of, err := transpose(r, &Tensor{DType: dtFloat, Shape: in, Data: f}, p64, out)
			if err != nil {
				t.Fatal(err)
			}
			og, err := transpose(r, &Tensor{DType: dtInt64, Shape: in, Data: g}, p64, out)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(of.Shape, out) {
				t.Fatalf("%v perm %v: shape %v, want %v", in, perm, of.Shape, out)
			}
			for i, pos := range want {
				if of.Data.([]float32)[i] != f[pos] || og.Data.([]int64)[i] != g[pos] {
					t.Fatalf("%v perm %v: element %d is not input element %d", in, perm, i, pos)
				}
			}
		}
	}
}

func permutations(n int) [][]int {
	if n == 1 {
		return [][]int{{0}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for at := 0; at <= len(p); at++ {
			q := slices.Insert(slices.Clone(p), at, n-1)
			out = append(out, q)
		}
	}
	return out
}
