package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeOnmtConfigFlags checks attnx serve's --onmt-config wiring: the
// conf.json's models become the served ones (by directory, named after the
// first id), onmt_server's <unk> mapping is on, and the flags that do not
// go together are refused naming them.
func TestServeOnmtConfigFlags(t *testing.T) {
	dir := t.TempDir()
	export := filepath.Join(dir, "model.attnx")
	if err := os.MkdirAll(export, 0o755); err != nil {
		t.Fatal(err)
	}
	// An attnx.json is all ReadOnmtConfig looks for without a tokenizer
	// section; serveConfig loads nothing.
	if err := os.WriteFile(filepath.Join(export, "attnx.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "conf.json")
	if err := os.WriteFile(conf, []byte(`{"models_root": "`+dir+`", "models": [{"id": 7, "model": "model.attnx", "opt": {"beam_size": 2}}, {"id": 8, "model": "model.attnx", "opt": {}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := serveConfig([]string{"--onmt-config", conf, "--url-root", "/api"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Models) != 1 || cfg.Models[0].Name != "onmt-7" || cfg.Models[0].Dir != export {
		t.Errorf("models %v, want onmt-7=%s", cfg.Models, export)
	}
	if cfg.Onmt == nil || cfg.Onmt.URLRoot != "/api" || len(cfg.Onmt.Models) != 2 || !cfg.UnknownToUNK {
		t.Errorf("Onmt %+v, UnknownToUNK %v: want conf.json's 2 models under /api, <unk> on", cfg.Onmt, cfg.UnknownToUNK)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--onmt-config", conf, "--model", export}, "give it or --model, not both"},
		{[]string{"--model", export, "--url-root", "/api"}, "--url-root goes with --onmt-config"},
		{[]string{"--onmt-config", filepath.Join(dir, "none.json")}, "onmt config: open " + filepath.Join(dir, "none.json")},
		{[]string{}, "--model DIR is required (or --onmt-config conf.json)"},
	} {
		code, _, errOut := attnx(append([]string{"serve"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.says) {
			t.Errorf("attnx serve %s: exit %d, %q; want 2 and %q", strings.Join(c.args, " "), code, errOut, c.says)
		}
	}
}
