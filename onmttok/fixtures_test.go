package onmttok_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/onmttok"
	"github.com/attnx/attnx/subword"
)

// fixtureSet is one option set of testdata/expected.jsonl (pyonmttok's own
// output, make_fixtures.py).
type fixtureSet struct {
	Set    string         `json:"set"`
	Kwargs map[string]any `json:"kwargs"`
	Cases  []struct {
		Text   string   `json:"text"`
		Tokens []string `json:"tokens"`
		Detok  string   `json:"detok"`
	} `json:"cases"`
	Detokenize []string `json:"detokenize"`
	Detok      string   `json:"detok"`
}

func readFixtures(t testing.TB, path string) []fixtureSet {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sets []fixtureSet
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var s fixtureSet
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		sets = append(sets, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sets
}

// fixtureTokenizer makes the tokenizer of a set's keyword arguments: the
// subword ones as OpenNMT-py passes them, the rest through FromKwargs.
func fixtureTokenizer(t testing.TB, kw map[string]any) *onmttok.Tokenizer {
	t.Helper()
	rest := map[string]any{}
	c := onmttok.Config{}
	for k, v := range kw {
		switch k {
		case "bpe_model_path":
			c.SubwordType, c.SubwordModel = onmttok.SubwordBPE, filepath.Join("testdata", v.(string))
		case "sp_model_path":
			c.SubwordType, c.SubwordModel = onmttok.SubwordSentencePiece, filepath.Join("testdata", v.(string))
		case "vocabulary_path":
			c.Vocabulary = filepath.Join("testdata", v.(string))
		case "vocabulary_threshold":
			c.VocabularyThreshold = int(v.(float64))
		default:
			rest[k] = v
		}
	}
	o, err := onmttok.FromKwargs(rest)
	if err != nil {
		t.Fatalf("%v: %v", kw, err)
	}
	c.Options = o
	tok, err := subword.OpenOpenNMT(c, "")
	if err != nil {
		t.Fatalf("%v: %v", kw, err)
	}
	return tok.(*onmttok.Tokenizer)
}

// TestPyonmttokFixtures: every committed option set tokenizes every test
// text into pyonmttok's tokens and detokenizes them into its text; the
// same on random texts (random.jsonl) and with lang set to each language
// whose case mappings ICU treats specially (lang_casing.jsonl).
func TestPyonmttokFixtures(t *testing.T) {
	for _, f := range []struct {
		path           string
		minSets, lines int
	}{{"testdata/expected.jsonl", 57, 3135}, {"testdata/random.jsonl", 22, 8719}, {"testdata/lang_casing.jsonl", 14, 2982}} {
		t.Run(filepath.Base(f.path), func(t *testing.T) { checkFixtures(t, f.path, f.minSets, f.lines) })
	}
}

func checkFixtures(t *testing.T, path string, minSets, minLines int) {
	sets := readFixtures(t, path)
	lines, tokenSets, detokOnly := 0, 0, 0
	for _, s := range sets {
		tok := fixtureTokenizer(t, s.Kwargs)
		if s.Detokenize != nil {
			detokOnly++
			if got := tok.Detokenize(s.Detokenize); got != s.Detok {
				t.Errorf("%s: detokenize %q = %q, pyonmttok %q", s.Set, s.Detokenize, got, s.Detok)
			}
			continue
		}
		tokenSets++
		bad := 0
		for _, c := range s.Cases {
			lines++
			got := tok.Tokenize(c.Text)
			if strings.Join(got, "\x01") != strings.Join(c.Tokens, "\x01") {
				if bad++; bad <= 3 {
					t.Errorf("%s: %q\n got  %q\n want %q", s.Set, c.Text, got, c.Tokens)
				}
				continue
			}
			if d := tok.Detokenize(c.Tokens); d != c.Detok {
				if bad++; bad <= 3 {
					t.Errorf("%s: detokenize %q\n got  %q\n want %q", s.Set, c.Tokens, d, c.Detok)
				}
			}
		}
		if bad > 3 {
			t.Errorf("%s: %d of %d texts differ", s.Set, bad, len(s.Cases))
		}
	}
	t.Logf("%d option sets, %d texts tokenized and detokenized, %d detokenize cases", tokenSets, lines, detokOnly)
	if tokenSets < minSets || lines < minLines {
		t.Errorf("%d sets and %d lines read: the fixture is short", tokenSets, lines)
	}
}

// TestWrappedCacheStats: the tokenizer OpenNMT-py's newline handling
// wraps still reports its cache (translate's TokenizerCache, /metrics).
func TestWrappedCacheStats(t *testing.T) {
	tok, err := subword.OpenOpenNMT(onmttok.Config{Options: onmttok.Options{Mode: onmttok.ModeConservative}, SubwordType: onmttok.SubwordSentencePiece,
		SubwordModel: "testdata/sp.model", NewlinePlaceholder: true}, "")
	if err != nil {
		t.Fatal(err)
	}
	tok.Encode("hello world")
	c, ok := tok.(interface{ CacheStats() subword.CacheStats })
	if !ok {
		t.Fatalf("%T has no CacheStats", tok)
	}
	if st := c.CacheStats(); st.Misses != 2 || st.Entries != 2 {
		t.Errorf("stats %+v: want the two words counted", st)
	}
}
