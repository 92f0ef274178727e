package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/translate"
)

// fairseqLong is issue 53's model: testdata/toolkits/fairseq-long
// exported once per run (fairseq's rules, a limit of 201 tokens by
// default), with the first lines of its test set.
var fairseqLong struct {
	once  sync.Once
	dir   string
	lines []string
	err   error
}

func fairseqLongModel(tb testing.TB) (string, []string) {
	tb.Helper()
	exportModels(tb)
	fairseqLong.once.Do(func() {
		fairseqLong.dir = filepath.Join(models.tmp, "fairseq-long")
		if _, fairseqLong.err = modeldir.Export("../testdata/toolkits/fairseq-long/checkpoint_best.pt", fairseqLong.dir, modeldir.Options{}); fairseqLong.err != nil {
			return
		}
		var data []byte
		if data, fairseqLong.err = os.ReadFile("../testdata/toolkits/fairseq-long/test.raw.en"); fairseqLong.err == nil {
			fairseqLong.lines = strings.Split(strings.TrimSpace(string(data)), "\n")
		}
	})
	if fairseqLong.err != nil {
		tb.Fatalf("exporting fairseq-long: %v", fairseqLong.err)
	}
	return fairseqLong.dir, fairseqLong.lines
}

// cut shortens an answer for a failure's message.
func cut(body string) string {
	if len(body) > 400 {
		return body[:400] + "..."
	}
	return body
}

// postJSON marshals body and posts it to the server's translate path.
func postJSON(tb testing.TB, hs string, body map[string]any) (int, string) {
	tb.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		tb.Fatal(err)
	}
	return post(tb, hs+PathTranslate, string(data))
}

// TestServeMinLenAtRowLimit: issue 53's item 10. With fairseq's rules a
// min_len at or above a row's output limit is answered 400 naming the
// input, batching on and off, greedy and beam (under batching it was 200
// with empty text): the model's limit of 201 tokens, and a limit
// max_len_a gives one row and not the other.
func TestServeMinLenAtRowLimit(t *testing.T) {
	dir, lines := fairseqLongModel(t)
	long, short := lines[2], "Thank you ."
	for _, batching := range []bool{true, false} {
		s, hs := startServer(t, Config{Models: []ModelDir{{Name: "fs", Dir: dir}}, Batching: batching, RequestTimeout: time.Minute})
		ids, err := s.models["fs"].backend.Tokenize(context.Background(), []string{long, short}, false)
		if err != nil {
			t.Fatal(err)
		}
		// max_len_a 1: int(n + 200) + 1 tokens for n source tokens.
		shortLimit := len(ids.Rows[1]) + 201
		for _, beam := range []int{1, 5} {
			for _, c := range []struct {
				body map[string]any
				want string
			}{
				{map[string]any{"min_len": 300}, "inputs[0]: min_len 300 is at or above this input's output limit of 201 tokens, EOS included"},
				{map[string]any{"min_len": shortLimit, "max_len_a": 1},
					fmt.Sprintf("inputs[1]: min_len %d is at or above this input's output limit of %d tokens, EOS included", shortLimit, shortLimit)},
			} {
				c.body["inputs"], c.body["beam"] = []string{long, short}, beam
				code, resp := postJSON(t, hs.URL, c.body)
				if code != http.StatusBadRequest || !strings.Contains(resp, c.want) {
					t.Errorf("batching %v, beam %d, %v: %d %s\nwant 400 with %q", batching, beam, c.body, code, cut(resp), c.want)
				}
			}
			// One below the short row's limit decodes both rows, neither
			// empty.
			code, resp := postJSON(t, hs.URL, map[string]any{"inputs": []string{long, short}, "beam": beam, "min_len": shortLimit - 1, "max_len_a": 1})
			if code != http.StatusOK {
				t.Fatalf("batching %v, beam %d, min_len %d: %d %s", batching, beam, shortLimit-1, code, cut(resp))
			}
			for i, r := range decodeResponse(t, resp).Results {
				if len(r.Tokens) < shortLimit-1 || r.Text == "" {
					t.Errorf("batching %v, beam %d, min_len %d: result %d has %d tokens, text %q", batching, beam, shortLimit-1, i, len(r.Tokens), r.Text)
				}
			}
		}
	}
}

