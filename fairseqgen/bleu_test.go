package fairseqgen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestBLEUMatchesLibbleu: after each sentence pair, the running
// statistics (reflen, predlen, then match and count per order) are those
// fairseq 0.12.2's libbleu kept (testdata/libbleu_cases.py through
// ctypes, as fairseq's Scorer calls it): padding trimmed on the left,
// padding and </s> on the right but the first id kept (an empty
// hypothesis counts one token), <unk> in the reference never matching,
// ids past 65535 hashed by all their bytes.
func TestBLEUMatchesLibbleu(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "libbleu_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Ref, Pred []int64
		Stat      [10]int
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	b := NewBLEU(1, 2, 3)
	for i, c := range cases {
		b.Add(c.Ref, c.Pred)
		got := [10]int{b.RefLen, b.PredLen, b.Match[0], b.Count[0], b.Match[1], b.Count[1], b.Match[2], b.Count[2], b.Match[3], b.Count[3]}
		if got != c.Stat {
			t.Errorf("after pair %d (%v, %v): %v; libbleu %v", i, c.Ref, c.Pred, got, c.Stat)
		}
	}
	// fairseq's Scorer.result_string() of these statistics (its own
	// code, the statistics set by hand).
	if got, want := b.String(), "BLEU4 = 34.84, 78.3/60.0/22.2/20.0 (BP=0.917, ratio=0.920, syslen=23, reflen=25)"; got != want {
		t.Errorf("result string %q\nwant %q", got, want)
	}
}
