package translate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/attnx/attnx/internal/panics"
)

// CorpusOptions configures TranslateCorpus.
type CorpusOptions struct {
	// BatchSize is the most sentences of a batch; 0 means the Translator's
	// Options.BatchSize.
	BatchSize int
	// BatchTokens, when > 0, cuts batches by source tokens instead
	// (OpenNMT-py's batch_type tokens): the sentences of a batch times its
	// longest source stay within BatchTokens (a longer sentence alone is
	// a batch).
	BatchTokens int
	// Lanes is how many batches are decoded at the same time (each its own
	// ONNX Runtime runs on the shared sessions); 0 means 1.
	Lanes int
	// ToolkitBatches, when set, replaces the size and type of attnx.json's
	// defaults.batching (its style stays), as the toolkit's -batch_size
	// and -batch_type would: the batches that decide the sentences' output
	// limits. It changes nothing for a model without defaults.batching.
	ToolkitBatches *ToolkitBatches
	// WithoutAttention leaves Result.Attention empty (as
	// CallOptions.WithoutAttention does), for a caller that writes only
	// the translations: a result waits, attention and all, until the
	// sentences before it are done, which for a test set sorted by length
	// is most of the run, so on a large corpus the attention is most of
	// the memory.
	WithoutAttention bool
	// AnyOrder calls emit with each result as soon as its batch is done,
	// in the order the batches finish, instead of holding it until every
	// sentence before it is done: TranslateCorpus then keeps no results,
	// and the caller puts them in order (shard's parts do, through a
	// file when they would not fit in memory). Blank lines are emitted
	// first. The results are the same either way.
	AnyOrder bool
}

// ToolkitBatches is a toolkit's batch size: Size sentences, or with Tokens
// Size source tokens.
type ToolkitBatches struct {
	Size   int
	Tokens bool
}

// CorpusStats are TranslateCorpus's totals.
type CorpusStats struct {
	// Sentences counts the lines, Empty those with nothing to translate
	// (blank lines, emitted as empty results).
	Sentences, Empty int
	// SourceTokens and OutputTokens count the tokens decoded (EOS not
	// counted).
	SourceTokens, OutputTokens int
	// Batches counts the decoder batches.
	Batches int
}

// TranslateCorpus translates a test set of sentences as the toolkits'
// translate commands do: the sentences are sorted by length and decoded in
// batches of similar length (CorpusOptions), Lanes batches at a time, and
// when the model's output limit depends on the toolkit's batches
// (attnx.json's defaults.batching), each sentence gets the limit of the
// batch the toolkit would have put it in; and
// emit is called with each result in the original order, as soon as it and
// every sentence before it are done (with CorpusOptions.AnyOrder, as soon as
// it is done). Blank lines give empty results. Lines
// are text, or token ids when the model has no source vocabulary. A line
// that cannot be translated stops it with a *BadInputError naming the line
// (line numbers count from first). progress, when not nil, hears the
// sentences and output tokens done so far after each batch.
func (t *Translator) TranslateCorpus(ctx context.Context, lines []string, first int, co CorpusOptions,
	emit func(i int, res Result) error, progress func(sentences, outTokens int)) (CorpusStats, error) {
	// Tokenise every line first: a bad line is reported before any work.
	// Without a source vocabulary the lines are token ids, as in Stream.
	src := Sources{Rows: make([][]int64, len(lines))}
	for i, s := range lines {
		if strings.TrimSpace(s) == "" {
			continue
		}
		var r Sources
		var err error
		if t.src.known() {
			r, err = t.encodeTexts(ctx, []string{s})
		} else {
			var ids []int64
			if ids, err = ParseIDs(s); err != nil {
				err = &InputError{Row: 0, Position: -1, Msg: err.Error()}
			}
			r = Sources{Rows: [][]int64{ids}}
		}
		if err == nil {
			err = t.checkRows(r) // ids outside the vocabulary, too long
		}
		if err != nil {
			var ie *InputError
			if errors.As(err, &ie) {
				in := Input{Where: fmt.Sprintf("line %d", first+i), Shown: s, Text: s}
				return CorpusStats{}, &BadInputError{Input: in, InputError: ie}
			}
			return CorpusStats{}, err
		}
		src.Rows[i] = r.Rows[0]
		if w := r.rowWords(0); w != nil {
			if src.Words == nil {
				src.Words = make([][]string, len(lines))
			}
			src.Words[i] = w
		}
	}
	return t.translateCorpus(ctx, src, co, emit, progress)
}

