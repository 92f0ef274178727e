package translate

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/modeldir"
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

// TestReplaceUnkDict: with a dictionary an <unk> becomes the entry of the
// source token its toolkit's replace_unk would copy (fairseq's alignment:
// the sentence's own tokens; OpenNMT-py 2.x: the raw word, 3.x: the
// vocabulary's token), else that token; hypotheses alike, token ids kept.
func TestReplaceUnkDict(t *testing.T) {
	// fairseq's dictionaries: <s> 0, <pad> 1, </s> 2, <unk> 3.
	sp := attention.Special{SOS: 0, PAD: 1, EOS: 2, UNK: 3}
	vocab := []string{"<s>", "<pad>", "</s>", "<unk>", "Leeds", "in", "admitted"}
	dict := UnkDict{"Leeds": "Lids", "</s>": "never"}
	tr := &Translator{info: &modeldir.Info{Special: sp, SrcSuffix: []int64{2}}, tgtUNK: 3, opt: Options{ReplaceUnkDict: dict},
		src: newVocab(vocab, sp), tgt: newVocab(vocab, sp)}
	src := []int64{6, 5, 4, 2} // admitted in Leeds </s>
	att := [][]float32{
		{0.1, 0.1, 0.3, 0.5}, // </s> most, then Leeds
		{0.6, 0.1, 0.2, 0.1}, // admitted: not in the dictionary
		{0.1, 0.1, 0.1, 0.7}, // the step of </s>
	}
	r := Result{Tokens: []int64{3, 3, 2}, Attention: att, Hypotheses: []Hypothesis{{Tokens: []int64{3, 3, 2}, Attention: att}}}
	tr.finish(&r, src, nil, searchOpts{replaceUnk: true, fairseq: true})
	if r.Text != "Lids admitted" || r.Hypotheses[0].Text != "Lids admitted" || !reflect.DeepEqual(r.OutputTokens, []string{"Lids", "admitted", "</s>"}) || r.Tokens[0] != 3 {
		t.Errorf("fairseq: text %q, hypothesis %q, output tokens %q, tokens %v", r.Text, r.Hypotheses[0].Text, r.OutputTokens, r.Tokens)
	}

	// OpenNMT-py's vocabularies: <unk> 0, <blank> 1, <s> 2, </s> 3.
	osp := attention.Special{UNK: 0, PAD: 1, SOS: 2, EOS: 3}
	ovocab := []string{"<unk>", "<blank>", "<s>", "</s>", "in", "Leeds"}
	odict := UnkDict{"Bebema": "Bebemah", "<unk>": "UNKNOWN", "Leeds": "Lids"}
	osrc := []int64{4, 6, 5} // in Bebema Leeds: Bebema is the row's own word
	oatt := [][]float32{{0.1, 0.7, 0.2}, {0.1, 0.2, 0.7}, {0.6, 0.2, 0.2}}
	for _, c := range []struct {
		name     string
		defaults *modeldir.Defaults
		so       searchOpts
		want     string
	}{
		{"2.x", &modeldir.Defaults{Rules: RulesOpenNMT, RulesVersion: 2}, searchOpts{replaceUnk: true, openNMT: true, onmt2: true}, "Bebemah Lids"},
		{"3.x", &modeldir.Defaults{Rules: RulesOpenNMT}, searchOpts{replaceUnk: true, openNMT: true}, "UNKNOWN Lids"},
		{"off", &modeldir.Defaults{Rules: RulesOpenNMT}, searchOpts{openNMT: true}, "<unk> <unk>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &Translator{info: &modeldir.Info{Config: attention.Config{SrcVocab: len(ovocab), TgtVocab: len(ovocab)}, Special: osp, Defaults: c.defaults},
				tgtUNK: 0, copy: true, opt: Options{ReplaceUnkDict: odict}, src: newVocab(ovocab, osp), tgt: newVocab(ovocab, osp)}
			r := Result{Tokens: []int64{0, 0, 3}, Attention: oatt}
			tr.finish(&r, osrc, []string{"Bebema"}, c.so)
			if r.Text != c.want {
				t.Errorf("text %q, want %q", r.Text, c.want)
			}
		})
	}
}
