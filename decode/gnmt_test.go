package decode_test

import (
	"bufio"
	"context"

	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/moses"
)

// gnmtFixture is a committed GNMT fixture opened for decoding: its model's
// graphs, the tokenizer state and the test set's source ids as
// translate.py feeds them (BOS, the tokens, EOS).
type gnmtFixture struct {
	dir     string
	p       *pair
	g       *checkpoint.GNMT
	sources [][]int64
}

func openGNMT(t *testing.T, kind string) *gnmtFixture {
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
	f := &gnmtFixture{dir: dir, p: open(t, "gnmt-"+kind, enc, dec, w.Vocab, w.Vocab), g: g}
	switch g.Variant {
	case checkpoint.GNMTMLPerf:
		// MLPerf's translate.py reads BPE-segmented text: segment() looks
		// each token up (tok2idx's default is UNK) between BOS and EOS.
		ids := map[string]int64{}
		for i, tok := range g.Tokenizer.Vocab {
			if _, ok := ids[tok]; !ok {
				ids[tok] = int64(i)
			}
		}
		for _, line := range readLines(t, filepath.Join(dir, "test.bpe.en")) {
			src := []int64{checkpoint.GNMTBOS}
			for _, tok := range strings.Fields(line) {
				id, ok := ids[tok]
				if !ok {
					id = int64(g.Tokenizer.Unk)
				}
				src = append(src, id)
			}
			f.sources = append(f.sources, append(src, checkpoint.GNMTEOS))
		}
	default:
		// DeepLearningExamples' Tokenizer.tokenize (Moses, BPE, segment)
		// as its own code made the ids: expected/segments.tsv's second
		// column.
		for _, line := range readLines(t, filepath.Join(dir, "expected", "segments.tsv")) {
			cols := strings.Split(line, "\t")
			if len(cols) < 2 {
				t.Fatalf("segments.tsv line %q: want the BPE text and the ids", line)
			}
			var src []int64
			for _, s := range strings.Fields(cols[1]) {
				n, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				src = append(src, n)
			}
			f.sources = append(f.sources, src)
		}
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

// detokenize is translate.py's detokenization of a translation: the
// tokens joined by spaces, the BPE separator removed (with the space after
// it first), BOS, EOS and padding removed, stripped; then, for
// DeepLearningExamples, Moses' detokenizer of the target language.
func (f *gnmtFixture) detokenize(ids []int64) string {
	toks := make([]string, len(ids))
	for i, id := range ids {
		toks[i] = f.g.Tokenizer.Vocab[id]
	}
	sep := f.g.Tokenizer.Separator
	s := strings.Join(toks, " ")
	s = strings.ReplaceAll(s, sep+" ", "")
	s = strings.ReplaceAll(s, sep, "")
	for _, special := range []string{"<s>", `<\s>`, "<pad>"} {
		s = strings.ReplaceAll(s, special, "")
	}
	s = strings.TrimSpace(s)
	if f.g.Variant == checkpoint.GNMTDeepLearningExamples {
		s = moses.NewDetokenizer(f.g.Tokenizer.TgtLang).Detokenize(strings.Fields(s))
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
	greedies := make([]*decode.Greedy, len(f.sources))
	for i := range f.sources {
		if s.beam == 1 {
			// greedy_search: at most max_seq_len - 1 tokens after BOS.
			greedies[i] = &decode.Greedy{SOS: checkpoint.GNMTBOS, EOS: checkpoint.GNMTEOS, MaxLen: s.maxSeqLen - 1}
			searches[i] = greedies[i]
			continue
		}
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
		var toks []int64
		if s.beam == 1 {
			toks = greedies[i].Tokens()
			if n := len(toks); n > 0 && toks[n-1] == checkpoint.GNMTEOS {
				toks = toks[:n-1]
			}
		} else {
			toks = beams[i].Tokens()
		}
		out[i] = f.detokenize(toks)
	}
	return out
}

// TestGNMTMatchesTranslatePy decodes each committed GNMT fixture's test set
// with attnx's graphs of its checkpoint and GNMTBeam (Greedy for
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
