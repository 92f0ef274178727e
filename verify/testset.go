package verify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/mtscore"
	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/translate"
)

// DefaultChunk is the number of sentences CheckTestSet checks at once when
// TestSet.Chunk is 0.
const DefaultChunk = 64

// ErrEmptyTestSet is returned (wrapped, after the test set's name) by
// CheckTestSet for a test set whose lines are all blank.
var ErrEmptyTestSet = errors.New("has no sentences")

// TestSet is a user's own test set for CheckTestSet.
type TestSet struct {
	// Name names the source file in the outcome and in errors.
	Name string
	// Lines are the sentences, raw text the model's tokenizer splits;
	// blank lines are skipped and stay blank in the outcome.
	Lines []string
	// References are reference translations, each with one line per
	// line of Lines, scored with BLEU against both decodes.
	References [][]string
	// Chunk is the most sentences of one output limit checked at once
	// (0: DefaultChunk).
	Chunk int
	// Steps, when positive, is every sentence's output limit; 0 gives
	// each sentence the limit attnx translate gives it in the file.
	Steps int
	// Progress, when set, hears the number of sentences checked, of
	// total (the blank lines left out), after each chunk.
	Progress func(done, total int)
}

// LineError is a test set line the model's tokenizer or vocabulary
// refused.
type LineError struct {
	Name string // the test set's
	Line int    // from 1
	Text string
	Err  error
}

// Error names the test set, the line, its text and what failed.
func (e *LineError) Error() string {
	return fmt.Sprintf("%s line %d (%q): %v", e.Name, e.Line, e.Text, e.Err)
}

// Unwrap returns what failed, for errors.Is and errors.As.
func (e *LineError) Unwrap() error { return e.Err }

// TestSetOutcome is CheckTestSet's result.
type TestSetOutcome struct {
	Source    string `json:"source"`
	Sentences int    `json:"sentences"`
	Blank     int    `json:"blank"`
	Identical int    `json:"identical"`
	// NearTies counts the sentences that part from PyTorch's at a near tie
	// (PyTorch's best two log-probs closer than the measured drift), which
	// the spec's tolerance allows; they are not identical.
	NearTies int `json:"near_ties"`
	// Decoding says how both sides decoded: greedily, or with the beam
	// search (and rules) translate runs by default for the model.
	Decoding string `json:"decoding"`
	// MinSteps and Steps are the smallest and largest output limits the
	// sentences were decoded with (translate --src's, per sentence).
	MinSteps int  `json:"min_steps"`
	Steps    int  `json:"steps"`
	Chunks   int  `json:"chunks"`
	StepsOK  bool `json:"steps_within_tolerance"`
	// Weights is the model's precision. For int8 and int4 the steps are
	// not judged against the float32 tolerance: each chunk's greedy
	// decodes must agree with PyTorch's float32 ones on MinAgreement of
	// its sentences, as Check judges them, and StepsOK says so.
	Weights      string   `json:"weights"`
	MinAgreement float64  `json:"min_agreement,omitempty"`
	OK           bool     `json:"ok"`
	Failures     []string `json:"failures,omitempty"`
	// BLEU lines (sacreBLEU's): attnx against PyTorch, and each against
	// the references.
	AttnxVsPyTorch string   `json:"bleu_attnx_vs_pytorch"`
	AttnxVsRef     []string `json:"bleu_attnx_vs_ref,omitempty"`
	PyTorchVsRef   []string `json:"bleu_pytorch_vs_ref,omitempty"`
	Attnx          []string `json:"attnx"`
	PyTorch        []string `json:"pytorch"`
}

// testSetRows tokenises the test set: one row of source ids per line, nil
// for a blank one.
func testSetRows(tr *translate.Translator, ts TestSet) ([][]int64, error) {
	all := make([][]int64, len(ts.Lines))
	for i, l := range ts.Lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ids, err := tr.SourceIDs(l)
		if err != nil {
			return nil, &LineError{Name: ts.Name, Line: i + 1, Text: l, Err: err}
		}
		all[i] = ids
	}
	return all, nil
}

