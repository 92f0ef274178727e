package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const layoutFixtures = "../../checkpoint/testdata"

func layoutFixture(name string) string { return filepath.Join(layoutFixtures, name) }

// graphs returns a model directory's encoder.onnx and decoder.onnx.
func graphs(t *testing.T, dir string) []byte {
	t.Helper()
	var b []byte
	for _, f := range []string{"encoder.onnx", "decoder.onnx"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, data...)
	}
	return b
}

// The same model saved as two files, as a whole module, in the legacy
// format or with renamed keys fixed by --map exports the same graphs as its
// flat state_dict, and the summary says what was done to the names.
func TestExportLayouts(t *testing.T) {
	tmp := t.TempDir()
	ref := filepath.Join(tmp, "flat")
	if code, _, errs := attnx("export", layoutFixture("s2s_flat.pt"), "-o", ref); code != 0 {
		t.Fatal(errs)
	}
	want := graphs(t, ref)
	cases := []struct {
		name  string
		args  []string
		lines []string
	}{
		{"two files", []string{"--encoder", layoutFixture("s2s_encoder.pt"), "--decoder", layoutFixture("s2s_decoder.pt")}, []string{
			"from s2s_encoder.pt + s2s_decoder.pt\n",
			"  notes  s2s_encoder.pt: keys named encoder.*\n",
			"         s2s_decoder.pt: keys named decoder.*\n"}},
		{"whole module, legacy format", []string{layoutFixture("s2s_legacy_module.pt")}, []string{
			"  notes  read the whole pickled module __main__.Seq2Seq without its class code"}},
		{"Lightning", []string{layoutFixture("s2s_lightning.ckpt")}, []string{
			`removed the prefix "model." in front of encoder./decoder.`}},
		{"maps", []string{layoutFixture("s2s_renamed.pt"), "--map", "decoder.attention.W1=decoder.fc_hidden",
			"--map=decoder.attention.W2=decoder.fc_encoder", "--map", "decoder.attention.V=decoder"}, []string{
			"  notes  map decoder.attention.W1=decoder.fc_hidden renamed 1 key: decoder.attention.W1.weight -> decoder.fc_hidden.weight\n",
			"         map decoder.attention.V=decoder renamed 1 key: decoder.attention.V.weight -> decoder.weight\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(tmp, strings.ReplaceAll(c.name, " ", "_"))
			code, out, errs := attnx(append([]string{"export", "-o", dir}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, l := range c.lines {
				if !strings.Contains(out, l) {
					t.Errorf("output lacks %q:\n%s", l, out)
				}
			}
			if !bytes.Equal(graphs(t, dir), want) {
				t.Errorf("%s: the graphs differ from those of s2s_flat.pt", dir)
			}
		})
	}
}
