package serve

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/subword"
	"github.com/attnx/attnx/translate"
)

// TestServeSubwordModel serves the demo model trained on SentencePiece
// pieces: raw text in, raw text out.
func TestServeSubwordModel(t *testing.T) {
	demoModel(t) // ORT and the export machinery are there
	dir := filepath.Join(t.TempDir(), "spm")
	if _, err := modeldir.Export("../testdata/demo/onmt_dates_spm.pt", dir, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: dir}}, Batching: true, MaxBatchRows: 16, MaxOutLen: 60})
	code, body := post(t, hs.URL+PathTranslate, `{"inputs": ["Wednesday 14 August 2030", "the 22nd of February, 1959"], "attention": true}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var resp struct {
		Results []struct {
			Text      string      `json:"text"`
			SourceIDs []int64     `json:"source_ids"`
			Attention [][]float32 `json:"attention"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || len(resp.Results) != 2 {
		t.Fatalf("%v: %s", err, body)
	}
	inputs := []string{"Wednesday 14 August 2030", "the 22nd of February, 1959"}
	for i, want := range []string{"2030-08-14", "1959-02-22"} {
		r := resp.Results[i]
		if r.Text != want {
			t.Errorf("input %d: %q, want %q", i, r.Text, want)
		}
		// the pieces, fewer than the characters (the viewer shows them
		// through the model's src_vocab)
		if len(r.SourceIDs) == 0 || len(r.SourceIDs) >= len(inputs[i]) || len(r.Attention) == 0 || len(r.Attention[0]) != len(r.SourceIDs) {
			t.Errorf("input %d: source ids %v, attention %d rows", i, r.SourceIDs, len(r.Attention))
		}
	}
}

// TestServeBudgetCountsPieces: the memory estimate of a text request
// comes from the pieces the model's tokenizer makes, not the characters:
// NFKC turns U+FDFA into several pieces (40 into 242) with the demo's SentencePiece model, so
// 64 inputs of 40 of them with beam 8 and attention need as much as the
// same request sent as ids, and are refused 413; an input over
// --max-input-bytes is refused before the tokenizer runs.
func TestServeBudgetCountsPieces(t *testing.T) {
	demoModel(t)
	dir := filepath.Join(t.TempDir(), "spm")
	if _, err := modeldir.Export("../testdata/demo/onmt_dates_spm.pt", dir, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	s, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: dir}}, MaxSourceLen: 1000, MaxBeam: 8, MaxInputBytes: 1000})
	m := s.models["dates"]
	text := strings.Repeat("\uFDFA", 40)
	src, err := m.backend.Tokenize(context.Background(), []string{text}, false)
	rows := src.Rows
	if err != nil || len(rows[0]) < 4*40 {
		t.Fatalf("%d runes became %d pieces (%v), want several per rune", 40, len(rows[0]), err)
	}
	inputs := make([]string, 64)
	ids := make([][]int64, 64)
	for i := range inputs {
		inputs[i], ids[i] = text, rows[0]
	}
	// Each row at the model's own limit for its pieces (OpenNMT-py's
	// min(250, 1.25 n + 5)), not its characters'.
	job := Job{IDs: ids, Beam: 8, Attention: true}
	limits := make([]translate.Limits, len(ids))
	for i, row := range ids {
		limits[i].Max = m.backend.Info().Defaults.Limit(len(row))
	}
	want := requestMemory(m.info.Config.WithDefaults(), job, limits)
	body, _ := json.Marshal(map[string]any{"inputs": inputs, "beam": 8, "attention": true})
	code, resp := post(t, hs.URL+PathTranslate, string(body))
	if code != 413 || !strings.Contains(resp, "the request needs about "+mib(want)) || !strings.Contains(resp, "--max-request-memory") {
		t.Fatalf("64 x 40 U+FDFA, beam 8, attention: %d %s; want 413 with an estimate of %s", code, resp, mib(want))
	}
	t.Logf("64 x 40 U+FDFA, beam 8, attention: %d %s", code, resp)
	// One such input alone fits.
	body, _ = json.Marshal(map[string]any{"inputs": []string{text}})
	if code, resp := post(t, hs.URL+PathTranslate, string(body)); code != 200 {
		t.Fatalf("one input of 40 U+FDFA: %d %s", code, resp)
	}
	body, _ = json.Marshal(map[string]any{"inputs": []string{"a", strings.Repeat("x", 1001)}})
	code, resp = post(t, hs.URL+PathTranslate, string(body))
	if code != 413 || !strings.Contains(resp, "inputs[1]: 1001 bytes: more than the limit of 1000 bytes per input (--max-input-bytes)") {
		t.Fatalf("an input of 1001 bytes: %d %s", code, resp)
	}
}