// TestServeMaxOutLenBoundsEveryLimit: issue 53's item 6. --max-out-len
// bounds a row's real limit whatever gives it: a request whose own
// max_len_a (fairseq) or max_len_ratio (OpenNMT-py) gives a row more is
// refused 400 naming the field, the row and the cap, as max_len is; a
// limit the request does not ask for (the model's 201) is cut to the cap.
func TestServeMaxOutLenBoundsEveryLimit(t *testing.T) {
	dir, lines := fairseqLongModel(t)
	for _, batching := range []bool{true, false} {
		_, hs := startServer(t, Config{Models: []ModelDir{{Name: "fs", Dir: dir}}, Batching: batching, MaxOutLen: 100, RequestTimeout: time.Minute})
		for _, c := range []struct {
			body map[string]any
			want string
		}{
			{map[string]any{"max_len": 101}, "max_len = 101: want 1 to 100 (--max-out-len)"},
			// int(100 n + 200) + 1, within 1,024 positions.
			{map[string]any{"max_len_a": 100}, "inputs[0]: max_len_a gives this input an output limit of 1024 tokens, EOS included: more than the server's --max-out-len 100; lower max_len_a"},
			// min(250, int(30 n + 5)).
			{map[string]any{"rules": "opennmt", "max_len_ratio": 30}, "inputs[0]: max_len_ratio gives this input an output limit of 250 tokens, EOS included: more than the server's --max-out-len 100; lower max_len_ratio"},
		} {
			c.body["inputs"] = []string{lines[0], "Thank you ."}
			code, resp := postJSON(t, hs.URL, c.body)
			if code != http.StatusBadRequest || !strings.Contains(resp, c.want) {
				t.Errorf("batching %v, %v: %d %s\nwant 400 with %q", batching, c.body, code, cut(resp), c.want)
			}
		}
		// The model's own 201 is cut to 100: with EOS kept out of the
		// first 99 tokens every row ends at the 100th.
		for _, beam := range []int{1, 5} {
			code, resp := postJSON(t, hs.URL, map[string]any{"inputs": lines[:3], "beam": beam, "min_len": 99})
			if code != http.StatusOK {
				t.Fatalf("batching %v, beam %d, min_len 99: %d %s", batching, beam, code, cut(resp))
			}
			for i, r := range decodeResponse(t, resp).Results {
				if len(r.Tokens) != 100 {
					t.Errorf("batching %v, beam %d, min_len 99 under --max-out-len 100: result %d has %d tokens, want 100", batching, beam, i, len(r.Tokens))
				}
			}
		}
	}
}

// TestServeBudgetFollowsOutputLimits: the memory estimate counts each
// row's real output limit: max_len_a's (1,024 tokens here, where the
// estimate took 2n+10 and let the request through) and the model's own
// 201 when the request sets nothing.
func TestServeBudgetFollowsOutputLimits(t *testing.T) {
	dir, lines := fairseqLongModel(t)
	inputs := lines[:8]
	var s *Server
	rows := func() translate.Sources {
		ids, err := s.models["fs"].backend.Tokenize(context.Background(), inputs, false)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	estimate := func(limit func(n int) int) int64 {
		var total int64
		for _, row := range rows().Rows {
			total += rowMemory(s.models["fs"].info.Config.WithDefaults(), len(row), limit(len(row)), 16, 1, false)
		}
		return total
	}
	for _, batching := range []bool{true, false} {
		// Measure the estimates on a server with the default budget,
		// then serve with a budget between the real one and 2n+10's.
		s, _ = startServer(t, Config{Models: []ModelDir{{Name: "fs", Dir: dir}}, Batching: batching, MaxOutLen: 1024})
		withA := estimate(func(n int) int { return min(100*n+200, 1023) + 1 })
		model := estimate(func(int) int { return 201 })
		old := estimate(func(n int) int { return 2*n + 10 })
		budget := (old + model) / 2
		if old >= budget {
			t.Fatalf("2n+10's estimate %d is not below the model limit's %d: the test needs one", old, model)
		}
		var hs *httptest.Server
		s, hs = startServer(t, Config{Models: []ModelDir{{Name: "fs", Dir: dir}}, Batching: batching, MaxOutLen: 1024, MaxRequestMemory: budget})
		for _, c := range []struct {
			body map[string]any
			need int64
		}{
			{map[string]any{"max_len_a": 100}, withA},
			{map[string]any{}, model},
		} {
			c.body["inputs"], c.body["beam"] = inputs, 16
			code, resp := postJSON(t, hs.URL, c.body)
			if code != http.StatusRequestEntityTooLarge || !strings.Contains(resp, "the request needs about "+mib(c.need)+" ") {
				t.Errorf("batching %v, %v: %d %s\nwant 413 needing about %s", batching, c.body, code, cut(resp), mib(c.need))
			}
		}
	}
}
