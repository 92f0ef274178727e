package fairseqdata

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fixture is what make_fairseq_generate.sh had fairseq-preprocess write.
var fixture = filepath.Join("..", "testdata", "toolkits", "fairseq-generate")

// TestBatchBySizeMatchesFairseq: the batches fairseq 0.12.2's own
// data_utils_fast.batch_by_size_vec made of these sizes (printed by it,
// ids from 100), with --max-tokens, --batch-size and
// --required-batch-size-multiple as given (0: none).
func TestBatchBySizeMatchesFairseq(t *testing.T) {
	seq := func(from, to int) []int {
		var out []int
		for i := from; i <= to; i++ {
			out = append(out, i)
		}
		return out
	}
	odd := []int{3, 9, 4, 4, 12, 2, 7, 7, 7, 1, 8}
	for _, c := range []struct {
		tokens             []int
		maxTok, maxSent, m int
		want               [][]int
	}{
		{[]int{5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, 0, 0, 8, [][]int{seq(100, 107), {108, 109}}},
		{[]int{5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, 20, 0, 1, [][]int{seq(100, 103), seq(104, 107), {108, 109}}},
		{odd, 24, 0, 8, [][]int{{100, 101}, {102, 103}, {104, 105}, {106, 107, 108}, {109, 110}}},
		{odd, 24, 0, 2, [][]int{{100, 101}, {102, 103}, {104, 105}, {106, 107}, {108, 109}, {110}}},
		{odd, 0, 3, 8, [][]int{{100, 101, 102}, {103, 104, 105}, {106, 107, 108}, {109, 110}}},
		{odd, 30, 4, 2, [][]int{{100, 101}, {102, 103}, {104, 105}, {106, 107, 108, 109}, {110}}},
		{[]int{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 20}, 40, 0, 8, [][]int{seq(100, 115), {116, 117}, {118}}},
		{slices.Repeat([]int{1}, 20), 0, 5, 8, [][]int{seq(100, 104), seq(105, 109), seq(110, 114), seq(115, 119)}},
	} {
		idx := seq(100, 99+len(c.tokens))
		got, err := BatchBySize(idx, c.tokens, BatchOptions{MaxTokens: c.maxTok, MaxSentences: c.maxSent, Multiple: c.m})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("sizes %v, max tokens %d, batch size %d, multiple %d:\n got %v\nwant %v", c.tokens, c.maxTok, c.maxSent, c.m, got, c.want)
		}
	}
	_, err := BatchBySize([]int{0, 1}, []int{3, 60}, BatchOptions{MaxTokens: 50, Multiple: 8})
	if err == nil || !strings.Contains(err.Error(), "sentence 1 has 60 tokens, more than --max-tokens 50") {
		t.Errorf("a sentence over --max-tokens: %v", err)
	}
}

// TestFormatsAgree reads the split fairseq-preprocess wrote in each
// format: the mmap index (uint16 elements, its dtype code 8), the TNTIDX
// one (lazy, and inferred as cached) and raw text give the same ids on
// both sides, and the mmap ids turned back into symbols are the BPE'd
// lines of the raw text, but for the symbols the dictionary lacks
// (<unk>).
func TestFormatsAgree(t *testing.T) {
	for _, c := range []struct{ dir, impl, inferred string }{
		{"data-bin", "", ImplMMap}, {"data-bin-lazy", ImplLazy, ImplCached}, {"data-bin-raw", ImplRaw, ImplRaw},
	} {
		got, err := InferImpl(filepath.Join(fixture, c.dir, "test.en-de.en"))
		if err != nil || got != c.inferred {
			t.Errorf("%s: InferImpl %q, %v; want %q", c.dir, got, err, c.inferred)
		}
	}
	mmap := openPair(t, "data-bin", "")
	if b, err := os.ReadFile(mmap.Src.Path + ".idx"); err != nil || b[17] != 8 {
		t.Fatalf("data-bin's dtype code: want 8 (uint16, best_fitting_int_dtype for %d symbols): %v", mmap.SrcDict.Len(), err)
	}
	for _, other := range []struct{ dir, impl string }{{"data-bin-lazy", ImplLazy}, {"data-bin-lazy", ""}, {"data-bin-raw", ImplRaw}, {"data-bin-raw", ""}} {
		p := openPair(t, other.dir, other.impl)
		for _, side := range []struct{ a, b *Dataset }{{mmap.Src, p.Src}, {mmap.Tgt, p.Tgt}} {
			if side.b.Len() != 48 || side.a.Len() != 48 {
				t.Fatalf("%s: %d and %d sentences; want 48", other.dir, side.a.Len(), side.b.Len())
			}
			for i := 0; i < 48; i++ {
				if !slices.Equal(side.a.Item(i), side.b.Item(i)) {
					t.Errorf("%s (%s) sentence %d: %v; mmap %v", side.b.Path, side.b.Impl, i, side.b.Item(i), side.a.Item(i))
				}
			}
		}
	}
	for _, side := range []struct {
		d    *Dataset
		dict *Dictionary
		raw  string
	}{{mmap.Src, mmap.SrcDict, "test.en-de.en"}, {mmap.Tgt, mmap.TgtDict, "test.en-de.de"}} {
		lines := readLines(t, filepath.Join(fixture, "data-bin-raw", side.raw))
		unks := 0
		for i, line := range lines {
			ids := side.d.Item(i)
			if ids[len(ids)-1] != EOS || len(ids) != len(SplitLine(line))+1 {
				t.Fatalf("%s sentence %d: %v; want %d ids then </s>", side.d.Path, i, ids, len(SplitLine(line)))
			}
			got, err := side.dict.String(ids, StringOptions{})
			if err != nil {
				t.Fatal(err)
			}
			words, want := SplitLine(got), SplitLine(line)
			for k := range want {
				if words[k] != want[k] {
					if words[k] != "<unk>" || side.dict.Index(want[k]) != Unk {
						t.Errorf("%s sentence %d word %d: %q; the text has %q", side.d.Path, i, k, words[k], want[k])
					}
					unks++
				}
			}
		}
		t.Logf("%s: %d sentences, %d pieces outside the dictionary", side.d.Path, len(lines), unks)
	}
}

func openPair(t *testing.T, dir, impl string) *Pair {
	t.Helper()
	p, err := OpenPair(filepath.Join(fixture, dir), "test", "", "", impl)
	if err != nil {
		t.Fatal(err)
	}
	if p.SrcLang != "en" || p.TgtLang != "de" || p.Tgt == nil {
		t.Fatalf("%s: pair %s-%s, target %v", dir, p.SrcLang, p.TgtLang, p.Tgt != nil)
	}
	return p
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// TestGenerateOrder: the order in which fairseq-generate printed the
// sentences (its S- lines) with each batching setting is the batches'
// order, each batch's rows longest source first; the valid split (100
// sentences, two batches: 96 and 4) shuffled by numpy first.
func TestGenerateOrder(t *testing.T) {
	p := openPair(t, "data-bin", "")
	for _, c := range []struct {
		name string
		opt  BatchOptions
		n    int
	}{
		{"default", BatchOptions{Multiple: 8}, 1},
		{"batch2", BatchOptions{MaxSentences: 2, Multiple: 8}, 24},
		{"maxtokens100", BatchOptions{MaxTokens: 100, Multiple: 8}, 0},
		{"maxlena", BatchOptions{MaxSentences: 5, Multiple: 8}, 10},
		{"valid", BatchOptions{Multiple: 8, Seed: 1}, 2},
	} {
		p := p
		if c.name == "valid" {
			var err error
			if p, err = OpenPair(filepath.Join(fixture, "data-bin"), "valid", "", "", ""); err != nil {
				t.Fatal(err)
			}
		}
		want := sourceIDs(t, filepath.Join(fixture, "expected", c.name+".out"))
		if want == nil {
			continue
		}
		batches, err := p.Batches(c.opt)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, b := range batches {
			got = append(got, b...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: order %v\nfairseq-generate's %v", c.name, got, want)
		}
		if c.n > 0 && len(batches) != c.n {
			t.Errorf("%s: %d batches; want %d", c.name, len(batches), c.n)
		}
		t.Logf("%s: %d batches", c.name, len(batches))
	}
}

// sourceIDs are the ids of a fairseq-generate output's S- lines, in order.
func sourceIDs(t *testing.T, path string) []int {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("%s: %v", path, err)
		return nil
	}
	var ids []int
	for _, line := range readLines(t, path) {
		if rest, ok := strings.CutPrefix(line, "S-"); ok {
			id, err := strconv.Atoi(rest[:strings.IndexByte(rest, '\t')])
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	}
	return ids
}

// TestPostProcess: data_utils.post_process's results (printed by Python
// with fairseq 0.12.2's function).
func TestPostProcess(t *testing.T) {
	for _, c := range []struct{ in, sym, want string }{
		{"Ein Ha@@ us@@ .", "subword_nmt", "Ein Haus."},
		{"Ein Ha@@ us@@", "subword_nmt", "Ein Haus"},
		{"Ein Ha@@ us", "@@", "Ein Ha us"},
		{"\u2581Ein \u2581Ha us", "sentencepiece", "Ein Haus"},
		{"a _EOW b", "_EOW", "a b"},
		{"a <SIL>  b", "silence", "a b"},
		{"x@@ y", "none", "x@@ y"},
		{"x@@ y", "", "x@@ y"},
	} {
		got, err := PostProcess(c.in, c.sym)
		if err != nil || got != c.want {
			t.Errorf("PostProcess(%q, %q) = %q, %v; want %q", c.in, c.sym, got, err, c.want)
		}
	}
	if _, err := PostProcess("a", "bpe"); err == nil || !strings.Contains(err.Error(), `--post-process "bpe"`) {
		t.Errorf("an unknown symbol: %v", err)
	}
}

// TestCollateOrderMatchesTorch: the orders torch 1.13's CPU sort
// (descending, not stable) gives lengths with many ties, printed by
// testdata/make_torch_sort.py.
func TestCollateOrderMatchesTorch(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "torch_sort.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct{ Keys, Order []int }
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for n, c := range cases {
		batch := make([]int, len(c.Keys))
		for i := range batch {
			batch[i] = i
		}
		CollateOrder(batch, func(i int) int { return c.Keys[i] })
		if !slices.Equal(batch, c.Order) {
			t.Errorf("case %d (%d keys %v):\n got %v\nwant %v", n, len(c.Keys), c.Keys, batch, c.Order)
		}
	}
}

// TestBadFiles: files that are not what fairseq-preprocess writes, or do
// not belong together, are refused naming the file and what was expected,
// never with a panic.
func TestBadFiles(t *testing.T) {
	src := filepath.Join(fixture, "data-bin", "test.en-de.en")
	lazy := filepath.Join(fixture, "data-bin-lazy", "test.en-de.en")
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	idx, bin, lidx := read(src+".idx"), read(src+".bin"), read(lazy+".idx")
	dict, err := ReadDictionary(filepath.Join(fixture, "data-bin", "dict.en.txt"))
	if err != nil {
		t.Fatal(err)
	}
	small := NewDictionary(dict.Symbols[:10])
	for _, c := range []struct {
		name     string
		idx, bin []byte
		impl     string
		dict     *Dictionary
		want     string
	}{
		{"truncated index", idx[:40], bin, ImplMMap, dict, "the number of sentences is 48, more than the 14 bytes left hold: truncated or not an index"},
		{"short index", idx[:5], bin, "", dict, "too short for an index (expected the magic MMIDIDX or TNTIDX)"},
		{"not an index", []byte("hello world, not an index"), bin, "", dict, `not an index fairseq-preprocess writes (expected the magic MMIDIDX for mmap or TNTIDX for lazy/cached)`},
		{"lazy index read as mmap", lidx, bin, ImplMMap, dict, "not the mmap index's magic"},
		{"mmap index read as lazy", idx, bin, ImplLazy, dict, "not the lazy/cached index's magic"},
		{"truncated data", idx, bin[:len(bin)/2], ImplMMap, dict, "past the end of"},
		{"another dictionary", idx, bin, ImplMMap, small, "is outside the dictionary's 10 symbols (was it binarized with another dictionary?)"},
		{"float dtype", append(append(append([]byte(nil), idx[:17]...), 6), idx[18:]...), bin, ImplMMap, dict, "dtype float64: the dataset holds floats, not token ids"},
		{"unknown dtype", append(append(append([]byte(nil), idx[:17]...), 42), idx[18:]...), bin, ImplMMap, dict, "dtype code 42 is none of fairseq's"},
		{"huge count", append(append(append([]byte(nil), idx[:18]...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0), idx[26:]...), bin, ImplMMap, dict, "more than the"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "test.en-de.en")
			if err := os.WriteFile(p+".idx", c.idx, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p+".bin", c.bin, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(p, c.impl, c.dict)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("Open: %v\nwant an error naming %s with %q", err, p, c.want)
			}
		})
	}
	if _, err := OpenPair(filepath.Join(fixture, "data-bin"), "train", "", "", ""); err == nil || !strings.Contains(err.Error(), `split "train" of en-de is not there`) {
		t.Errorf("a missing split: %v", err)
	}
	if _, err := Open(src, "tnt", dict); err == nil || !strings.Contains(err.Error(), `--dataset-impl "tnt": expected one of raw, lazy, cached, mmap`) {
		t.Errorf("an unknown format: %v", err)
	}
}

// TestNumpyPermutation: np.random.seed(SEED); np.random.permutation(N)
// as numpy 1.24's legacy generator gives them
// (testdata/make_numpy_permutation.py).
func TestNumpyPermutation(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "numpy_permutation.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][]int
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	for key, perm := range want {
		var seed uint32
		var n int
		if _, err := fmt.Sscanf(key, "%d/%d", &seed, &n); err != nil {
			t.Fatal(err)
		}
		if got := numpyPermutation(seed, n); !slices.Equal(got, perm) {
			t.Errorf("seed %d, permutation(%d): %v\nnumpy's %v", seed, n, got, perm)
		}
	}
}
