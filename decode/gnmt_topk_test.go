package decode

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestTorchTopKMatchesTorch: torchTopK gives torch.topk's indices, in its
// order, on the rows testdata/toolkits/gnmt_beam_cases.py ran it on: rows of
// 1 to 1000 values full of ties, some with a NaN, k from 1 to 17 (both the
// nth_element and the partial_sort paths).
func TestTorchTopKMatchesTorch(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "gnmt_beam_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cs struct {
		TopK []struct {
			Row     []*float32 `json:"row"`
			K       int        `json:"k"`
			Indices []int      `json:"indices"`
		} `json:"topk"`
	}
	if err := json.Unmarshal(data, &cs); err != nil {
		t.Fatal(err)
	}
	if len(cs.TopK) < 100 {
		t.Fatalf("%d topk rows, want the script's 100 and more", len(cs.TopK))
	}
	bad := 0
	for c, tc := range cs.TopK {
		q := make([]topkElem, len(tc.Row))
		for i, v := range tc.Row {
			q[i] = topkElem{v: float32(math.NaN()), i: i}
			if v != nil {
				q[i].v = *v
			}
		}
		top := torchTopK(q, tc.K)
		got := make([]int, len(top))
		for i, e := range top {
			got[i] = e.i
		}
		if len(got) != len(tc.Indices) {
			t.Fatalf("row %d (n %d, k %d): %d indices, torch %d", c, len(tc.Row), tc.K, len(got), len(tc.Indices))
		}
		for i := range got {
			if got[i] != tc.Indices[i] {
				bad++
				t.Errorf("row %d (n %d, k %d): %v, torch.topk %v", c, len(tc.Row), tc.K, got, tc.Indices)
				break
			}
		}
	}
	t.Logf("%d of %d rows differ", bad, len(cs.TopK))
}
