package align

import (
	"reflect"
	"testing"
)

func TestHard(t *testing.T) {
	tests := []struct {
		name             string
		attn             [][]float32
		skipSrc, skipTgt []bool
		want             []Pair
	}{
		{
			name:    "argmax per row",
			attn:    [][]float32{{0.1, 0.7, 0.2}, {0.6, 0.3, 0.1}},
			skipSrc: []bool{false, false, false},
			want:    []Pair{{1, 0}, {0, 1}},
		},
		{
			name:    "first of equal weights",
			attn:    [][]float32{{0.4, 0.4, 0.2}},
			skipSrc: []bool{false, false, false},
			want:    []Pair{{0, 0}},
		},
		{
			name:    "skipped source column neither chosen nor counted",
			attn:    [][]float32{{0.1, 0.2, 0.7}, {0.5, 0.3, 0.2}},
			skipSrc: []bool{true, false, false},
			want:    []Pair{{1, 0}, {0, 1}},
		},
		{
			name:    "skipped target row not counted",
			attn:    [][]float32{{0.9, 0.1}, {0.2, 0.8}, {0.3, 0.7}},
			skipSrc: []bool{false, false},
			skipTgt: []bool{false, true, false},
			want:    []Pair{{0, 0}, {1, 1}},
		},
		{
			name:    "columns past a row weigh zero",
			attn:    [][]float32{{-1}},
			skipSrc: []bool{false, false},
			want:    []Pair{{1, 0}},
		},
		{
			name:    "every source column skipped",
			attn:    [][]float32{{1}},
			skipSrc: []bool{true},
			want:    []Pair{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Hard(tc.attn, tc.skipSrc, tc.skipTgt)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Hard = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHardRowMarks(t *testing.T) {
	_, err := Hard([][]float32{{1}, {1}}, []bool{false}, []bool{false})
	if err == nil {
		t.Fatal("Hard took 1 target mark for 2 rows")
	}
}