// TestServeTokenizerCacheMetrics: a model with subword-nmt BPE reports its
// bounded word cache on /metrics: entries, hits and misses.
func TestServeTokenizerCacheMetrics(t *testing.T) {
	demoModel(t)
	tmp := t.TempDir()
	src := []string{"<pad>", "<sos>", "<eos>", "<unk>"}
	for c := 'a'; len(src) < 19; c++ {
		src = append(src, string(c))
	}
	data, _ := json.Marshal(src)
	vocab := filepath.Join(tmp, "src.json")
	if err := os.WriteFile(vocab, data, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "bpe")
	if _, err := modeldir.Export("../testdata/fixtures/bahdanau_b4_l2/checkpoint.pt", dir, modeldir.Options{SrcVocab: vocab,
		SrcTokenizer: &subword.Spec{Kind: subword.KindSubwordNMT, File: "../subword/testdata/bpe.codes"}}); err != nil {
		t.Fatal(err)
	}
	s, hs := startServer(t, Config{Models: []ModelDir{{Name: "bpe", Dir: dir}}, UnknownToUNK: true, MaxOutLen: 20})
	for _, in := range []string{"the license and the license", "a new license"} {
		body, _ := json.Marshal(map[string]any{"inputs": []string{in}, "max_len": 5})
		if code, resp := post(t, hs.URL+PathTranslate, string(body)); code != 200 {
			t.Fatalf("%q: %d %s", in, code, resp)
		}
	}
	// Each input is tokenised once, by the server: 8 lookups of 8 words.
	// "the", "license", "and" and "new" are stored at their first lookup
	// (4 misses); "a", one character, is its own segmentation and never
	// stored (a miss); the other 3 ("the", "license", "license") are hits.
	entries := gathered(t, s, MetricTokenizerCacheEntries, map[string]string{"model": "bpe"}).GetGauge().GetValue()
	hits := counterValue(t, s, MetricTokenizerCacheLookups, map[string]string{"model": "bpe", "result": "hit"})
	misses := counterValue(t, s, MetricTokenizerCacheLookups, map[string]string{"model": "bpe", "result": "miss"})
	if entries != 4 || misses != 5 || hits != 3 {
		t.Errorf("%s %v, %s hit %v miss %v; want 4 entries, 3 hits, 5 misses", MetricTokenizerCacheEntries, entries, MetricTokenizerCacheLookups, hits, misses)
	}
	bytes := gathered(t, s, MetricTokenizerCacheBytes, map[string]string{"model": "bpe"}).GetGauge().GetValue()
	if bytes <= 0 || bytes > 4*1024 {
		t.Errorf("%s %v, want the 4 short words' few hundred bytes", MetricTokenizerCacheBytes, bytes)
	}
}

// TestServeLongWordRefused: issue 36's request, 64 inputs that are each one
// 16,000-letter word, to a model with subword-nmt BPE (fairseq-long), is
// refused with 413 naming --max-word-chars before the tokenizer runs (its
// cache sees no lookup); a word at the limit is tokenised; and a request
// whose deadline has passed stops tokenizing with the deadline's error.
func TestServeLongWordRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fairseq-long")
	if _, err := modeldir.Export("../testdata/toolkits/fairseq-long/checkpoint_best.pt", dir, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	s, hs := startServer(t, Config{Models: []ModelDir{{Name: "fs", Dir: dir}}, MaxWordChars: 100, RequestTimeout: time.Minute})
	rng := rand.New(rand.NewPCG(5, 6))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	inputs := make([]string, 64)
	for i := range inputs {
		inputs[i] = word(16000)
	}
	body, _ := json.Marshal(map[string]any{"inputs": inputs})
	code, resp := post(t, hs.URL+PathTranslate, string(body))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(resp, "inputs[0]: a word of 16000 characters: more than the limit of 100 characters per word (--max-word-chars)") {
		t.Fatalf("64 words of 16,000 letters: %d %s", code, resp)
	}
	m := s.models["fs"]
	if st := m.backend.(interface{ TokenizerCache() subword.CacheStats }).TokenizerCache(); st.Hits+st.Misses != 0 {
		t.Errorf("the refused request reached the tokenizer: %+v", st)
	}
	// Issue 53: tabs are no spaces to apply_bpe (fairseq's subword_nmt,
	// no pretokenizer), so words of 99 letters joined by tabs are one word
	// of 16,000 characters to it, refused as such (the limit counted
	// white space of every kind as spaces).
	if sp := m.srcSpec; sp.Kind != subword.KindSubwordNMT || sp.Pretokenizer != "" {
		t.Fatalf("fairseq-long's source tokenizer is %+v, want subword-nmt without a pretokenizer", sp)
	}
	for i := range inputs {
		var b strings.Builder
		for j := 0; j < 160; j++ {
			b.WriteString(word(99))
			if j < 159 {
				b.WriteString("\t")
			}
		}
		inputs[i] = b.String()
	}
	body, _ = json.Marshal(map[string]any{"inputs": inputs})
	code, resp = post(t, hs.URL+PathTranslate, string(body))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(resp, "inputs[0]: a word of 15999 characters: more than the limit of 100 characters per word (--max-word-chars)") {
		t.Fatalf("64 inputs of 160 words of 99 letters joined by tabs: %d %s", code, resp)
	}
	body, _ = json.Marshal(map[string]any{"inputs": []string{"a " + word(100) + " b"}, "max_len": 3})
	if code, resp := post(t, hs.URL+PathTranslate, string(body)); code != http.StatusOK {
		t.Errorf("a word of 100 letters, the limit: %d %s", code, resp)
	}
	// fairseq's rules with min_len above the input's output limit (no
	// max_len given): refused naming it, where it answered empty text.
	body, _ = json.Marshal(map[string]any{"inputs": []string{"hello"}, "min_len": 250})
	if code, resp := post(t, hs.URL+PathTranslate, string(body)); code != http.StatusBadRequest || !strings.Contains(resp, "inputs[0]: min_len 250 is at or above this input's output limit of") {
		t.Errorf("min_len 250 under fairseq's rules: %d %s", code, resp)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.backend.Tokenize(ctx, []string{"hello world"}, false); !errors.Is(err, context.Canceled) {
		t.Errorf("Tokenize with a cancelled context: %v, want context.Canceled", err)
	}
}