// testSetDecoding describes how both sides decode.
func testSetDecoding(o Options, weights quant.Precision) string {
	if o.Beam > 0 {
		return fmt.Sprintf("beam search K=%d under %s rules, alpha %g", o.Beam, cmp.Or(o.Search.Rules, translate.RulesSpec), o.LengthPenalty)
	}
	if weights.Reduced() {
		// A float32 reference meets reduced weights as an agreement rate,
		// measured greedily on both sides under attnx's rules.
		return fmt.Sprintf("greedy decoding on both sides (%s weights are measured greedily against float32 PyTorch; translate decodes them as the model's defaults say)", weights)
	}
	return "greedy decoding"
}

// CheckTestSet decodes a test set with the model directory's graphs (tr,
// opened on o.ModelDir with the steps engine) and with PyTorch, as attnx
// translate decodes the file by default: it tokenises each line with the
// model's tokenizer, runs Check on chunks of sentences of one output limit
// (every step of every sentence within the float32 tolerance, decodes
// compared token by token) and scores both decodes with BLEU. o.Inputs,
// o.Steps and o.Rows are set per chunk.
func CheckTestSet(tr *translate.Translator, o Options, ts TestSet) (*TestSetOutcome, error) {
	all, err := testSetRows(tr, ts)
	if err != nil {
		return nil, err
	}
	// Each sentence's limit is the one translate --src gives it (the
	// model's, per the toolkit's batch where it depends on one), unless
	// ts.Steps sets one for all; the sentences are checked in chunks of
	// equal limits, in that order.
	limits := tr.CorpusLimits(all, translate.CorpusOptions{})
	var idx []int
	for i, r := range all {
		if r != nil {
			idx = append(idx, i)
			if ts.Steps > 0 {
				limits[i] = ts.Steps
			}
		}
	}
	if len(idx) == 0 {
		return nil, fmt.Errorf("%s %w", ts.Name, ErrEmptyTestSet)
	}
	slices.SortStableFunc(idx, func(a, b int) int { return limits[a] - limits[b] })
	out := &TestSetOutcome{Source: ts.Name, Sentences: len(ts.Lines), Blank: len(ts.Lines) - len(idx), StepsOK: true,
		Attnx: make([]string, len(ts.Lines)), PyTorch: make([]string, len(ts.Lines)),
		Decoding: testSetDecoding(o, tr.Info().Weights)}
	out.MinSteps, out.Steps = limits[idx[0]], limits[idx[len(idx)-1]]
	o.Rows = false
	tmp, err := os.MkdirTemp("", "attnx-verify-src-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	chunk := cmp.Or(ts.Chunk, DefaultChunk)
	for start := 0; start < len(idx); {
		// A chunk: at most chunk sentences of one limit.
		end := start + 1
		for end < len(idx) && end-start < chunk && limits[idx[end]] == limits[idx[start]] {
			end++
		}
		o.Steps = limits[idx[start]]
		o.Inputs = filepath.Join(tmp, fmt.Sprintf("chunk%d.safetensors", out.Chunks))
		if err := out.checkChunk(tr, o, all, idx[start:end]); err != nil {
			return nil, fmt.Errorf("sentences %d-%d: %w", idx[start]+1, idx[end-1]+1, err)
		}
		if ts.Progress != nil {
			ts.Progress(end, len(idx))
		}
		start = end
	}
	out.score(ts.References)
	return out, nil
}

// checkChunk checks the sentences lines (indices into all) of one output
// limit, o.Steps, and adds them to the outcome.
func (out *TestSetOutcome) checkChunk(tr *translate.Translator, o Options, all [][]int64, lines []int) error {
	chunk := make([][]int64, len(lines))
	for k, i := range lines {
		chunk[k] = all[i]
	}
	if err := WriteInputs(o.Inputs, chunk); err != nil {
		return err
	}
	res, err := Check(o)
	if err != nil {
		return err
	}
	out.Chunks++
	name := chunkName(lines, o.Steps)
	if !res.OK {
		out.StepsOK = false
		out.Failures = append(out.Failures, fmt.Sprintf("%s: %s", name, firstFailure(res)))
	}
	out.Weights, out.MinAgreement = string(res.Weights), res.MinAgreement
	got, want := res.ReferenceGreedy, res.ReferenceGreedy
	switch {
	case o.Beam > 0 && len(res.Beam) > 0:
		// The best hypotheses of the decoding core's beam search and
		// of the reference's, under the same rules.
		bc := res.Beam[0]
		got, want = bc.Tokens, bc.Reference
		if !bc.Identical {
			out.StepsOK = false
			out.Failures = append(out.Failures, fmt.Sprintf("%s: %s: %s", name, bc.Engine, bc.Detail))
		} else {
			for k := range got {
				if !slices.Equal(got[k], want[k]) {
					out.NearTies++ // a swap the check allowed
				}
			}
		}
	case len(res.Greedy) > 0:
		g := res.Greedy[len(res.Greedy)-1]
		got = g.Tokens
		tied := map[int]bool{}
		for _, nt := range g.NearTies {
			tied[nt.Row] = true
		}
		out.NearTies += len(tied)
	default:
		// Reduced precision: Check judged the agreement of its graphs'
		// decodes (res.OK) but keeps no tokens; these are the
		// sentences' own, decoded greedily by the steps engine within
		// the steps PyTorch's reference ran.
		decoded, err := tr.TranslateIDsCall(context.Background(), chunk, translate.CallOptions{MaxLen: o.Steps, WithoutAttention: true, Beam: 1, Rules: translate.RulesSpec})
		if err != nil {
			return err
		}
		got = nil
		for _, d := range decoded {
			got = append(got, d.Tokens)
		}
	}
	for k, i := range lines {
		out.Attnx[i] = tr.TargetText(got[k])
		out.PyTorch[i] = tr.TargetText(want[k])
		if slices.Equal(got[k], want[k]) {
			out.Identical++
		}
	}
	return nil
}

// score fills in the BLEU lines and the verdict: every step within
// tolerance, decoded tokens equal but at counted near ties (which no CPU
// can promise away).
func (out *TestSetOutcome) score(refs [][]string) {
	bleu := func(hyps []string, refs [][]string) string {
		s, err := mtscore.BLEU(hyps, refs, mtscore.BLEUOptions{})
		if err != nil {
			return err.Error()
		}
		return mtscore.Line(s, 2)
	}
	out.AttnxVsPyTorch = bleu(out.Attnx, [][]string{out.PyTorch})
	if len(refs) > 0 {
		out.AttnxVsRef = append(out.AttnxVsRef, bleu(out.Attnx, refs))
		out.PyTorchVsRef = append(out.PyTorchVsRef, bleu(out.PyTorch, refs))
	}
	out.OK = out.StepsOK
}

// chunkName names a chunk's sentences (line numbers from 1) and their
// output limit.
func chunkName(lines []int, limit int) string {
	sorted := slices.Clone(lines)
	slices.Sort(sorted)
	var nums []string
	for _, i := range sorted[:min(len(sorted), 6)] {
		nums = append(nums, strconv.Itoa(i+1))
	}
	if len(sorted) > 6 {
		nums = append(nums, "...")
	}
	return fmt.Sprintf("%d sentences of max_len %d (lines %s)", len(lines), limit, strings.Join(nums, ", "))
}

// firstFailure is the first reason Check gave for a chunk's failure.
func firstFailure(res *Outcome) string {
	// Reduced weights are judged by agreement, a rate: say it as one.
	for _, a := range res.Agreement {
		if !a.OK {
			return fmt.Sprintf("%s: %.0f%% of the sentences identical to PyTorch's (%d of %d) < --min-agreement %g", a.Graph, 100*a.SentenceRate, a.SentencesIdentical, a.Sentences, res.MinAgreement)
		}
	}
	for _, g := range res.Greedy {
		if !g.Identical {
			return g.Graph + ": " + g.Detail
		}
	}
	if !res.StepTokensIdentical {
		return "the step argmax tokens differ"
	}
	return "an output is outside the tolerance (run verify --inputs on these sentences for details)"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// WriteText writes the outcome for a reader: the test set, how it was
// decoded, the verdict on the steps, the sentences identical and the BLEU
// lines; checkpoint names what PyTorch ran.
func (o *TestSetOutcome) WriteText(w io.Writer, checkpoint string) {
	limit := fmt.Sprintf("max_len %d", o.Steps)
	if o.MinSteps != o.Steps {
		limit = fmt.Sprintf("max_len %d to %d per sentence, as translate --src decodes it", o.MinSteps, o.Steps)
	}
	fmt.Fprintf(w, "verify --src %s against %s: %d %s (%d blank, skipped), %s, %s, in %d %s\n",
		o.Source, checkpoint, o.Sentences, plural(o.Sentences, "sentence", "sentences"), o.Blank, o.Decoding, limit, o.Chunks, plural(o.Chunks, "chunk", "chunks"))
	reduced := o.Weights != "" && o.Weights != string(quant.PrecisionFP32)
	verdict := "every output of every step within the float32 tolerance, step-isolated"
	if reduced {
		verdict = fmt.Sprintf("%s weights: each chunk's greedy decodes agree with the float32 PyTorch model's on at least %.0f%% of its sentences (deviations reported by plain verify, not judged)", o.Weights, 100*o.MinAgreement)
	}
	if !o.StepsOK {
		verdict = "OUTSIDE the tolerance:\n    " + strings.Join(o.Failures, "\n    ")
		if reduced {
			verdict = "BELOW the agreement asked for:\n    " + strings.Join(o.Failures, "\n    ")
		}
	}
	fmt.Fprintf(w, "  steps      %s\n", verdict)
	n := o.Sentences - o.Blank
	ties := ""
	if o.NearTies > 0 {
		ties = fmt.Sprintf("; %d part from it at a near tie, which the tolerance allows", o.NearTies)
	}
	fmt.Fprintf(w, "  sentences  %d of %d identical to PyTorch's (%.1f%%)%s\n", o.Identical, n, 100*float64(o.Identical)/float64(n), ties)
	fmt.Fprintf(w, "  attnx vs PyTorch    %s\n", o.AttnxVsPyTorch)
	for i := range o.AttnxVsRef {
		fmt.Fprintf(w, "  attnx vs --ref      %s\n", o.AttnxVsRef[i])
		fmt.Fprintf(w, "  PyTorch vs --ref    %s\n", o.PyTorchVsRef[i])
	}
	switch {
	case !o.OK:
		fmt.Fprintln(w, "MISMATCH: see above")
	case o.Identical == n:
		fmt.Fprintln(w, "OK: on this test set the ONNX graphs translate exactly as PyTorch does")
	default:
		fmt.Fprintf(w, "OK: on this test set the ONNX graphs translate as PyTorch does, but at %d near ties\n", o.NearTies)
	}
}

// ModelBeamSearch is the beam search to compare for a model: rules, else
// the model's own (attnx.json's defaults), with the model's penalty form;
// alpha is the length penalty given, or the model's when alphaGiven is
// false and its defaults name one for the same rules.
func ModelBeamSearch(info *modeldir.Info, rules string, nBest int, alpha float64, alphaGiven bool) (BeamSearch, float64) {
	s := BeamSearch{Rules: rules, NBest: nBest, UNK: info.TargetUNK()}
	d := info.Defaults
	if d == nil {
		return s, alpha
	}
	if s.Rules == "" {
		s.Rules = d.Rules
	}
	if s.Rules != d.Rules || s.Rules == "" || s.Rules == translate.RulesSpec {
		return s, alpha
	}
	if !alphaGiven && d.LengthPenalty != nil {
		alpha = *d.LengthPenalty
	}
	if s.Rules == translate.RulesOpenNMT {
		s.OpenNMTPenalty = d.LengthPenaltyForm
	}
	return s, alpha
}