// corpusLens returns the n of each row's output limit when rows are a
// test set: the toolkit's output limit is per batch of its own, so each
// row's n is the longest source of the batch the toolkit would put it in,
// however attnx batches it; nil when the model's limit does not depend on
// batches.
func (t *Translator) corpusLens(rows [][]int64, co CorpusOptions) []int {
	if !t.BatchDependentLimits() {
		return nil
	}
	b := *t.info.Defaults.Batching
	if tb := co.ToolkitBatches; tb != nil && tb.Size > 0 {
		b.Size, b.Tokens = tb.Size, tb.Tokens
	}
	return batchLongest(rows, &b)
}

// BatchDependentLimits reports whether a test set's output limits depend
// on the toolkit's batches (attnx.json's defaults.batching): a
// MaxLenRatio above 0 (OpenNMT-py's -max_length keeps the model's ratio,
// so MaxLen alone does not fix the limit there), or neither MaxLen nor
// MaxLenRatio, which leaves the model's own limit. A sentence's limit
// then depends on the sentences batched with it, so translating a part of
// a test set alone can give a sentence near the part's edge another limit
// than the whole file does. MaxLen with MaxLenRatio 0 fixes every limit.
func (t *Translator) BatchDependentLimits() bool {
	d := t.info.Defaults
	if d == nil || d.Batching == nil {
		return false
	}
	if r := t.opt.MaxLenRatio; r != nil {
		return *r > 0
	}
	return t.opt.MaxLen == 0
}

// CorpusLimits returns the output limit, EOS included, that
// TranslateCorpusIDs gives each row of a test set (0 for a nil row): what
// a checker of its output (verify --src) must decode each sentence with.
func (t *Translator) CorpusLimits(rows [][]int64, co CorpusOptions) []int {
	so := t.searchOptions()
	so.lens = t.corpusLens(rows, co)
	out := make([]int, len(rows))
	for i, r := range rows {
		if r != nil {
			out[i] = t.rowLimit(so, i, r)
		}
	}
	return out
}

// TranslateCorpusIDs is TranslateCorpus on source rows already tokenised
// (a nil row is a blank line: an empty result). A copy-attention model's
// ids from the source vocabulary's size up are refused, as TranslateIDs
// refuses them.
func (t *Translator) TranslateCorpusIDs(ctx context.Context, rows [][]int64, co CorpusOptions,
	emit func(i int, res Result) error, progress func(sentences, outTokens int)) (CorpusStats, error) {
	return t.translateCorpus(ctx, Sources{Rows: rows}, co, emit, progress)
}

