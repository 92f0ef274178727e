package serve

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/modeldir"
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
	lens, err := m.backend.SourceLengths([]string{text})
	if err != nil || lens[0] < 4*40 {
		t.Fatalf("%d runes became %v pieces (%v), want several per rune", 40, lens, err)
	}
	inputs := make([]string, 64)
	ids := make([][]int64, 64)
	for i := range inputs {
		inputs[i] = text
		ids[i] = make([]int64, lens[0])
	}
	want := requestMemory(m.info.Config.WithDefaults(), Job{IDs: ids, Beam: 8, Attention: true}, idLens(Job{IDs: ids}))
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
