package serve

import (
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
)

// TestRequestMemory checks the estimate against hand-counted figures, and
// that the request that took a server to 1.1 GB (64 rows of 256 ids, beam
// 16, max_len 512) is over the default per-request budget with attention
// and under it without.
func TestRequestMemory(t *testing.T) {
	demo := attention.Config{Arch: attention.LuongGeneral, Hidden: 64, Embedding: 64, Layers: 1, SrcVocab: 63, TgtVocab: 15}
	gru := attention.Config{Arch: attention.LuongDot, Cell: attention.GRU, Hidden: 8, Layers: 2, SrcVocab: 10, TgtVocab: 100}
	ids := func(rows, n int) [][]int64 {
		out := make([][]int64, rows)
		for i := range out {
			out[i] = make([]int64, n)
		}
		return out
	}
	cases := []struct {
		name string
		c    attention.Config
		job  Job
		want int64
	}{
		// Slots 4*(2*2*1*64 + 3*64 + 15 + 3 + 8) = 1896; history 16*32 =
		// 512; answer 16*32 = 512.
		{"greedy, no attention", demo, Job{IDs: ids(1, 3)}, 1896 + 512 + 512},
		// Plus attention: 16*3*12 recorded, 16*3*12 answered.
		{"greedy, attention", demo, Job{IDs: ids(1, 3), Attention: true}, 1896 + 512 + 512 + 576 + 576},
		// A row of 5 tokens (a text the tokenizer made 5 pieces of):
		// max_len 2*5+10 = 20.
		{"five tokens", demo, Job{IDs: ids(1, 5), MaxLen: 0}, 4*(2*2*64+5*64+15+5+8) + 20*32 + 20*32},
		// GRU: one state; beam 4 (4 slots, 4 histories), n_best 2.
		{"gru beam", gru, Job{IDs: ids(2, 5), MaxLen: 7, Beam: 4, NBest: 2}, 2 * (4*4*(2*1*2*8+5*8+100+5+8) + 4*7*32 + 2*7*32)},
	}
	for _, c := range cases {
		if got := requestMemory(c.c, c.job, assumedLimits(c.job, DefaultMaxOutLen)); got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, got, c.want)
		}
	}
	bomb := Job{IDs: ids(64, 256), Beam: 16, MaxLen: 512, Attention: true}
	if got := requestMemory(demo, bomb, assumedLimits(bomb, DefaultMaxOutLen)); got <= DefaultMaxRequestMemory {
		t.Errorf("the memory bomb with attention: %d bytes, within the default budget of %d", got, DefaultMaxRequestMemory)
	} else {
		t.Logf("the memory bomb with attention: %s", mib(got))
	}
	bomb.Attention = false
	if got := requestMemory(demo, bomb, assumedLimits(bomb, DefaultMaxOutLen)); got > DefaultMaxRequestMemory {
		t.Errorf("the memory bomb without attention: %d bytes, over the default budget of %d", got, DefaultMaxRequestMemory)
	} else {
		t.Logf("the memory bomb without attention: %s", mib(got))
	}
}

// TestMemoryBudgets: a request over the per-request budget is refused 413
// naming it; while one request holds most of the server's budget, another
// is refused 429 naming that one, and is served once the first has been
// answered.
func TestMemoryBudgets(t *testing.T) {
	b := newBlockingBackend()
	one := Job{IDs: [][]int64{{3, 4, 5}}, MaxLen: 50}
	need := requestMemory(b.Info().Config.WithDefaults(), one, assumedLimits(one, DefaultMaxOutLen))
	s, hs := startServer(t, Config{Models: []ModelDir{{Name: "m"}}, Open: b.opener(), MaxRequestMemory: need, MaxMemory: need * 3 / 2})
	_ = s
	url := hs.URL + PathTranslate
	code, body := post(t, url, `{"ids": [[3, 4, 5], [6, 7, 8]], "max_len": 50}`)
	if code != 413 || !strings.Contains(body, "more than the per-request memory budget of") || !strings.Contains(body, "(--max-request-memory)") {
		t.Errorf("two rows: %d %s", code, body)
	}
	first := postAsync(t, url, `{"ids": [[3, 4, 5]], "max_len": 50}`)
	<-b.entered
	code, body = post(t, url, `{"ids": [[5, 4, 3]], "max_len": 50}`)
	if code != 429 || !strings.Contains(body, "memory budget of") || !strings.Contains(body, "(--max-memory) is taken by the requests in flight") {
		t.Errorf("second request while the first decodes: %d %s", code, body)
	}
	b.release <- struct{}{}
	if a := <-first; a.code != 200 {
		t.Errorf("first request: %d %s", a.code, a.body)
	}
	b.release <- struct{}{}
	if code, body := post(t, url, `{"ids": [[5, 4, 3]], "max_len": 50}`); code != 200 {
		t.Errorf("after the first was answered: %d %s", code, body)
	}
	if used := s.budget.used.Load(); used != 0 {
		t.Errorf("%d bytes still reserved with no request in flight", used)
	}
}
