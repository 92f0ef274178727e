package decode_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"

	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/subword"
)

// gnmtFixture is a committed GNMT fixture opened for decoding: its model's
// graphs, the tokenizer state and the test set's source ids as
// translate.py feeds them (BOS, the tokens, EOS).
type gnmtFixture struct {
	dir     string
	p       *pair
	g       *checkpoint.GNMT
	tok     *subword.GNMT
	sources [][]int64
}

func openGNMT(t *testing.T, kind string) *gnmtFixture {
	t.Helper()
	needORT(t)
	dir := filepath.Join("..", "testdata", "toolkits", "gnmt-"+kind)
	path := filepath.Join(dir, "model_best.pth")
	sd, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := checkpoint.ReadGNMT(sd.Origin, path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := attention.GNMTFromStateDict(sd.Tensors, g.HiddenSize, g.NumLayers)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := attention.GNMTEncoder(w)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := attention.GNMTDecoder(w)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := subword.NewGNMT(g.TokenizerOptions())
	if err != nil {
		t.Fatal(err)
	}
	f := &gnmtFixture{dir: dir, p: open(t, "gnmt-"+kind, enc, dec, w.Vocab, w.Vocab), g: g, tok: tok}
	// translate.py's input: raw text for DeepLearningExamples (its
	// Tokenizer runs Moses and BPE), BPE-segmented text for MLPerf.
	input := "test.raw.en"
	if g.Variant == checkpoint.GNMTMLPerf {
		input = "test.bpe.en"
	}
	for _, line := range readLines(t, filepath.Join(dir, input)) {
		f.sources = append(f.sources, tok.Segment(line))
	}
	return f
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var lines []string
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func (f *gnmtFixture) detokenize(t *testing.T, ids []int64) string {
	t.Helper()
	s, err := f.tok.Detokenize(ids)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// gnmtSettings are translate.py's decoding flags.
type gnmtSettings struct {
	beam, maxSeqLen             int
	lenNormFactor, lenNormConst float64
	covPenalty                  float64
	batchOnly                   bool // the flags change the batching alone
	flags                       string
}

// gnmtCases are translate.py's runs committed for a fixture: beam5 and
// greedy (make_gnmt.sh) and gnmt_variants.tsv's rows, their flags read
// over translate.py's defaults.
func gnmtCases(t *testing.T, kind string) map[string]gnmtSettings {
	t.Helper()
	def := gnmtSettings{beam: decode.GNMTDefaultBeam, maxSeqLen: decode.GNMTDefaultMaxSeqLen, lenNormFactor: decode.GNMTDefaultLenNormFactor,
		lenNormConst: decode.GNMTDefaultLenNormConst, covPenalty: decode.GNMTDefaultCovPenalty}
	greedy := def
	greedy.beam, greedy.flags = 1, "--beam-size 1"
	cases := map[string]gnmtSettings{"beam5": def, "greedy": greedy}
	for _, line := range readLines(t, filepath.Join("..", "testdata", "toolkits", "gnmt_variants.tsv")) {
		cols := strings.Split(line, "\t")
		if strings.HasPrefix(line, "#") || len(cols) != 3 || cols[0] != kind {
			continue
		}
		s := def
		s.flags = cols[2]
		args := strings.Fields(cols[2])
		for i := 0; i < len(args); i++ {
			flag := args[i]
			if flag == "--sort" || flag == "--no-sort" {
				s.batchOnly = true
				continue
			}
			if i+1 >= len(args) {
				t.Fatalf("gnmt_variants.tsv %s: flag %s without a value", cols[1], flag)
			}
			v := args[i+1]
			i++
			var err error
			switch flag {
			case "--beam-size":
				s.beam, err = strconv.Atoi(v)
			case "--max-seq-len":
				s.maxSeqLen, err = strconv.Atoi(v)
			case "--len-norm-factor":
				s.lenNormFactor, err = strconv.ParseFloat(v, 64)
			case "--len-norm-const":
				s.lenNormConst, err = strconv.ParseFloat(v, 64)
			case "--cov-penalty-factor":
				s.covPenalty, err = strconv.ParseFloat(v, 64)
			case "--batch-size":
				s.batchOnly = true
			default:
				t.Fatalf("gnmt_variants.tsv %s: translate.py flag %s has no GNMTBeam setting", cols[1], flag)
			}
			if err != nil {
				t.Fatalf("gnmt_variants.tsv %s: %s %s: %v", cols[1], flag, v, err)
			}
		}
		cases[cols[1]] = s
	}
	return cases
}

// decodeGNMT translates the fixture's sources under s, in one batch.
func (f *gnmtFixture) decodeGNMT(t *testing.T, s gnmtSettings) []string {
	t.Helper()
	ex, err := f.p.m.NewExecutor(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	searches := make([]decode.Search, len(f.sources))
	beams := make([]*decode.GNMTBeam, len(f.sources))
	for i := range f.sources {
		// --beam-size 1 (greedy_search) is GNMTBeam of width 1.
		beams[i] = &decode.GNMTBeam{BOS: checkpoint.GNMTBOS, EOS: checkpoint.GNMTEOS, K: s.beam, MaxSeqLen: s.maxSeqLen,
			LenNormFactor: s.lenNormFactor, LenNormConst: s.lenNormConst, CovPenaltyFactor: s.covPenalty}
		if err := beams[i].Validate(); err != nil {
			t.Fatal(err)
		}
		searches[i] = beams[i]
	}
	if err := decode.Decode(context.Background(), ex, f.sources, searches); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(f.sources))
	for i := range f.sources {
		out[i] = f.detokenize(t, beams[i].Tokens())
	}
	return out
}

// TestGNMTMatchesTranslatePy decodes each committed GNMT fixture's test set
// with attnx's graphs of its checkpoint and GNMTBeam (of width 1 for
// --beam-size 1) under every setting translate.py was run with: beam 5
// and greedy at its defaults, beam 10, other length normalization and
// coverage factors, --max-seq-len, and the batching flags (which
// translate.py's lines do not depend on). Every line must be translate.py's
// output line, byte for byte.
func TestGNMTMatchesTranslatePy(t *testing.T) {
	for _, kind := range []string{"mlperf", "dle"} {
		t.Run(kind, func(t *testing.T) {
			f := openGNMT(t, kind)
			for name, s := range gnmtCases(t, kind) {
				t.Run(name, func(t *testing.T) {
					want := readLines(t, filepath.Join(f.dir, "expected", name+".txt"))
					got := f.decodeGNMT(t, s)
					if len(got) != len(want) {
						t.Fatalf("%d lines, translate.py %s wrote %d", len(got), s.flags, len(want))
					}
					same := 0
					for i := range got {
						if got[i] == want[i] {
							same++
							continue
						}
						t.Errorf("line %d: attnx %q, translate.py %s %q", i+1, got[i], s.flags, want[i])
					}
					t.Logf("%s (%s): %d/%d lines identical", name, s.flags, same, len(want))
				})
			}
		})
	}
}

// TestGNMTBeamValidate: bad settings are refused naming the flag.
func TestGNMTBeamValidate(t *testing.T) {
	for _, c := range []struct {
		b    decode.GNMTBeam
		want string
	}{
		{decode.GNMTBeam{K: 0, MaxSeqLen: 80}, "--beam-size 0"},
		{decode.GNMTBeam{K: 5, MaxSeqLen: 0}, "--max-seq-len 0"},
		{decode.GNMTBeam{K: 5, MaxSeqLen: 80, LenNormConst: -1}, "--len-norm-const -1"},
		{decode.GNMTBeam{K: 5, MaxSeqLen: 80, CovPenaltyFactor: mathNaN()}, "--cov-penalty-factor NaN"},
	} {
		err := c.b.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", c.b, err, c.want)
		}
	}
	if err := (&decode.GNMTBeam{K: 5, MaxSeqLen: 80, LenNormFactor: 0.6, LenNormConst: 5, CovPenaltyFactor: 0.1}).Validate(); err != nil {
		t.Errorf("translate.py's defaults refused: %v", err)
	}
}

func mathNaN() float64 { v, _ := strconv.ParseFloat("NaN", 64); return v }

// TestGNMTTokenizer: subword.GNMT, made from the DeepLearningExamples
// checkpoint's tokenizer state alone, gives each raw test line the BPE
// text and the ids its Tokenizer gave (expected/segments.tsv, written by
// gnmt_segments.py with the repository's own code), and detokenizes those
// ids to its detokenize()'s text; MLPerf's segments its BPE text with the
// vocabulary alone.
func TestGNMTTokenizer(t *testing.T) {
	f := openGNMTTokenizer(t, "dle")
	raw := readLines(t, filepath.Join(f.dir, "test.raw.en"))
	seg := readLines(t, filepath.Join(f.dir, "expected", "segments.tsv"))
	if len(raw) != len(seg) || len(raw) == 0 {
		t.Fatalf("%d raw lines, %d segments", len(raw), len(seg))
	}
	for i, line := range raw {
		cols := strings.Split(seg[i], "\t")
		if len(cols) != 3 {
			t.Fatalf("segments.tsv line %d: %d columns, want 3", i+1, len(cols))
		}
		if got := strings.Join(f.tok.Pieces(line), " "); got != cols[0] {
			t.Errorf("line %d: pieces %q, DeepLearningExamples' %q", i+1, got, cols[0])
		}
		var want []int64
		for _, s := range strings.Fields(cols[1]) {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, n)
		}
		if got := f.tok.Segment(line); !slices.Equal(got, want) {
			t.Errorf("line %d: ids %v, DeepLearningExamples' %v", i+1, got, want)
		}
		if got := f.detokenize(t, want); got != cols[2] {
			t.Errorf("line %d: detokenized %q, DeepLearningExamples' %q", i+1, got, cols[2])
		}
	}
	m := openGNMTTokenizer(t, "mlperf")
	ids := m.tok.Segment("das@@ xyzzy@@ unknown .")
	if len(ids) != 6 || ids[0] != checkpoint.GNMTBOS || ids[5] != checkpoint.GNMTEOS || ids[2] != int64(m.g.Tokenizer.Unk) {
		t.Errorf("MLPerf segment: %v, want BOS, 4 ids (xyzzy@@ unknown), EOS", ids)
	}
	if _, err := m.tok.Detokenize([]int64{int64(len(m.g.Tokenizer.Vocab))}); err == nil || !strings.Contains(err.Error(), "outside the vocabulary") {
		t.Errorf("an id past the vocabulary: error %v, want one naming it", err)
	}
}

// openGNMTTokenizer reads a fixture's checkpoint for its tokenizer alone.
func openGNMTTokenizer(t *testing.T, kind string) *gnmtFixture {
	t.Helper()
	dir := filepath.Join("..", "testdata", "toolkits", "gnmt-"+kind)
	path := filepath.Join(dir, "model_best.pth")
	sd, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := checkpoint.ReadGNMT(sd.Origin, path)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := subword.NewGNMT(g.TokenizerOptions())
	if err != nil {
		t.Fatal(err)
	}
	return &gnmtFixture{dir: dir, g: g, tok: tok}
}

// gnmtBeamCases is testdata/gnmt_beam_cases.json: what GNMT's own
// SequenceGenerator.beam_search chose over a scripted model
// (testdata/toolkits/gnmt_beam_cases.py), with every step's log-probs and
// attention by the slot's history.
type gnmtBeamCases struct {
	Vocab int   `json:"vocab"`
	BOS   int64 `json:"bos"`
	EOS   int64 `json:"eos"`
	Cases []struct {
		Name          string  `json:"name"`
		K             int     `json:"k"`
		MaxSeqLen     int     `json:"max_seq_len"`
		LenNormFactor float64 `json:"len_norm_factor"`
		LenNormConst  float64 `json:"len_norm_const"`
		CovPenalty    float64 `json:"cov_penalty_factor"`
		SourceLengths []int   `json:"source_lengths"`
		Steps         []struct {
			Key       []int64   `json:"key"`
			LogProbs  []float32 `json:"log_probs"`
			Attention []float32 `json:"attention"`
		} `json:"steps"`
		Translations [][]int64 `json:"translations"`
	} `json:"cases"`
}

// TestGNMTBeamMatchesSequenceGenerator drives GNMTBeam with the scripted
// model's values, looked up by each slot's history as the executor's
// reordering makes it, and checks that it chooses beam_search's
// translation for every row: with several beam widths, --max-seq-len short
// enough that rows end with raw scores, other normalization and coverage
// factors, and logits rounded so that log-probs and scores tie. A history
// beam_search never fed to the model fails the test at once.
func TestGNMTBeamMatchesSequenceGenerator(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "gnmt_beam_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cs gnmtBeamCases
	if err := json.Unmarshal(data, &cs); err != nil {
		t.Fatal(err)
	}
	if len(cs.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range cs.Cases {
		t.Run(c.Name, func(t *testing.T) {
			type step struct{ lp, att []float32 }
			table := map[string]step{}
			for _, s := range c.Steps {
				table[fmt.Sprint(s.Key)] = step{s.LogProbs, s.Attention}
			}
			for r, n := range c.SourceLengths {
				b := &decode.GNMTBeam{BOS: cs.BOS, EOS: cs.EOS, K: c.K, MaxSeqLen: c.MaxSeqLen,
					LenNormFactor: c.LenNormFactor, LenNormConst: c.LenNormConst, CovPenaltyFactor: c.CovPenalty}
				if err := b.Validate(); err != nil {
					t.Fatal(err)
				}
				hist := [][]int64{{int64(r), cs.BOS}}
				inputs, parents := make([]int64, c.K), make([]int, c.K)
				for {
					var lp, att []float32
					for _, h := range hist {
						s, ok := table[fmt.Sprint(h)]
						if !ok {
							t.Fatalf("row %d: slot history %v, which beam_search never fed the model", r, h[1:])
						}
						lp, att = append(lp, s.lp...), append(att, s.att...)
					}
					m := b.Advance(decode.NewSlots(len(hist), cs.Vocab, lp, n, n, att), inputs, parents)
					if m == 0 {
						break
					}
					next := make([][]int64, m)
					for j := range next {
						next[j] = append(slices.Clone(hist[parents[j]]), inputs[j])
					}
					hist = next
				}
				want := c.Translations[r][1:]
				if i := slices.Index(want, cs.EOS); i >= 0 {
					want = want[:i]
				}
				if got := b.Tokens(); !slices.Equal(got, want) {
					t.Errorf("row %d: %v, beam_search %v", r, got, want)
				}
			}
		})
	}
}
