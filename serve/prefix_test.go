package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/modeldir"
)

// TestServePrefix: "prefix" forces the start of each input's
// translation as onmt_translate -tgt_file_prefix does: onmt-sp's first
// test sentences with make_onmt_prefix.sh's prefixes answer its beam5.pred
// lines, with and without continuous batching; a prefix count that is
// not the inputs' and a prefix without texts are 400s naming the field.
func TestServePrefix(t *testing.T) {
	demoModel(t) // ORT and the export machinery are there
	root := filepath.Join("..", "testdata", "toolkits")
	dir := filepath.Join(t.TempDir(), "sp")
	if _, err := modeldir.Export(filepath.Join(root, "onmt-sp", "model.pt"), dir, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	lines := func(name string) []string {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(string(data), "\n")[:4]
	}
	src, prefix, want := lines("onmt-sp/test.src"), lines("onmt-prefix/prefix.tgt"), lines("onmt-prefix/beam5.pred")
	body, _ := json.Marshal(map[string]any{"inputs": src, "prefix": prefix})
	for _, batching := range []bool{false, true} {
		_, hs := startServer(t, Config{Models: []ModelDir{{Name: "sp", Dir: dir}}, Batching: batching, MaxBatchRows: 16})
		code, got := post(t, hs.URL+PathTranslate, string(body))
		if code != 200 {
			t.Fatalf("batching %v: %d %s", batching, code, got)
		}
		resp := decodeResponse(t, got)
		for i, r := range resp.Results {
			if r.Text != want[i] {
				t.Errorf("batching %v, input %d: %q, onmt_translate -tgt_file_prefix %q", batching, i, r.Text, want[i])
			}
		}
		for _, c := range []struct{ body, msg string }{
			{`{"inputs": ["a b", "c"], "prefix": ["Die"]}`, "prefix: 1 prefixes for 2 inputs"},
			{`{"ids": [[5, 6]], "prefix": ["Die"]}`, `prefix: give it with \"inputs\"`},
		} {
			code, got := post(t, hs.URL+PathTranslate, c.body)
			if code != 400 || !strings.Contains(got, c.msg) {
				t.Errorf("batching %v: %s: %d %s, want 400 saying %q", batching, c.body, code, got, c.msg)
			}
		}
	}
}
