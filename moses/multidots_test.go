package moses

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestMultidotsMatchSacremoses compares the handling of runs of dots with
// sacremoses' own (testdata/make_multidots.py): replace_multidots' marked
// text, restore_multidots' text from it and the whole tokenizer's output,
// on long runs and on random strings of dots and the markers' letters,
// where the markers of neighbouring runs meet.
func TestMultidotsMatchSacremoses(t *testing.T) {
	data, err := os.ReadFile("testdata/multidots.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tok := NewTokenizer("en")
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	bad := 0
	for i, line := range lines {
		var c struct{ In, Replaced, Restored, Tok string }
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		for _, x := range [][3]string{
			{"replace_multidots", replaceMultidots(c.In), c.Replaced},
			{"restore_multidots", restoreMultidots(c.Replaced), c.Restored},
			{"tokenize", tok.Tokenize(c.In), c.Tok},
		} {
			if x[1] != x[2] {
				if bad++; bad <= 5 {
					t.Errorf("line %d %s(%.60q):\n got  %.80q\n want %.80q", i+1, x[0], c.In, x[1], x[2])
				}
			}
		}
	}
	if len(lines) < 400 || bad > 0 {
		t.Fatalf("%d of %d lines differ from sacremoses", bad, len(lines))
	}
}
