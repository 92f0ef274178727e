package onmttok

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/internal/wordcache"
)

func TestParseKwargs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want map[string]any
		err  string
	}{
		{"{'mode': 'none'}", map[string]any{"mode": "none"}, ""},
		{`{"mode": "aggressive", "joiner_annotate": true, "lang": null}`, map[string]any{"mode": "aggressive", "joiner_annotate": true, "lang": nil}, ""},
		{"{'mode':'aggressive','joiner_annotate':True,'segment_alphabet':['Han', \"Kanbun\"], 'x': (1, -2.5), 'j': '\\u2581\\'',}",
			map[string]any{"mode": "aggressive", "joiner_annotate": true, "segment_alphabet": []any{"Han", "Kanbun"}, "x": []any{int64(1), -2.5}, "j": "▁'"}, ""},
		{"{}", map[string]any{}, ""},
		{"{'mode': 'none'", nil, "want ',' or '}'"},
		{"['mode']", nil, "want a dict"},
		{"{'mode': none}", nil, "unexpected \"none}\""},
		{"{'mode': 'none'} x", nil, "after the dict"},
		{"{1: 'a'}", nil, "dict key 1 is not a string"},
		{"{'a': 'b", nil, "unterminated string"},
	} {
		got, err := ParseKwargs(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one with %q", c.in, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.in, err)
		case c.err == "" && !reflect.DeepEqual(got, c.want):
			t.Errorf("%s: %#v, want %#v", c.in, got, c.want)
		}
	}
}

// TestOptionErrors: options pyonmttok refuses are refused, with its
// reasons; keywords it lacks or OpenNMT-py sets elsewhere are named.
func TestOptionErrors(t *testing.T) {
	for _, c := range []struct {
		kw  map[string]any
		err string
	}{
		{map[string]any{"mode": "aggresive"}, `invalid tokenization mode: "aggresive"`},
		{map[string]any{"mode": "none", "case_markup": true}, "not compatible with 'none' and 'space'"},
		{map[string]any{"joiner_annotate": true, "spacer_annotate": true}, "can't be set at the same time"},
		{map[string]any{"spacer_new": true}, "spacer_new requires spacer_annotate"},
		{map[string]any{"joiner_new": true}, "joiner_new requires joiner_annotate"},
		{map[string]any{"support_prior_joiners": true, "joiner": "@@"}, "multi-character joiners"},
		{map[string]any{"with_separators": true, "joiner_annotate": true}, "already reversible"},
		{map[string]any{"segment_alphabet": []any{"Klingon"}}, "invalid Unicode script in segment_alphabet list: Klingon"},
		{map[string]any{"lang": "xx"}, "lang is not a valid ISO language code: xx"},
		{map[string]any{"case_feature": true}, "case_feature: not supported"},
		{map[string]any{"joiner_anotate": true}, `unknown option "joiner_anotate"`},
		{map[string]any{"bpe_model_path": "x"}, "a subword option"},
		{map[string]any{"joiner_annotate": "yes"}, "joiner_annotate: want True or False"},
	} {
		o, err := FromKwargs(c.kw)
		if err == nil {
			_, err = New(o, nil)
		}
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%v: error %v, want one with %q", c.kw, err, c.err)
		}
	}
	for _, ok := range []map[string]any{{"segment_alphabet": []any{"Latn", "han", "Kangxi"}}, {"lang": "tr", "case_markup": 1}, {"case_feature": false}} {
		o, err := FromKwargs(ok)
		if err == nil {
			_, err = New(o, nil)
		}
		if err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
}

// TestUnicodeVersion: the character tables come from Go's unicode
// package, checked against ICU's when scripts_table.go was generated; a
// Go of another Unicode version must regenerate (and recheck) them.
func TestUnicodeVersion(t *testing.T) {
	if !strings.HasPrefix(unicode.Version, unicodeVersion) {
		t.Fatalf("Go's unicode tables are Unicode %s, the generated ones ICU's Unicode %s: run go generate ./onmttok (it checks every code point)", unicode.Version, unicodeVersion)
	}
}

// TestScriptsTableFresh: scripts_table.go and casing_table.go are what
// their generator writes from this machine's ICU (whose Unicode version
// must be Go's), as a protobuf binding is what protoc writes.
func TestScriptsTableFresh(t *testing.T) {
	testenv.Command(t, "cc", "gcc")
	if _, err := os.Stat("/usr/include/unicode/uscript.h"); err != nil {
		testenv.Missing(t, "ICU's headers", "apt-get install libicu-dev", err)
	}
	dir := t.TempDir()
	cmd := exec.Command("sh", "internal/icugen/gen.sh")
	cmd.Env = append(os.Environ(), "OUT="+dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen.sh: %v\n%s", err, b)
	}
	for _, name := range []string{"scripts_table.go", "casing_table.go"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s is stale: run go generate ./onmttok", name)
		}
	}
}

// TestCacheStats: a tokenizer's subword cache is counted (what /metrics
// shows), and bounded by wordcache.Bytes.
func TestCacheStats(t *testing.T) {
	b, err := LoadBPE("testdata/bpe.codes")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := New(Options{Mode: ModeAggressive, JoinerAnnotate: true}, b)
	if err != nil {
		t.Fatal(err)
	}
	tok.Tokenize("the president said the president")
	st := tok.CacheStats()
	if st.Entries != 3 || st.Hits != 2 || st.Misses != 3 || st.MaxBytes != wordcache.Bytes || st.Bytes <= 0 {
		t.Errorf("stats %+v: want 3 words held, 2 hits, 3 misses, bounded by %d bytes", st, wordcache.Bytes)
	}
	plain, _ := New(Options{}, nil)
	if st := plain.CacheStats(); st != (wordcache.Stats{}) {
		t.Errorf("no subword model: %+v", st)
	}
}
