package serve

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOnmtConfigRefuses checks that what attnx serve cannot do as
// onmt_server does is refused at start, naming the key at fault.
func TestReadOnmtConfigRefuses(t *testing.T) {
	root := onmtModelRoot(t, "onmt-sp", []string{"spm_src.model", "spm_tgt.model"})
	other := filepath.Join(t.TempDir(), "other.model")
	if err := os.WriteFile(other, []byte("not the export's"), 0o644); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(t.TempDir(), "model.pt")
	if err := os.WriteFile(ckpt, []byte("a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	spm := map[string]any{"src": map[string]any{"type": "sentencepiece", "model": "spm_src.model"}, "tgt": map[string]any{"type": "sentencepiece", "model": "spm_tgt.model"}}
	model := func(extra map[string]any) map[string]any {
		m := map[string]any{"id": 1, "model": "model.pt", "opt": map[string]any{}, "tokenizer": spm}
		for k, v := range extra {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	for _, c := range []struct {
		name   string
		models []any
		says   string
	}{
		{"preprocess", []any{model(map[string]any{"preprocess": []string{"mymod.clean"}})}, `"preprocess" is refused: its functions are Python`},
		{"postprocess", []any{model(map[string]any{"postprocess": []string{"mymod.fix"}})}, `"postprocess" is refused`},
		{"custom_opt", []any{model(map[string]any{"custom_opt": map[string]any{"a": 1}})}, `"custom_opt" is refused`},
		{"ct2", []any{model(map[string]any{"ct2_model": "ct2dir"})}, `"ct2_model" is refused: a CTranslate2 model`},
		{"features", []any{model(map[string]any{"features": map[string]any{"n_src_feats": 1}})}, `"features" is refused`},
		{"ensemble", []any{model(map[string]any{"model": nil, "models": []string{"model.pt", "model.pt"}})}, "names 2 checkpoints, an ensemble"},
		{"no model", []any{model(map[string]any{"model": nil})}, `missing "models" (or "model")`},
		{"checkpoint", []any{model(map[string]any{"model": ckpt})}, "is a file, an OpenNMT-py checkpoint: attnx serves its export, `attnx export " + ckpt + " -o DIR`"},
		{"not a model dir", []any{model(map[string]any{"model": t.TempDir()})}, "is not an attnx model directory"},
		{"no opt", []any{model(map[string]any{"opt": nil})}, `missing "opt"`},
		{"report_align", []any{model(map[string]any{"opt": map[string]any{"report_align": true}})}, `opt "report_align": refused`},
		{"false flag", []any{model(map[string]any{"opt": map[string]any{"replace_unk": false}})}, `opt "replace_unk" = false: onmt_server passes -replace_unk for false too`},
		{"unknown opt", []any{model(map[string]any{"opt": map[string]any{"beam": 5}})}, `opt "beam": not a translate option attnx serve takes`},
		{"opt type", []any{model(map[string]any{"opt": map[string]any{"beam_size": "five"}})}, `opt "beam_size" = "five": want an integer`},
		{"phrase_table", []any{model(map[string]any{"opt": map[string]any{"phrase_table": "pt.txt"}})}, `opt "phrase_table": refused`},
		{"duplicate id", []any{model(nil), model(nil)}, "model id 1 already exists"},
		{"negative id", []any{model(map[string]any{"id": -2})}, "id -2: want a number >= 0"},
		{"on_timeout", []any{model(map[string]any{"on_timeout": "sleep"})}, `on_timeout "sleep": want to_cpu or unload`},
		{"tokenizer type", []any{model(map[string]any{"tokenizer": map[string]any{"type": "moses"}})}, `tokenizer src: type "moses": want sentencepiece or pyonmttok`},
		{"tokenizer no type", []any{model(map[string]any{"tokenizer": map[string]any{"model": "spm_src.model"}})}, `tokenizer src: missing mandatory option "type"`},
		{"tokenizer file", []any{model(map[string]any{"tokenizer": map[string]any{"src": spm["src"], "tgt": map[string]any{"type": "sentencepiece", "model": other}}})}, "tokenizer tgt: " + other + " differs from the model directory's"},
		{"tokenizer kind", []any{model(map[string]any{"tokenizer": map[string]any{"type": "pyonmttok", "mode": "conservative", "params": map[string]any{}}})}, "tokenizer src: pyonmttok, but the model directory's is sentencepiece"},
		{"no models", []any{}, `no "models"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := onmtConfFile(t, "", root, map[string]any{"models": c.models})
			_, _, err := ReadOnmtConfig(path, DefaultOnmtURLRoot)
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("ReadOnmtConfig: %v, want an error saying %q", err, c.says)
			}
		})
	}
	t.Run("url root", func(t *testing.T) {
		path := onmtConfFile(t, "", root, map[string]any{"models": []any{model(nil)}})
		for _, r := range []string{"translator", "/translator/"} {
			if _, _, err := ReadOnmtConfig(path, r); err == nil || !strings.Contains(err.Error(), "onmt URL root") {
				t.Errorf("URL root %q: %v, want it refused", r, err)
			}
		}
	})
}

// TestReadOnmtConfigModels checks how conf.json's models map onto served
// directories and request fields: ids given and numbered, one served
// model per directory, one tokenizer for both sides reported as two.
func TestReadOnmtConfigModels(t *testing.T) {
	root := onmtModelRoot(t, "onmt-sp", []string{"spm_src.model", "spm_tgt.model"})
	tok := map[string]any{"type": "sentencepiece", "model": "spm_src.model"}
	// The export's target tokenizer is spm_tgt.model: one section for both
	// sides is refused for the target.
	path := onmtConfFile(t, "", root, map[string]any{"models": []any{
		map[string]any{"model": "model.pt", "opt": map[string]any{}, "tokenizer": tok},
	}})
	if _, _, err := ReadOnmtConfig(path, ""); err == nil || !strings.Contains(err.Error(), "tokenizer tgt: ") {
		t.Fatalf("one tokenizer section for two SentencePiece models: %v, want the target's refused", err)
	}
	path = onmtConfFile(t, "", root, map[string]any{"models": []any{
		map[string]any{"model": "model.pt", "opt": map[string]any{"beam_size": 3, "n_best": 2, "alpha": 0.5, "length_penalty": "wu", "replace_unk": true, "ignore_when_blocking": "▁.", "gpu": -1}},
		map[string]any{"id": 0, "models": []string{"model.pt"}, "opt": map[string]any{"random_sampling_topk": 5, "random_sampling_temp": 0.7, "seed": 3}},
		map[string]any{"models": "model.pt", "opt": map[string]any{"random_sampling_temp": 0.5}},
	}})
	_, _, err := ReadOnmtConfig(path, "")
	if err == nil || !strings.Contains(err.Error(), "model id 0 already exists") {
		t.Fatalf("id 0 given after a model numbered 0: %v, want it refused as onmt_server refuses it", err)
	}
	path = onmtConfFile(t, "", root, map[string]any{"models": []any{
		map[string]any{"id": 4, "model": "model.pt", "opt": map[string]any{"beam_size": 3, "n_best": 2, "alpha": 0.5, "length_penalty": "wu", "replace_unk": true, "ignore_when_blocking": "▁.", "gpu": -1}},
		map[string]any{"models": []string{"model.pt"}, "opt": map[string]any{"random_sampling_topk": 5, "random_sampling_temp": 0.7, "seed": 3}},
		map[string]any{"models": "model.pt", "opt": map[string]any{"random_sampling_temp": 0.5}},
	}})
	api, dirs, err := ReadOnmtConfig(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 1 || dirs[0].Name != "onmt-4" || dirs[0].Dir != filepath.Join(root, "model.pt") {
		t.Errorf("served %v, want one model onmt-4 of %s", dirs, filepath.Join(root, "model.pt"))
	}
	var ids []int
	for _, m := range api.Models {
		ids = append(ids, m.ID)
		if m.Name != "onmt-4" || !m.Pretokenized {
			t.Errorf("model %d: name %q, pretokenized %v; want onmt-4, true", m.ID, m.Name, m.Pretokenized)
		}
	}
	if want := []int{4, 0, 1}; !equalInts(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
	got, _ := json.Marshal([]Request{api.Models[0].Decoding, api.Models[1].Decoding, api.Models[2].Decoding})
	want := `[{"beam":3,"n_best":2,"length_penalty":0.5,"length_penalty_form":"wu","replace_unk":true,"ignore_when_blocking":["▁."]},` +
		`{"temperature":0.7,"sampling":true,"sampling_topk":5,"seed":3},{}]`
	if string(got) != want {
		t.Errorf("request fields\n%s\nwant\n%s", got, want)
	}
	if api.Models[0].NBest != 2 || api.Models[1].NBest != 1 {
		t.Errorf("n_best %d, %d; want 2, 1", api.Models[0].NBest, api.Models[1].NBest)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOnmtURLRoot serves the API under another root and under none.
func TestOnmtURLRoot(t *testing.T) {
	root := onmtModelRoot(t, "onmt-sp", []string{"spm_src.model", "spm_tgt.model"})
	path := onmtConfFile(t, "onmt-server", root, nil)
	for _, c := range []struct{ root, health, gone string }{
		{"", "/health", "/translator/health"},
		{"/api/v2", "/api/v2/health", "/translator/health"},
	} {
		api, dirs, err := ReadOnmtConfig(path, c.root)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := New(Config{Models: dirs, Onmt: api, UnknownToUNK: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Load(); err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			path string
			code int
		}{{c.health, http.StatusOK}, {c.gone, http.StatusNotFound}, {"/healthz", http.StatusOK}} {
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p.path, nil))
			if rec.Code != p.code {
				t.Errorf("root %q: GET %s: %d %s, want %d", c.root, p.path, rec.Code, rec.Body, p.code)
			}
		}
		srv.Close()
	}
}

// TestOnmtOptChecked checks that an opt the server's limits or the
// model's rules refuse stops the start, naming the model id.
func TestOnmtOptChecked(t *testing.T) {
	root := onmtModelRoot(t, "onmt-sp", []string{"spm_src.model", "spm_tgt.model"})
	for _, c := range []struct {
		opt  map[string]any
		says string
	}{
		{map[string]any{"beam_size": 40}, "onmt model 3: its opt, as the request fields it sets"},
		{map[string]any{"beam_size": 40}, "beam = 40: want 1 (greedy) to 16"},
		{map[string]any{"beam_size": 2, "n_best": 3}, "n_best = 3: want 1 to beam = 2"},
		{map[string]any{"length_penalty": "power"}, `length_penalty_form = "power" with rules "opennmt"`},
	} {
		path := onmtConfFile(t, "", root, map[string]any{"models": []any{map[string]any{"id": 3, "model": "model.pt", "opt": c.opt}}})
		api, dirs, err := ReadOnmtConfig(path, "")
		if err != nil {
			t.Fatal(err)
		}
		srv, err := New(Config{Models: dirs, Onmt: api})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Load(); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("opt %v: Load: %v, want an error saying %q", c.opt, err, c.says)
		}
	}
}

// TestPyStrip checks the white space onmt_server strips from each src and
// gives back around its translation (Python's str.isspace).
func TestPyStrip(t *testing.T) {
	for _, c := range []struct{ in, head, text, tail string }{
		{"  a b \n", "  ", "a b", " \n"},
		{"\x1c\x1fa\u00a0", "\x1c\x1f", "a", "\u00a0"},
		{"\u3000a\u2028", "\u3000", "a", "\u2028"},
		{"   ", "   ", "", "   "},
		{"", "", "", ""},
		{"a\u200bb", "", "a\u200bb", ""}, // a zero-width space is no white space
	} {
		if h, x, tl := pySpaces(c.in, false), pyStrip(c.in), pySpaces(c.in, true); h != c.head || x != c.text || tl != c.tail {
			t.Errorf("%q: %q %q %q, want %q %q %q", c.in, h, x, tl, c.head, c.text, c.tail)
		}
	}
}