// translateCorpus is TranslateCorpusIDs with each row's own words outside
// the source vocabulary (Sources.Words).
func (t *Translator) translateCorpus(ctx context.Context, sources Sources, co CorpusOptions,
	emit func(i int, res Result) error, progress func(sentences, outTokens int)) (CorpusStats, error) {
	rows := sources.Rows
	st := CorpusStats{Sentences: len(rows)}
	for _, r := range rows {
		if r == nil {
			st.Empty++
		}
		st.SourceTokens += len(r)
	}
	batches := corpusBatches(rows, co, t.batchSize())
	st.Batches = len(batches)
	longest := t.corpusLens(rows, co)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		results []Result // held until the sentences before them are emitted
		done    []bool
		next    int
		ndone   int
		firstEr error
	)
	if !co.AnyOrder {
		results, done = make([]Result, len(rows)), make([]bool, len(rows))
		for i, r := range rows {
			if r == nil {
				done[i] = true
			}
		}
	}
	fail := func(err error) {
		if firstEr == nil {
			firstEr = err
			cancel()
		}
	}
	// flush emits the finished prefix (with AnyOrder, the blank rows
	// first); mu is held.
	flush := func() {
		if co.AnyOrder {
			for ; next < len(rows) && firstEr == nil; next++ {
				if rows[next] == nil {
					if err := emit(next, Result{}); err != nil {
						fail(err)
					}
				}
			}
			return
		}
		for next < len(rows) && done[next] && firstEr == nil {
			if err := emit(next, results[next]); err != nil {
				fail(err)
				return
			}
			results[next] = Result{} // emitted: let it go
			next++
		}
	}
	mu.Lock()
	flush()
	mu.Unlock()

	lanes := max(co.Lanes, 1)
	work := make(chan []int)
	var wg sync.WaitGroup
	for range lanes {
		wg.Go(func() {
			for idx := range work {
				src := Sources{Rows: make([][]int64, len(idx))}
				var lens []int
				if longest != nil {
					lens = make([]int, len(idx))
				}
				for k, i := range idx {
					src.Rows[k] = rows[i]
					if w := sources.rowWords(i); w != nil {
						if src.Words == nil {
							src.Words = make([][]string, len(idx))
						}
						src.Words[k] = w
					}
					if lens != nil {
						lens[k] = longest[i]
					}
				}
				var res []Result
				err := panics.Call(func() (err error) {
					res, err = t.translateIDs(ctx, src, lens, co.WithoutAttention)
					return err
				}, "translating sentences %s", sentenceList(idx))
				mu.Lock()
				if err != nil {
					fail(err)
					mu.Unlock()
					continue
				}
				for k, i := range idx {
					st.OutputTokens += OutputLen(res[k].Tokens, t.info.Special.EOS)
					if !co.AnyOrder {
						results[i], done[i] = res[k], true
					} else if firstEr == nil {
						if err := emit(i, res[k]); err != nil {
							fail(err)
						}
					}
				}
				ndone += len(idx)
				flush()
				if progress != nil && firstEr == nil {
					progress(ndone+st.Empty, st.OutputTokens)
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, b := range batches {
		select {
		case work <- b:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if firstEr != nil {
		return st, firstEr
	}
	return st, ctx.Err()
}

// OutputLen is the number of output tokens without the final EOS.
func OutputLen(toks []int64, eos int64) int {
	if n := len(toks); n > 0 && toks[n-1] == eos {
		return n - 1
	}
	return len(toks)
}

// corpusBatches sorts the non-empty rows by length, longest first, and cuts
// them into batches of indices: at most maxRows rows (co.BatchSize or the
// Translator's), or with BatchTokens at most that many padded source
// tokens.
func corpusBatches(rows [][]int64, co CorpusOptions, defaultRows int) [][]int {
	var order []int
	for i, r := range rows {
		if r != nil {
			order = append(order, i)
		}
	}
	// Longest first: the slowest batches start early and memory peaks at
	// once; ties keep the file's order.
	sort.SliceStable(order, func(a, b int) bool { return len(rows[order[a]]) > len(rows[order[b]]) })
	maxRows := co.BatchSize
	if maxRows <= 0 {
		maxRows = defaultRows
	}
	var out [][]int
	var cur []int
	longest := 0
	for _, i := range order {
		n := len(rows[i])
		if len(cur) > 0 {
			l := max(longest, n)
			full := len(cur) >= maxRows
			if co.BatchTokens > 0 {
				full = (len(cur)+1)*l > co.BatchTokens
			}
			if full {
				out = append(out, cur)
				cur, longest = nil, 0
			}
		}
		cur = append(cur, i)
		longest = max(longest, n)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// sentenceList names the sentences of a batch (indexes into the corpus),
// counting from 1, for an error: "3, 7, 9", or the first few and a count.
func sentenceList(idx []int) string {
	var b strings.Builder
	for k, i := range idx {
		if k == 5 {
			fmt.Fprintf(&b, " and %d more", len(idx)-k)
			break
		}
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d", i+1)
	}
	return b.String()
}
