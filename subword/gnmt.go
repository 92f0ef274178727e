package subword

import (
	"fmt"
	"strings"

	"github.com/attnx/attnx/moses"
)

// GNMT's special tokens (seq2seq/data/config.py), which its vocabularies
// put at ids 0 to 3, and which detokenize removes from the text.
const (
	gnmtPad = "<pad>"
	gnmtBOS = "<s>"
	gnmtEOS = `<\s>`
)

// GNMTOptions are a GNMT Tokenizer's state (what checkpoint.ReadGNMT reads
// from a checkpoint's tokenizer entry).
type GNMTOptions struct {
	// SrcLang and TgtLang are the Moses tokenizer's and detokenizer's
	// languages; "" for a tokenizer without Moses (MLPerf's, which reads
	// text already tokenized and segmented).
	SrcLang, TgtLang string
	// Separator is the BPE continuation marker detokenize removes.
	Separator string
	// Vocab is idx2tok in id order: <pad>, <unk>, <s>, <\s>, then the
	// vocabulary's words.
	Vocab []string
	// Unk is the id of a token the vocabulary lacks.
	Unk int
	// Codes are the BPE codes as a subword-nmt codes file, Glossaries the
	// BPE object's; nil Codes for a tokenizer without BPE.
	Codes      []byte
	Glossaries []string
	// BPESeparator is the BPE object's own separator; "" means Separator.
	BPESeparator string
}

// GNMT is the Tokenizer of NVIDIA DeepLearningExamples' PyTorch GNMT and
// of the MLPerf rnn_translator (seq2seq/data/tokenizer.py): Segment is its
// tokenize (sacremoses, BPE process_line, then segment: the ids between
// BOS and EOS) or, without Moses and BPE, its segment alone; Detokenize
// its detokenize.
type GNMT struct {
	opt   GNMTOptions
	ids   map[string]int64
	tok   *moses.Tokenizer
	detok *moses.Detokenizer
	bpe   *BPE
}

// NewGNMT makes the tokenizer of a GNMT checkpoint's state.
func NewGNMT(opt GNMTOptions) (*GNMT, error) {
	if len(opt.Vocab) < 4 || opt.Vocab[0] != gnmtPad || opt.Vocab[2] != gnmtBOS || opt.Vocab[3] != gnmtEOS {
		return nil, fmt.Errorf("GNMT tokenizer: the vocabulary must start with %s, <unk>, %s, %s (seq2seq/data/config.py)", gnmtPad, gnmtBOS, gnmtEOS)
	}
	if opt.Unk < 0 || opt.Unk >= len(opt.Vocab) {
		return nil, fmt.Errorf("GNMT tokenizer: unknown-token id %d outside the vocabulary of %d", opt.Unk, len(opt.Vocab))
	}
	if opt.Separator == "" {
		return nil, fmt.Errorf("GNMT tokenizer: no BPE separator")
	}
	if (opt.SrcLang == "") != (opt.TgtLang == "") {
		return nil, fmt.Errorf("GNMT tokenizer: source language %q and target language %q: want both or neither", opt.SrcLang, opt.TgtLang)
	}
	g := &GNMT{opt: opt, ids: make(map[string]int64, len(opt.Vocab))}
	for i, w := range opt.Vocab {
		if _, ok := g.ids[w]; !ok {
			g.ids[w] = int64(i)
		}
	}
	if opt.SrcLang != "" {
		g.tok, g.detok = moses.NewTokenizer(opt.SrcLang), moses.NewDetokenizer(opt.TgtLang)
	}
	if opt.Codes != nil {
		sep := opt.BPESeparator
		if sep == "" {
			sep = opt.Separator
		}
		var err error
		if g.bpe, err = ParseBPE(opt.Codes, BPEOptions{Separator: sep, Glossaries: opt.Glossaries}); err != nil {
			return nil, fmt.Errorf("GNMT tokenizer: the checkpoint's BPE codes: %w", err)
		}
	}
	return g, nil
}

// Pieces is the text segment reads: Moses-tokenized and BPE-segmented
// where the tokenizer has them, split at white space.
func (g *GNMT) Pieces(line string) []string {
	if g.tok != nil {
		line = g.tok.Tokenize(line)
	}
	if g.bpe != nil {
		return g.bpe.Encode(line)
	}
	return strings.Fields(line)
}

// Segment returns a source line's ids as translate.py feeds them to the
// encoder: BOS, each piece's id (Unk for one the vocabulary lacks), EOS.
func (g *GNMT) Segment(line string) []int64 {
	pieces := g.Pieces(line)
	ids := make([]int64, 0, len(pieces)+2)
	ids = append(ids, 2)
	for _, p := range pieces {
		id, ok := g.ids[p]
		if !ok {
			id = int64(g.opt.Unk)
		}
		ids = append(ids, id)
	}
	return append(ids, 3)
}

// Detokenize is translate.py's text for output ids: the tokens joined by
// spaces, the separator removed (first with the space after it), <s>,
// <\s> and <pad> removed wherever they occur, stripped; then Moses'
// detokenizer of the target language where the tokenizer has one. An id
// outside the vocabulary is an error.
func (g *GNMT) Detokenize(ids []int64) (string, error) {
	toks := make([]string, len(ids))
	for i, id := range ids {
		if id < 0 || id >= int64(len(g.opt.Vocab)) {
			return "", fmt.Errorf("GNMT tokenizer: output id %d outside the vocabulary of %d", id, len(g.opt.Vocab))
		}
		toks[i] = g.opt.Vocab[id]
	}
	s := strings.Join(toks, " ")
	s = strings.ReplaceAll(s, g.opt.Separator+" ", "")
	s = strings.ReplaceAll(s, g.opt.Separator, "")
	for _, sp := range []string{gnmtBOS, gnmtEOS, gnmtPad} {
		s = strings.ReplaceAll(s, sp, "")
	}
	// Python's str.strip: every white-space character at either end.
	s = strings.TrimSpace(s)
	if g.detok != nil {
		s = g.detok.Detokenize(strings.Fields(s))
	}
	return s, nil
}
