package translate

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestLoadUnkDicts: fairseq's alignment dictionary splits a line on white
// space and ignores further columns; OpenNMT-py's phrase table splits it
// on "|||" and keeps the words exactly; in both a later line wins and
// "\r\n" ends a line as Python reads text. Lines either toolkit fails on
// are errors naming the file and line.
func TestLoadUnkDicts(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, text string
		load       func(string) (UnkDict, error)
		want       UnkDict
		err        string
	}{
		{"fairseq", "Leeds Lids\nBebema  Bebemah extra\r\nLeeds Leedz\n", LoadAlignDict,
			UnkDict{"Leeds": "Leedz", "Bebema": "Bebemah"}, ""},
		{"fairseq, no newline at the end", "a b", LoadAlignDict, UnkDict{"a": "b"}, ""},
		{"fairseq, empty", "", LoadAlignDict, UnkDict{}, ""},
		{"fairseq, one column", "a b\nc\n", LoadAlignDict, nil, `:2: "c": expected a source word and its target word`},
		{"fairseq, blank line", "a b\n\nc d\n", LoadAlignDict, nil, `:2: "": expected`},
		{"onmt", "Leeds|||Lids\nBebema ||| Bebemah\r\nLeeds|||Leedz\n|||empty\n", LoadPhraseTable,
			UnkDict{"Leeds": "Leedz", "Bebema ": " Bebemah", "": "empty"}, ""},
		{"onmt, no separator", "a|||b\na b\n", LoadPhraseTable, nil, `:2: "a b": expected a source word, "|||" and its target word`},
		{"onmt, two separators", "a|||b|||c\n", LoadPhraseTable, nil, `:1: "a|||b|||c": expected`},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.Repeat("d", i+1)+".txt")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := tc.load(path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), path+tc.err) {
					t.Fatalf("error %v, want one with %q", err, path+tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := LoadPhraseTable(filepath.Join(dir, "missing.txt")); err == nil || !strings.Contains(err.Error(), "missing.txt") {
		t.Errorf("a missing phrase table: %v", err)
	}
	bad := filepath.Join(dir, "latin1.txt")
	os.WriteFile(bad, []byte("caf\xe9 cafe\n"), 0o644)
	if _, err := LoadAlignDict(bad); err == nil || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("a Latin-1 dictionary: %v", err)
	}
}

// TestUnkDictReplacement: a word the dictionary has becomes its entry;
// one it lacks is copied.
func TestUnkDictReplacement(t *testing.T) {
	d := UnkDict{"Leeds": "Lids", "<unk>": "UNK"}
	for src, want := range map[string]string{"Leeds": "Lids", "Bebema": "Bebema", "<unk>": "UNK"} {
		if got := d.replacement(src); got != want {
			t.Errorf("replacement(%q) = %q, want %q", src, got, want)
		}
	}
	if got := UnkDict(nil).replacement("Leeds"); got != "Leeds" {
		t.Errorf("no dictionary: %q", got)
	}
}
