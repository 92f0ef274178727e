package mtscore

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

// TestReadLines: Python's universal newlines, and the files refused.
func TestReadLines(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"a\nb\r\nc\rd", []string{"a", "b", "c", "d"}, ""},
		{"a\n\nb\n", []string{"a", "", "b"}, ""},
		{"", nil, "hyp.txt is empty: nothing to score (a failed translation?)"},
		{"ok\nab\xffc\n", nil, "hyp.txt line 2: not valid UTF-8 (at byte 2 of the line)"},
	} {
		got, err := ReadLines(strings.NewReader(c.in), "hyp.txt")
		if c.wantErr != "" {
			if err == nil || err.Error() != c.wantErr {
				t.Errorf("%q: error %v, want %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("%q: %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// TestCorpus: BLEU and chrF of an exact match are 100, ROUGE's F is 100,
// and the JSON is an array of the three objects in that order.
func TestCorpus(t *testing.T) {
	hyps := []string{"the cat sat on the mat .", "a dog ran ."}
	s, err := Corpus(hyps, [][]string{hyps}, CorpusOptions{Metrics: []string{MetricRouge, MetricBLEU, MetricChrF}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Scores) != 2 || s.Scores[0].Name() != "BLEU" || math.Abs(s.Scores[0].Value()-100) > 1e-9 || s.Scores[1].Value() != 100 || len(s.Rouge) != 3 || s.Rouge[0].F != 100 {
		t.Fatalf("scores %+v", s)
	}
	var b strings.Builder
	if err := s.WriteJSON(&b, 2); err != nil {
		t.Fatal(err)
	}
	var objs []map[string]any
	if err := json.Unmarshal([]byte(b.String()), &objs); err != nil || len(objs) != 3 || objs[0]["name"] != "BLEU" || objs[2]["name"] != "ROUGE" || objs[2]["implementation"] != Rouge155 {
		t.Errorf("JSON %s: %v", b.String(), err)
	}
	var text strings.Builder
	if err := s.WriteText(&text, 1); err != nil || !strings.HasPrefix(text.String(), "BLEU|") || strings.Count(text.String(), "\n") != 5 {
		t.Errorf("text %q: %v", text.String(), err)
	}
	var me *MetricError
	if _, err := Corpus(hyps, [][]string{hyps}, CorpusOptions{Metrics: []string{"ter"}}); !errors.As(err, &me) || me.Name != "ter" {
		t.Errorf("ter: %v", err)
	}
	if _, err := Corpus(hyps, [][]string{hyps, hyps}, CorpusOptions{Metrics: []string{MetricRouge}}); err == nil || err.Error() != "ROUGE scores against one reference, not 2" {
		t.Errorf("two references: %v", err)
	}
}
