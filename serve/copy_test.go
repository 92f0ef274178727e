package serve

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/attnx/attnx/modeldir"
)

// copyModel exports testdata/toolkits/onmt-sum-copy (OpenNMT-py 2.3.0's
// copy-attention summarizer) for one test.
func copyModel(t *testing.T) string {
	t.Helper()
	needORT(t)
	dir := filepath.Join(t.TempDir(), "sum")
	if _, err := modeldir.Export("../testdata/toolkits/onmt-sum-copy/model.pt", dir, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestServeCopyVocabularyPerRequest: on a copy-attention model, one client
// posts a sentence with names, a date and a card number outside the
// vocabulary while another posts the ids from src_vocab_size up (as GET
// /v1/models publishes it), both at once, batching off and on. The prober
// is answered 400 naming the vocabulary size every time, and every
// sentence's source tokens are its own.
func TestServeCopyVocabularyPerRequest(t *testing.T) {
	dir := copyModel(t)
	const secret = "patient Jane Rosalind Okonkwo , born 1987-03-14 , card 4111111111111111 , was admitted in Leeds ."
	for _, batching := range []bool{false, true} {
		t.Run(fmt.Sprintf("batching=%v", batching), func(t *testing.T) {
			_, hs := startServer(t, Config{Models: []ModelDir{{Name: "sum", Dir: dir}}, Batching: batching})
			code, body := get(t, hs.URL+PathModels)
			var models ModelsResponse
			if code != 200 || json.Unmarshal([]byte(body), &models) != nil || len(models.Models) != 1 {
				t.Fatalf("GET %s: %d %s", PathModels, code, body)
			}
			vs := models.Models[0].SrcVocab
			probe := make([]string, 9) // the sentence's 9 words outside the vocabulary
			for i := range probe {
				probe[i] = fmt.Sprint(vs + i)
			}
			probeBody := fmt.Sprintf(`{"ids": [[%s]], "max_len": 1, "beam": 1}`, strings.Join(probe, ", "))
			// The secret is decoded once before any probe: a shared table
			// would hold its words.
			if code, body := post(t, hs.URL+PathTranslate, fmt.Sprintf(`{"inputs": [%q], "beam": 1, "max_len": 8}`, secret)); code != 200 {
				t.Fatalf("the sentence: %d %s", code, body)
			}
			const rounds = 6
			var wg sync.WaitGroup
			errs := make(chan error, 2*rounds)
			wg.Go(func() {
				for i := range rounds {
					text := fmt.Sprintf("patient Zq%dxa Okonkwo%d , card 41111%d , was admitted in Leeds%d .", i, i, i, i)
					code, body := post(t, hs.URL+PathTranslate, fmt.Sprintf(`{"inputs": [%q], "beam": 1, "max_len": 8}`, text))
					if code != 200 {
						errs <- fmt.Errorf("round %d: %d %s", i, code, body)
						continue
					}
					r := decodeResponse(t, body).Results[0]
					if want := strings.Fields(text); !slices.Equal(r.SourceTokens, want) {
						errs <- fmt.Errorf("round %d: source_tokens %q, want %q", i, r.SourceTokens, want)
					}
				}
			})
			wg.Go(func() {
				for i := range rounds {
					code, body := post(t, hs.URL+PathTranslate, probeBody)
					if code != 400 || !strings.Contains(body, fmt.Sprintf("ids[0]: token id %d at position 0 is outside the source vocabulary [0, %d)", vs, vs)) {
						errs <- fmt.Errorf("probe %d: %d %s: want 400 naming the vocabulary size %d", i, code, body, vs)
					}
				}
			})
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// TestServeCopyRulesRefused: rules a copy-attention model cannot decode
// with (attnx's and JoeyNMT's beam searches, fairseq's searches) are the
// client's setting: 400 naming the field rules, not a server error, and
// OpenNMT-py's rules and greedy decoding under attnx's still answer.
func TestServeCopyRulesRefused(t *testing.T) {
	dir := copyModel(t)
	const text = "officials in lyon said on thursday that Nera , a farmer from Waneko , had signed a contract ."
	for _, batching := range []bool{false, true} {
		t.Run(fmt.Sprintf("batching=%v", batching), func(t *testing.T) {
			s, hs := startServer(t, Config{Models: []ModelDir{{Name: "sum", Dir: dir}}, Batching: batching})
			for _, c := range []struct {
				fields string
				code   int
				want   string
			}{
				{`"rules": "spec"`, 400, `rules "spec" with beam 5: `},
				{`"rules": "joeynmt", "beam": 3`, 400, `rules "joeynmt" with beam 3: `},
				{`"rules": "fairseq", "beam": 1`, 400, `rules "fairseq": `},
				{`"rules": "spec", "beam": 1`, 200, ""},
				{`"rules": "opennmt", "beam": 2`, 200, ""},
			} {
				code, body := post(t, hs.URL+PathTranslate, fmt.Sprintf(`{"inputs": [%q], "max_len": 6, %s}`, text, c.fields))
				var e ErrorResponse
				if code != 200 {
					json.Unmarshal([]byte(body), &e)
				}
				if code != c.code || c.want != "" && (!strings.HasPrefix(e.Error, c.want) || !strings.Contains(e.Error, "has copy attention")) {
					t.Errorf("%s: %d %s; want %d %q", c.fields, code, body, c.code, c.want)
				}
			}
			if n := counterValue(t, s, MetricRequests, map[string]string{"model": "sum", "code": "500"}); n != 0 {
				t.Errorf("%v requests counted as server errors", n)
			}
		})
	}
}
