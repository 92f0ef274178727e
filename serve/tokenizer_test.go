package serve

import (
	"encoding/json"
	"path/filepath"
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
