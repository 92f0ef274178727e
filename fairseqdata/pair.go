package fairseqdata

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Pair is a split of a data-bin directory as fairseq's translation task
// loads it (load_langpair_dataset): both sides and both dictionaries. Tgt
// is nil when the split has no target side (fairseq-generate then prints
// no T- lines and no BLEU).
type Pair struct {
	Dir, Split       string
	SrcLang, TgtLang string
	SrcDict, TgtDict *Dictionary
	Src, Tgt         *Dataset
	// Shuffled says that fairseq shuffles the split before sorting it
	// (load_langpair_dataset's shuffle: every split but test).
	Shuffled bool
}

// InferLanguagePair finds a data-bin directory's language pair from its
// file names (SPLIT.SRC-TGT.LANG...), as fairseq's infer_language_pair
// does; fairseq takes the first name the directory lists, so a directory
// of several pairs is an error asking for them.
func InferLanguagePair(dir string) (src, tgt string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", "", fmt.Errorf("fairseqdata: data-bin: %w", err)
	}
	pairs := map[string]bool{}
	for _, e := range ents {
		parts := strings.Split(e.Name(), ".")
		if len(parts) >= 3 {
			if lp := strings.Split(parts[1], "-"); len(lp) == 2 {
				pairs[parts[1]] = true
			}
		}
	}
	names := make([]string, 0, len(pairs))
	for p := range pairs {
		names = append(names, p)
	}
	sort.Strings(names)
	switch len(names) {
	case 0:
		return "", "", fmt.Errorf("fairseqdata: data-bin %s: no file named SPLIT.SRC-TGT.LANG, so the language pair is unknown (pass the source and target languages)", dir)
	case 1:
		lp := strings.Split(names[0], "-")
		return lp[0], lp[1], nil
	}
	return "", "", fmt.Errorf("fairseqdata: data-bin %s holds the language pairs %s: name the source and target languages (fairseq takes whichever the directory lists first)", dir, strings.Join(names, ", "))
}

// OpenPair loads split of the data-bin directory dir for the language
// pair src-tgt ("" for both infers it; InferLanguagePair), in format impl
// ("" infers it per file, as fairseq does): the dictionaries
// dict.SRC.txt and dict.TGT.txt, then SPLIT.SRC-TGT.SRC (else
// SPLIT.TGT-SRC.SRC) and its target side, which may be absent.
func OpenPair(dir, split, src, tgt, impl string) (*Pair, error) {
	if (src == "") != (tgt == "") {
		return nil, fmt.Errorf("fairseqdata: source language %q, target language %q: give both or neither", src, tgt)
	}
	if src == "" {
		var err error
		if src, tgt, err = InferLanguagePair(dir); err != nil {
			return nil, err
		}
	}
	p := &Pair{Dir: dir, Split: split, SrcLang: src, TgtLang: tgt, Shuffled: split != "test"}
	var err error
	if p.SrcDict, err = ReadDictionary(filepath.Join(dir, "dict."+src+".txt")); err != nil {
		return nil, err
	}
	if p.TgtDict, err = ReadDictionary(filepath.Join(dir, "dict."+tgt+".txt")); err != nil {
		return nil, err
	}
	prefix := ""
	for _, lp := range []string{src + "-" + tgt, tgt + "-" + src} {
		cand := filepath.Join(dir, split+"."+lp+".")
		if Exists(cand+src, impl) {
			prefix = cand
			break
		}
	}
	if prefix == "" {
		what := "any --dataset-impl"
		if impl != "" {
			what = "--dataset-impl " + impl
		}
		return nil, fmt.Errorf("fairseqdata: data-bin %s: split %q of %s-%s is not there in %s (looked for %s.%s-%s.%s and %s.%s-%s.%s): %w",
			dir, split, src, tgt, what, split, src, tgt, src, split, tgt, src, src, ErrNoSplit)
	}
	if p.Src, err = Open(prefix+src, impl, p.SrcDict); err != nil {
		return nil, err
	}
	if Exists(prefix+tgt, impl) {
		if p.Tgt, err = Open(prefix+tgt, impl, p.TgtDict); err != nil {
			return nil, err
		}
		if p.Tgt.Len() != p.Src.Len() {
			return nil, fmt.Errorf("fairseqdata: %s holds %d sentences and %s %d: the sides of a split must pair up", p.Src.Path, p.Src.Len(), p.Tgt.Path, p.Tgt.Len())
		}
	}
	return p, nil
}

