package serve

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/translate"
)

// TestAlignmentAnswered: "alignment": true answers each result's and
// hypothesis' hard alignment without the attention weights; the links are
// the argmax of the attention that "attention": true answers (the demo
// model decodes under attnx's own rules: every source position, each
// output token but EOS), and a request asking for neither gets neither.
func TestAlignmentAnswered(t *testing.T) {
	demo := demoModel(t)
	info, err := modeldir.ReadInfo(filepath.Join(demo, "attnx.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: demo}}, MaxOutLen: 60})
	const in = `"inputs": ["3rd of March 2021", "Wednesday, March 3, 2021"]`
	ask := func(extra string) Response {
		t.Helper()
		code, ans := post(t, hs.URL+PathTranslate, "{"+in+extra+"}")
		if code != 200 {
			t.Fatalf("%s: %d %s", extra, code, ans)
		}
		return decodeResponse(t, ans)
	}
	withAttention, aligned, plain := ask(`, "attention": true`), ask(`, "alignment": true`), ask(``)
	for i, r := range withAttention.Results {
		var want [][2]int
		for j, id := range r.Tokens {
			if id == info.Special.EOS {
				continue
			}
			best := 0
			for k, w := range r.Attention[j] {
				if w > r.Attention[j][best] {
					best = k
				}
			}
			want = append(want, [2]int{best, len(want)})
		}
		if len(want) == 0 || len(r.Alignment) != len(want) {
			t.Fatalf("result %d: alignment %v, want %v", i, r.Alignment, want)
		}
		for j := range want {
			if r.Alignment[j] != want[j] {
				t.Errorf("result %d: alignment %v, want %v", i, r.Alignment, want)
				break
			}
		}
		a := aligned.Results[i]
		if a.Attention != nil {
			t.Errorf("result %d: \"alignment\": true answered the attention", i)
		}
		if len(a.Alignment) != len(want) || len(a.Hypotheses) == 0 || len(a.Hypotheses[0].Alignment) != len(want) {
			t.Fatalf("result %d: \"alignment\": true answered %v (hypothesis %v), want %v", i, a.Alignment, a.Hypotheses, want)
		}
		for j := range want {
			if a.Alignment[j] != want[j] || a.Hypotheses[0].Alignment[j] != want[j] {
				t.Errorf("result %d: \"alignment\": true answered %v, want %v", i, a.Alignment, want)
				break
			}
		}
		if p := plain.Results[i]; p.Alignment != nil || p.Attention != nil {
			t.Errorf("result %d: asked for neither, answered alignment %v and %d attention rows", i, p.Alignment, len(p.Attention))
		}
	}
}

// unasked is r as the server answers it to a request that asks for
// neither the attention nor the alignment: without either. r's
// hypotheses are copied, not changed.
func unasked(r translate.ResultJSON) translate.ResultJSON {
	r.Attention, r.Alignment = nil, nil
	r.Hypotheses = slices.Clone(r.Hypotheses)
	for h := range r.Hypotheses {
		r.Hypotheses[h].Alignment = nil
	}
	return r
}
