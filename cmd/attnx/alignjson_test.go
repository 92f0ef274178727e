package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// TestTranslateJSONAlignment: translate --json writes each result's and
// hypothesis' hard alignment, the attention not with it unless
// --attention; on OpenNMT-py's copy model (onmt-sum-unk) it is the
// attention's argmax over every source position for each output token but
// EOS, the attention --attention writes.
func TestTranslateJSONAlignment(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	src := filepath.Join("..", "..", "testdata", "toolkits", "onmt-sum-unk")
	model := filepath.Join(t.TempDir(), "m")
	if code, _, stderr := attnx("export", filepath.Join(src, "model.pt"), "-o", model); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	info, err := modeldir.ReadInfo(filepath.Join(model, "attnx.json"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(src, "test.src"))
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	run := func(flags ...string) translate.ResultJSON {
		t.Helper()
		args := append([]string{"translate", "--model", model, "--json", "--n-best", "2"}, flags...)
		code, stdout, stderr := attnx(append(args, "--", line)...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		var r translate.ResultJSON
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("%q: %v: %s", args, err, stdout)
		}
		return r
	}
	plain, withAttention := run(), run("--attention")
	if plain.Attention != nil {
		t.Errorf("--json without --attention wrote the attention")
	}
	var want [][2]int
	for i, id := range withAttention.Tokens {
		if id == info.Special.EOS {
			continue
		}
		best := 0
		for k, w := range withAttention.Attention[i] {
			if w > withAttention.Attention[i][best] {
				best = k
			}
		}
		want = append(want, [2]int{best, len(want)})
	}
	if len(want) < 3 {
		t.Fatalf("%d aligned tokens: the test needs a longer output", len(want))
	}
	for _, c := range []struct {
		name string
		got  [][2]int
	}{{"--json", plain.Alignment}, {"--json --attention", withAttention.Alignment}} {
		if len(c.got) != len(want) {
			t.Fatalf("%s: alignment %v, want %v", c.name, c.got, want)
		}
		for i := range want {
			if c.got[i] != want[i] {
				t.Fatalf("%s: alignment %v, want %v", c.name, c.got, want)
			}
		}
	}
	if len(plain.Hypotheses) != 2 || len(plain.Hypotheses[0].Alignment) != len(want) || len(plain.Hypotheses[1].Alignment) == 0 {
		t.Errorf("hypotheses' alignments: %+v", plain.Hypotheses)
	}
}