// NumTokens is sentence i's size for batching: the longer side's
// (LanguagePairDataset.num_tokens).
func (p *Pair) NumTokens(i int) int {
	n := p.Src.Size(i)
	if p.Tgt != nil {
		n = max(n, p.Tgt.Size(i))
	}
	return n
}

// OrderedIndices is LanguagePairDataset.ordered_indices under fairseq's
// --seed: the ids (for a Shuffled split, numpy's permutation of them
// under np.random.seed(seed), as data_utils.numpy_seed sets it) sorted
// stably by target length, then by source length.
func (p *Pair) OrderedIndices(seed uint32) []int {
	var idx []int
	if p.Shuffled {
		idx = numpyPermutation(seed, p.Src.Len())
	} else {
		idx = make([]int, p.Src.Len())
		for i := range idx {
			idx[i] = i
		}
	}
	if p.Tgt != nil {
		sort.SliceStable(idx, func(a, b int) bool { return p.Tgt.Size(idx[a]) < p.Tgt.Size(idx[b]) })
	}
	sort.SliceStable(idx, func(a, b int) bool { return p.Src.Size(idx[a]) < p.Src.Size(idx[b]) })
	return idx
}

// BatchOptions are fairseq's batching settings: --max-tokens and
// --batch-size (0: no bound), --required-batch-size-multiple and --seed
// (which orders a shuffled split; fairseq's default is 1).
type BatchOptions struct {
	MaxTokens, MaxSentences, Multiple int
	Seed                              uint32
}

// Batches cuts the ordered sentences into fairseq-generate's batches
// (BatchBySize) and orders each batch's rows as the collater does
// (CollateOrder).
func (p *Pair) Batches(opt BatchOptions) ([][]int, error) {
	idx := p.OrderedIndices(opt.Seed)
	tokens := make([]int, len(idx))
	for k, i := range idx {
		tokens[k] = p.NumTokens(i)
	}
	batches, err := BatchBySize(idx, tokens, opt)
	if err != nil {
		return nil, err
	}
	for _, b := range batches {
		CollateOrder(b, p.Src.Size)
	}
	return batches, nil
}

// BatchBySize is fairseq's data_utils_fast.batch_by_size_vec: indices, in
// order, with numTokens[k] the size of indices[k], grow a batch while its
// sentences times its longest stay within MaxTokens and its sentences
// within MaxSentences; a batch is only closed at a size below Multiple or
// a multiple of it, unless a bound forces it. A sentence longer than
// MaxTokens is an error, as fairseq asserts.
func BatchBySize(indices, numTokens []int, opt BatchOptions) ([][]int, error) {
	n := len(indices)
	if n == 0 {
		return nil, nil
	}
	maxTokens, maxSent, mult := int64(opt.MaxTokens), int64(opt.MaxSentences), int64(opt.Multiple)
	if mult < 1 {
		mult = 1
	}
	for k, t := range numTokens {
		if maxTokens > 0 && int64(t) > maxTokens {
			return nil, fmt.Errorf("fairseqdata: sentence %d has %d tokens, more than --max-tokens %d (fairseq asserts: Sentences lengths should not exceed max_tokens=%d)", indices[k], t, maxTokens, maxTokens)
		}
	}
	ends := make([]int64, n)
	var (
		count             int
		batchStart        int64
		tailMax, batchMax int64
	)
	for pos := 0; pos < n; pos++ {
		tok := int64(numTokens[pos])
		tailMax = max(tailMax, tok)
		newEnd := int64(pos + 1)
		newMax := max(batchMax, tailMax)
		newSent := newEnd - batchStart
		newTokens := newSent * newMax
		overflow := (maxSent > 0 && newSent > maxSent) || (maxTokens > 0 && newTokens > maxTokens)
		fits := newSent < mult || newSent%mult == 0
		if overflow {
			tailTokens := tailMax * (newEnd - ends[count])
			if maxTokens > 0 && tailTokens > maxTokens {
				count++
				ends[count] = int64(pos)
				tailMax = tok
			}
			batchStart = ends[count]
			count++
			newMax = tailMax
		}
		if overflow || fits {
			ends[count] = newEnd
			batchMax = newMax
			tailMax = 0
		}
	}
	if ends[count] != int64(n) {
		count++
	}
	// np.split(indices, ends[:count]): the pieces between the cut points,
	// empty ones included.
	var out [][]int
	prev := int64(0)
	for _, e := range ends[:count] {
		out = append(out, append([]int(nil), indices[prev:e]...))
		prev = e
	}
	out = append(out, append([]int(nil), indices[prev:]...))
	var batches [][]int
	for _, b := range out {
		if len(b) > 0 {
			batches = append(batches, b)
		}
	}
	return batches, nil
}
