package attention_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	fx "github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/onnxcheck"
	"github.com/attnx/attnx/internal/ortest"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
)

// beamModel is one random model of the reference (reference.py make-model)
// and the inputs beam.onnx and the reference's beam search run on.
type beamModel struct {
	name      string
	arch      attention.Arch
	cell      attention.Cell
	hidden    int
	embedding int
	layers    int
	srcVocab  int
	tgtVocab  int
	maxLength int // tutorial-location's M
	seed      int
	sp        attention.Special
	inputs    []beamInput
	// zeroWeights makes every parameter 0 (--std 0): every log_prob is
	// -log(Vt), so all candidates of a step tie and only the tie rules
	// decide.
	zeroWeights bool
	// oracle: the model comes from attention/testdata/torch_oracle.py,
	// searched by the reference's beam search (reference.py cannot make
	// the tutorial decoders with LSTM cells).
	oracle bool
}

// beamInput is one batch of sources and the searches run on it.
type beamInput struct {
	name   string
	batch  int
	srcLen int
	ragged bool
	maxLen int
	alpha  float64
	ks     []int
}

func (m beamModel) dir(root string) string { return filepath.Join(root, m.name) }

// The files of a model made by reference.py (a safetensors checkpoint,
// random-inputs files and beam outputs), or by torch_oracle.py beam (one
// directory per input holding model.pt, io.pt and beamK.pt).

func (m beamModel) checkpoint(root string) string {
	if m.oracle {
		return filepath.Join(m.dir(root), m.inputs[0].name, "model.pt")
	}
	return filepath.Join(m.dir(root), "model.safetensors")
}

func (in beamInput) inputs(root string, m beamModel) string {
	if m.oracle {
		return filepath.Join(m.dir(root), in.name, "io.pt")
	}
	return filepath.Join(m.dir(root), in.name+".safetensors")
}

func (in beamInput) out(root string, m beamModel, k int) string {
	if m.oracle {
		return filepath.Join(m.dir(root), in.name, fmt.Sprintf("beam%d.pt", k))
	}
	return filepath.Join(m.dir(root), fmt.Sprintf("%s_beam%d.safetensors", in.name, k))
}

// commands lists the reference.py commands that make the model, its inputs
// and the reference's beam searches.
func (m beamModel) commands(root string) [][]string {
	ckpt := m.checkpoint(root)
	make := []string{"make-model", "--arch", string(m.arch), "--cell", string(m.cell), "--hidden", fmt.Sprint(m.hidden),
		"--embedding-size", fmt.Sprint(m.embedding), "--layers", fmt.Sprint(m.layers), "--src-vocab", fmt.Sprint(m.srcVocab),
		"--tgt-vocab", fmt.Sprint(m.tgtVocab), "--seed", fmt.Sprint(m.seed), "--out", ckpt}
	if m.maxLength > 0 {
		make = append(make, "--max-length", fmt.Sprint(m.maxLength))
	}
	if m.zeroWeights {
		make = append(make, "--std", "0")
	}
	cmds := [][]string{make}
	for i, in := range m.inputs {
		r := []string{"random-inputs", "--batch", fmt.Sprint(in.batch), "--src-len", fmt.Sprint(in.srcLen),
			"--src-vocab", fmt.Sprint(m.srcVocab), "--seed", fmt.Sprint(m.seed*10 + i), "--out", in.inputs(root, m)}
		if in.ragged {
			r = append(r, "--ragged")
		}
		cmds = append(cmds, r)
		for _, k := range in.ks {
			cmds = append(cmds, []string{"beam", "--checkpoint", ckpt, "--inputs", in.inputs(root, m),
				"--beam", fmt.Sprint(k), "--max-len", fmt.Sprint(in.maxLen), "--length-penalty", fmt.Sprint(in.alpha),
				"--sos", fmt.Sprint(m.sp.SOS), "--eos", fmt.Sprint(m.sp.EOS), "--pad", fmt.Sprint(m.sp.PAD),
				"--out", in.out(root, m, k)})
		}
	}
	return cmds
}

// oracleCases lists torch_oracle.py's cases for the model: one per input,
// all with the model's seed (hence its weights).
func (m beamModel) oracleCases() []map[string]any {
	var out []map[string]any
	for _, in := range m.inputs {
		out = append(out, map[string]any{"name": m.name + "/" + in.name, "arch": m.arch, "cell": m.cell,
			"hidden": m.hidden, "embedding": m.embedding, "layers": m.layers, "src_vocab": m.srcVocab,
			"tgt_vocab": m.tgtVocab, "max_length": m.maxLength, "batch": in.batch, "src_len": in.srcLen,
			"ragged": in.ragged, "steps": 1, "max_len": in.maxLen, "sos": m.sp.SOS, "eos": m.sp.EOS,
			"pad": m.sp.PAD, "seed": m.seed, "ks": in.ks, "alpha": in.alpha})
	}
	return out
}

// makeBeamModels has the reference (and the oracle) make the models and
// run their beam searches, in one Python process each.
func makeBeamModels(t *testing.T, root string, models []beamModel) {
	t.Helper()
	var cmds [][]string
	var oracle []map[string]any
	for _, m := range models {
		if m.oracle {
			oracle = append(oracle, m.oracleCases()...)
			continue
		}
		if err := os.MkdirAll(m.dir(root), 0o755); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, m.commands(root)...)
	}
	fx.ReferenceBatch(t, cmds)
	if len(oracle) == 0 {
		return
	}
	data, err := json.Marshal(oracle)
	if err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(root, "oracle_cases.json")
	if err := os.WriteFile(list, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(testenv.Python, "testdata/torch_oracle.py", "beam", list, root).CombinedOutput(); err != nil {
		t.Fatalf("torch_oracle.py beam: %v\n%s", err, out)
	}
}

// tutorialSpecial are the tutorial's tokens (SOS 0, EOS 1) with a PAD.
var tutorialSpecial = attention.Special{SOS: 0, EOS: 1, PAD: 2, UNK: -1}

// beamParityModels covers every architecture x cell, with one and two
// layers, E = H and E != H, target vocabularies of 6 and 13 (the small one
// makes EOS common, so that rows finish more than K hypotheses), each
// with a batch of 1 and a ragged batch of 5, K = 1, 4 and 8 and the
// length penalties 1, 0.6 and 0; and a target vocabulary of 3 searched
// for 1 and 2 steps, where rows run out of hypotheses.
func beamParityModels() []beamModel {
	var out []beamModel
	seed := 300
	for _, a := range attention.StateDictArchs {
		for ci, cell := range attention.Cells {
			seed++
			m := beamModel{name: fmt.Sprintf("%s_%s", a, cell), arch: a, cell: cell, hidden: 9, embedding: 9, layers: 1 + ci,
				srcVocab: 17, tgtVocab: []int{6, 13}[(len(out)/2+ci)%2], seed: seed, sp: attention.DefaultSpecial}
			if ci == 1 {
				m.embedding = 6
			}
			if a == attention.TutorialLocation || a == attention.TutorialBahdanau {
				m.sp = tutorialSpecial
				m.oracle = cell == attention.LSTM
			}
			if a == attention.TutorialLocation {
				m.maxLength = 8
			}
			alpha := []float64{1, 0.6, 0}[seed%3]
			m.inputs = []beamInput{
				{name: "b1", batch: 1, srcLen: 6, maxLen: 14, alpha: alpha, ks: []int{1, 4, 8}},
				{name: "b5", batch: 5, srcLen: 8, ragged: true, maxLen: 16, alpha: alpha, ks: []int{1, 4, 8}},
			}
			out = append(out, m)
		}
	}
	tiny := beamModel{name: "tiny_vocab", arch: attention.LuongGeneral, cell: attention.GRU, hidden: 5, embedding: 5, layers: 1,
		srcVocab: 9, tgtVocab: 3, seed: 399, sp: attention.DefaultSpecial}
	tiny.inputs = []beamInput{
		{name: "one_step", batch: 3, srcLen: 4, ragged: true, maxLen: 1, alpha: 1, ks: []int{1, 4, 8}},
		{name: "two_steps", batch: 3, srcLen: 4, ragged: true, maxLen: 2, alpha: 0.5, ks: []int{1, 4, 8}},
	}
	tied := beamModel{name: "all_tied", arch: attention.Bahdanau, cell: attention.LSTM, hidden: 4, embedding: 4, layers: 1,
		srcVocab: 9, tgtVocab: 7, seed: 398, sp: attention.DefaultSpecial, zeroWeights: true}
	tied.inputs = []beamInput{
		{name: "alpha0", batch: 2, srcLen: 3, ragged: true, maxLen: 5, alpha: 0, ks: []int{1, 4, 8}},
		{name: "alpha1", batch: 2, srcLen: 3, ragged: true, maxLen: 5, alpha: 1, ks: []int{1, 4, 8}},
	}
	return append(out, tiny, tied)
}

// nbest is one side's search result for one row.
type nbest struct {
	tokens     [][]int64
	scores     []float32
	normalized []float32
}

// readNBest reads reference.py beam's output, per row.
func readNBest(t *testing.T, path string) []nbest {
	t.Helper()
	sd, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) *builder.Tensor {
		tt := sd.Tensors[name]
		if tt == nil {
			t.Fatalf("%s lacks %s", path, name)
		}
		return tt
	}
	toks, lens, scores, norm, counts := get("beam_tokens"), get("beam_lengths"), get("beam_scores"), get("beam_normalized_scores"), get("beam_counts")
	return nbestRows(t, toks.Dims, ints(t, toks), ints(t, lens), floats(t, scores), floats(t, norm), ints(t, counts))
}

// nbestRows cuts [B, N, T] tokens and [B, N] lengths and scores into
// rows of counts[b] hypotheses (all N when counts is nil).
func nbestRows(t *testing.T, dims []int64, toks, lens []int64, scores, norm []float32, counts []int64) []nbest {
	t.Helper()
	B, N, T := int(dims[0]), int(dims[1]), int(dims[2])
	out := make([]nbest, B)
	for b := range B {
		n := N
		if counts != nil {
			n = int(counts[b])
		}
		for j := range n {
			l := int(lens[b*N+j])
			if l < 1 || l > T {
				t.Fatalf("row %d hypothesis %d: length %d outside [1, %d]", b, j, l, T)
			}
			row := toks[(b*N+j)*T : (b*N+j+1)*T]
			out[b].tokens = append(out[b].tokens, row[:l])
			out[b].scores = append(out[b].scores, scores[b*N+j])
			out[b].normalized = append(out[b].normalized, norm[b*N+j])
		}
	}
	return out
}

func ints(t *testing.T, tt *builder.Tensor) []int64 {
	t.Helper()
	v, err := tt.Int64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func floats(t *testing.T, tt *builder.Tensor) []float32 {
	t.Helper()
	v, err := tt.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// nearTie is the spec's bound: rounding may swap two hypotheses whose
// scores differ by less than this.
const nearTie = 1e-5

// scoreTol bounds the difference of a hypothesis' scores between engines.
const scoreTol = 1e-4

// compareNBest compares beam.onnx's row with the reference's: the same
// hypotheses, token for token, in the same order, scores within scoreTol.
// Two hypotheses may appear swapped when their normalized scores differ by
// less than nearTie; it returns how many such swaps it accepted.
func compareNBest(got, want nbest) (swaps int, maxErr float64, err error) {
	if len(got.tokens) != len(want.tokens) {
		return 0, 0, fmt.Errorf("%d hypotheses, reference %d", len(got.tokens), len(want.tokens))
	}
	used := make([]bool, len(got.tokens))
	for j, w := range want.tokens {
		// The same position, or a near-tied one holding the same tokens.
		match := -1
		for g := range got.tokens {
			if used[g] || !slices.Equal(got.tokens[g], w) {
				continue
			}
			if g == j || math.Abs(float64(want.normalized[j]-want.normalized[g])) < nearTie {
				match = g
				break
			}
		}
		if match < 0 {
			return swaps, maxErr, fmt.Errorf("hypothesis %d: reference %v (score %v, normalized %v); beam.onnx's list %v", j, w, want.scores[j], want.normalized[j], got.tokens)
		}
		if match != j {
			swaps++
		}
		used[match] = true
		for _, p := range [][2]float32{{got.scores[match], want.scores[j]}, {got.normalized[match], want.normalized[j]}} {
			d := math.Abs(float64(p[0] - p[1]))
			maxErr = max(maxErr, d)
			if !(d <= scoreTol) {
				return swaps, maxErr, fmt.Errorf("hypothesis %d %v: score %v, reference %v", j, w, p[0], p[1])
			}
		}
	}
	return swaps, maxErr, nil
}

// beamRun is beam.onnx's output for one input and K.
type beamRun struct {
	padID  int64
	rows   []nbest
	steps  int
	attn   []float32 // [batch, steps, src_len]
	tokens []int64   // [batch, K, steps]
}

// runBeam runs beam.onnx on an input file.
func runBeam(t *testing.T, s *onnxrun.Session, inputs map[string]*onnxrun.Tensor, k, maxLen int, alpha float64, pad int64) beamRun {
	t.Helper()
	feeds := map[string]*onnxrun.Tensor{
		attention.InSourceIDs:     inputs[attention.InSourceIDs],
		attention.InSourceLengths: inputs[attention.InSourceLengths],
		attention.InMaxLen:        onnxrun.Scalar(int64(maxLen)),
		attention.InBeamSize:      onnxrun.Scalar(int64(k)),
		attention.InLengthPenalty: onnxrun.Scalar(alpha),
	}
	out, err := s.Run(feeds)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := out[attention.OutOutputIDs].Int64s()
	if err != nil {
		t.Fatal(err)
	}
	lens, _ := out[attention.OutLengths].Int64s()
	scores, _ := out[attention.OutScores].Float32s()
	norm, _ := out[attention.OutNormalizedScores].Float32s()
	attn, _ := out[attention.OutAttentions].Float32s()
	dims := out[attention.OutOutputIDs].Shape
	B, S := inputs[attention.InSourceIDs].Shape[0], inputs[attention.InSourceIDs].Shape[1]
	if len(dims) != 3 || dims[0] != B || dims[1] != int64(k) || dims[2] > int64(maxLen) {
		t.Fatalf("output_ids shape %v, want [%d %d <=%d]", dims, B, k, maxLen)
	}
	if want := []int64{B, dims[2], S}; !slices.Equal(out[attention.OutAttentions].Shape, want) {
		t.Fatalf("attention shape %v, want %v", out[attention.OutAttentions].Shape, want)
	}
	// Missing hypotheses (length 0) come last, with -Inf scores and PAD
	// tokens; present ones are PAD past their length.
	counts := make([]int64, B)
	T := int(dims[2])
	for b := range int(B) {
		for j := range k {
			i := b*k + j
			l := int(lens[i])
			if l == 0 {
				if !math.IsInf(float64(scores[i]), -1) || !math.IsInf(float64(norm[i]), -1) {
					t.Errorf("row %d hypothesis %d is missing but has scores %v, %v", b, j, scores[i], norm[i])
				}
			} else if int(counts[b]) != j {
				t.Errorf("row %d: hypothesis %d present after a missing one", b, j)
			} else {
				counts[b]++
			}
			for _, tok := range toks[i*T+l : (i+1)*T] {
				if tok != pad {
					t.Fatalf("row %d hypothesis %d: %v past its length %d, want PAD %d", b, j, toks[i*T:(i+1)*T], l, pad)
				}
			}
		}
	}
	return beamRun{padID: pad, rows: nbestRows(t, dims, toks, lens, scores, norm, counts), steps: T, attn: attn, tokens: toks}
}

// readInputs reads a random-inputs file as feeds.
func readInputs(t *testing.T, path string) map[string]*onnxrun.Tensor {
	t.Helper()
	sd, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	feeds := map[string]*onnxrun.Tensor{}
	for _, name := range []string{attention.InSourceIDs, attention.InSourceLengths} {
		tt := sd.Tensors[name]
		feeds[name] = onnxrun.NewInt64(tt.Dims, ints(t, tt))
	}
	return feeds
}

// openModel builds a graph, checks it with onnx.checker (full_check) when
// check is set and opens it in ONNX Runtime; it returns the session and the node count,
// subgraphs included.
func openModel(t *testing.T, name string, check bool, build func() (*builder.Model, error)) (*onnxrun.Session, int) {
	t.Helper()
	m, err := build()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	data, err := onnxfile.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if check {
		onnxcheck.Check(t, data)
	}
	mp, err := onnxfile.LoadBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	return ortest.Open(t, m, onnxrun.Options{}), onnxfile.Summarize(mp).Nodes
}

// TestBeamParityWithReference runs beam.onnx of every architecture x cell
// on a batch of 1 and a ragged batch of 5 with K = 1, 4 and 8 and compares
// the n-best lists with the PyTorch reference's beam search (reference.py
// beam) on the same model and inputs: identical token lists in the same
// order (near-tie swaps counted), scores within 1e-4. K = 1 must give
// greedy.onnx's tokens. Every beam.onnx passes onnx.checker's full check.
func TestBeamParityWithReference(t *testing.T) {
	ortest.Require(t)
	root := t.TempDir()
	models := beamParityModels()
	makeBeamModels(t, root, models)
	var table []string
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			lines, st := compareBeamModel(t, root, m, true)
			table = append(table, lines...)
			if st.greedyDiffs > 0 {
				t.Errorf("K=1 differs from greedy.onnx in %d rows", st.greedyDiffs)
			}
			if m.zeroWeights && st.swaps > 0 {
				t.Errorf("%d swaps where only the tie rules decide", st.swaps)
			}
		})
	}
	t.Logf("beam.onnx vs reference.py beam:\n%s", strings.Join(table, "\n"))
}

// beamStats counts the rows compared and what was found.
type beamStats struct {
	rows, identical, swaps, diverged, greedyRows, greedyDiffs int
	maxErr                                                    float64
}

func (s *beamStats) add(o beamStats) {
	s.rows += o.rows
	s.identical += o.identical
	s.swaps += o.swaps
	s.diverged += o.diverged
	s.greedyRows += o.greedyRows
	s.greedyDiffs += o.greedyDiffs
	s.maxErr = max(s.maxErr, o.maxErr)
}

// compareBeamModel runs beam.onnx of one model on its inputs for each K and
// compares it with the reference's output, with greedy.onnx at K = 1 and
// with decoder.onnx along each best hypothesis. A row that differs from
// the reference by more than near-tie swaps fails the test. check runs
// onnx.checker on the graphs. It returns one line per input and K.
func compareBeamModel(t *testing.T, root string, m beamModel, check bool) ([]string, beamStats) {
	t.Helper()
	w := fx.Weights(t, m.checkpoint(root))
	beam, nodes := openModel(t, "beam", check, func() (*builder.Model, error) { return attention.Beam(w, m.sp, attention.BuildOptions{}) })
	greedy, _ := openModel(t, "greedy", check, func() (*builder.Model, error) { return attention.Greedy(w, m.sp, attention.BuildOptions{}) })
	steps := teacherForcer{t: t, sp: m.sp, lstm: m.cell == attention.LSTM,
		enc: ortest.Open(t, mustBuild(t, attention.Encoder, w), onnxrun.Options{}),
		dec: ortest.Open(t, mustBuild(t, attention.Decoder, w), onnxrun.Options{})}
	var lines []string
	var total beamStats
	for _, in := range m.inputs {
		feeds := readInputs(t, in.inputs(root, m))
		for _, k := range in.ks {
			got := runBeam(t, beam, feeds, k, in.maxLen, in.alpha, m.sp.PAD)
			want := readNBest(t, in.out(root, m, k))
			var st beamStats
			ended, hyps := 0, 0
			for b := range want {
				for _, h := range want[b].tokens {
					hyps++
					if h[len(h)-1] == m.sp.EOS {
						ended++
					}
				}
				n, e, err := compareNBest(got.rows[b], want[b])
				if err != nil {
					t.Errorf("%s %s K=%d row %d: %v", m.name, in.name, k, b, err)
					st.diverged++
				}
				st.rows++
				st.swaps += n
				st.maxErr = max(st.maxErr, e)
				if err == nil && n == 0 {
					st.identical++
				}
			}
			if k == 1 {
				st.greedyRows, st.greedyDiffs = len(want), checkGreedy(t, greedy, feeds, in.maxLen, got)
			}
			steps.checkBest(feeds, got)
			total.add(st)
			lines = append(lines, fmt.Sprintf("%-24s %s K=%d alpha=%g: %d/%d rows identical, %d swaps, max score error %.1e; %d/%d hypotheses end in EOS, %d steps; %d nodes",
				m.name, in.name, k, in.alpha, st.identical, st.rows, st.swaps, st.maxErr, ended, hyps, got.steps, nodes))
		}
	}
	return lines, total
}

// checkGreedy compares K = 1 with greedy.onnx: it returns the number of
// rows whose tokens differ; the attention of rows with the same tokens
// must agree.
func checkGreedy(t *testing.T, greedy *onnxrun.Session, feeds map[string]*onnxrun.Tensor, maxLen int, beam beamRun) int {
	t.Helper()
	out, err := greedy.Run(map[string]*onnxrun.Tensor{
		attention.InSourceIDs:     feeds[attention.InSourceIDs],
		attention.InSourceLengths: feeds[attention.InSourceLengths],
		attention.InMaxLen:        onnxrun.Scalar(int64(maxLen)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := out[attention.OutOutputIDs].Int64s()
	attn, _ := out[attention.OutAttentions].Float32s()
	B, T := len(beam.rows), out[attention.OutOutputIDs].Shape[1]
	S := len(attn) / max(1, B*int(T))
	diffs := 0
	for b := range B {
		g, bt := ids[b*int(T):(b+1)*int(T)], beam.tokens[b*beam.steps:(b+1)*beam.steps]
		// The longer of the two is PAD past the other's end.
		n := max(len(g), len(bt))
		pad := func(x []int64) []int64 {
			return append(slices.Clone(x), slices.Repeat([]int64{beam.padID}, n-len(x))...)
		}
		if !slices.Equal(pad(g), pad(bt)) {
			t.Logf("row %d: K=1 tokens %v, greedy.onnx %v", b, bt, g)
			diffs++
			continue
		}
		for i := range min(int(T), beam.steps) * S {
			ga, ba := attn[b*int(T)*S+i], beam.attn[b*beam.steps*S+i]
			if math.Abs(float64(ga-ba)) > 1e-6 {
				t.Errorf("row %d: K=1 attention %v, greedy.onnx %v (flat %d)", b, ba, ga, i)
				break
			}
		}
	}
	return diffs
}

func mustBuild(t *testing.T, build func(*attention.Weights, attention.BuildOptions) (*builder.Model, error), w *attention.Weights) *builder.Model {
	t.Helper()
	m, err := build(w, attention.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// teacherForcer runs encoder.onnx and decoder.onnx along given tokens.
type teacherForcer struct {
	t        *testing.T
	sp       attention.Special
	lstm     bool
	enc, dec *onnxrun.Session
}

// checkBest feeds each row's best hypothesis to the decoder step by step
// (SOS first): beam.onnx's attention must be the decoder's at each of its
// steps and its raw score the float32 sum of the decoder's log_probs of
// its tokens, in step order.
func (f teacherForcer) checkBest(feeds map[string]*onnxrun.Tensor, run beamRun) {
	t := f.t
	t.Helper()
	encOut, err := f.enc.Run(feeds)
	if err != nil {
		t.Fatal(err)
	}
	B, S := int(feeds[attention.InSourceIDs].Shape[0]), int(feeds[attention.InSourceIDs].Shape[1])
	K := len(run.tokens) / (B * run.steps)
	state := map[string]*onnxrun.Tensor{
		attention.InHidden:         encOut[attention.OutHidden],
		attention.InEncoderOutputs: encOut[attention.OutEncoder],
		attention.InSourceLengths:  feeds[attention.InSourceLengths],
	}
	if f.lstm {
		state[attention.InCell] = encOut[attention.OutCell]
	}
	sums := make([]float32, B)
	for step := range run.steps {
		ids := make([]int64, B)
		for b := range B {
			ids[b] = f.sp.SOS
			if step > 0 {
				ids[b] = run.tokens[(b*K)*run.steps+step-1]
			}
		}
		state[attention.InInputIDs] = onnxrun.NewInt64([]int64{int64(B)}, ids)
		out, err := f.dec.Run(state)
		if err != nil {
			t.Fatal(err)
		}
		lp, _ := out[attention.OutLogProbs].Float32s()
		attn, _ := out[attention.OutAttention].Float32s()
		V := len(lp) / B
		for b := range B {
			if len(run.rows[b].tokens) == 0 || step >= len(run.rows[b].tokens[0]) {
				continue
			}
			sums[b] += lp[b*V+int(run.rows[b].tokens[0][step])]
			for s := range S {
				got, want := run.attn[(b*run.steps+step)*S+s], attn[b*S+s]
				if math.Abs(float64(got-want)) > 1e-5 {
					t.Fatalf("row %d step %d: best hypothesis' attention[%d] = %v, decoder.onnx %v", b, step, s, got, want)
				}
			}
		}
		state[attention.InHidden] = out[attention.OutNextHidden]
		if f.lstm {
			state[attention.InCell] = out[attention.OutNextCell]
		}
	}
	for b := range B {
		if len(run.rows[b].tokens) == 0 {
			continue
		}
		if d := math.Abs(float64(sums[b] - run.rows[b].scores[0])); d > 1e-5 {
			t.Errorf("row %d: best score %v, decoder.onnx's log_probs sum to %v", b, run.rows[b].scores[0], sums[b])
		}
		// Zero past the best hypothesis' length.
		for step := len(run.rows[b].tokens[0]); step < run.steps; step++ {
			for s := range S {
				if v := run.attn[(b*run.steps+step)*S+s]; v != 0 {
					t.Fatalf("row %d step %d: attention %v past the best hypothesis' length", b, step, v)
				}
			}
		}
	}
}

// EnvBeamSweep, set to N, makes TestBeamSweep compare beam.onnx with the
// reference over N random models (a measurement: minutes for hundreds).
const EnvBeamSweep = "ATTNX_BEAM_SWEEP"

// sweepModels draws n random models: any architecture and cell, sizes,
// vocabularies from 4 to 300 target tokens, a ragged batch of 1 to 8,
// max_len 1 to 24, K = 1 and a random K in 2..10, and a length penalty
// among 0, 0.6, 1 and 1.3.
func sweepModels(n int, seed int64) []beamModel {
	r := rand.New(rand.NewSource(seed))
	pick := func(xs ...int) int { return xs[r.Intn(len(xs))] }
	var out []beamModel
	for i := range n {
		a := attention.StateDictArchs[r.Intn(len(attention.StateDictArchs))]
		cell := attention.Cells[r.Intn(len(attention.Cells))]
		h := 3 + r.Intn(22)
		m := beamModel{name: fmt.Sprintf("sweep%03d_%s_%s", i, a, cell), arch: a, cell: cell, hidden: h,
			embedding: []int{h, 2 + r.Intn(20)}[r.Intn(2)], layers: 1 + r.Intn(2), srcVocab: 5 + r.Intn(40),
			tgtVocab: pick(4, 6, 10, 30, 100, 300), seed: 1000 + i, sp: attention.DefaultSpecial}
		if a == attention.TutorialLocation || a == attention.TutorialBahdanau {
			m.sp = tutorialSpecial
			m.oracle = cell == attention.LSTM
		}
		srcLen := 1 + r.Intn(10)
		if a == attention.TutorialLocation {
			m.maxLength = srcLen + r.Intn(4)
		}
		in := beamInput{name: "in", batch: 1 + r.Intn(8), srcLen: srcLen, ragged: true, maxLen: 1 + r.Intn(24),
			alpha: []float64{0, 0.6, 1, 1.3}[r.Intn(4)], ks: []int{1, 2 + r.Intn(9)}}
		m.inputs = []beamInput{in}
		out = append(out, m)
	}
	return out
}

// TestBeamSweep measures, over many random models, how often beam.onnx's
// n-best lists differ from the reference's: rows identical, rows that
// differ only by near-tie swaps, rows that diverge (which fail the test),
// and rows where K = 1 differs from greedy.onnx. Runs only with
// ATTNX_BEAM_SWEEP=N.
func TestBeamSweep(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(EnvBeamSweep))
	if n < 1 {
		t.Skipf("a measurement: set %s=N to compare N random models", EnvBeamSweep)
	}
	ortest.Require(t)
	root := t.TempDir()
	models := sweepModels(n, 7)
	makeBeamModels(t, root, models)
	var total beamStats
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			_, st := compareBeamModel(t, root, m, false)
			total.add(st)
		})
	}
	t.Logf("%d models, %d rows: %d identical, %d with near-tie swaps (%d swaps), %d diverged; max score error %.1e; K=1 vs greedy.onnx: %d of %d rows differ",
		len(models), total.rows, total.identical, total.rows-total.identical-total.diverged, total.swaps, total.diverged, total.maxErr, total.greedyDiffs, total.greedyRows)
}

// TestBeamScoresAreFloat32Sums: a model whose every parameter is 0 but the
// classifier's bias, where token 4's log_prob exceeds token 3's by one
// float32 ulp (2^-23) at every step. Greedy decoding always takes 4. A
// beam's candidates are float32 sums score + log_prob: once |score| >= 2,
// the two sums round to the same value and the spec's order (ties by
// token id) takes 3. beam.onnx must follow those sums exactly, as the
// reference does: its K = 1 tokens are the reference's, not greedy's.
func TestBeamScoresAreFloat32Sums(t *testing.T) {
	ortest.Require(t)
	dir := t.TempDir()
	cfg := attention.Config{Arch: attention.LuongDot, Cell: attention.LSTM, Hidden: 4, Embedding: 4, Layers: 1, SrcVocab: 9, TgtVocab: 6}
	keys, err := attention.ExpectedKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sd := map[string]*builder.Tensor{}
	for _, k := range keys {
		if !k.Optional {
			sd[k.Key] = builder.FloatTensor(k.Dims, make([]float32, builder.NumElements(k.Dims)))
		}
	}
	bias := []float32{-20, -20, -20, 0, 0x1p-23, -20}
	sd["decoder.classifier.bias"] = builder.FloatTensor([]int64{6}, bias)
	ckpt, inputs := filepath.Join(dir, "model.safetensors"), filepath.Join(dir, "inputs.safetensors")
	if err := checkpoint.WriteSafetensors(ckpt, sd, nil); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "beam1.safetensors")
	fx.ReferenceBatch(t, [][]string{
		{"random-inputs", "--batch", "2", "--src-len", "3", "--src-vocab", "9", "--ragged", "--out", inputs},
		{"beam", "--checkpoint", ckpt, "--inputs", inputs, "--beam", "1", "--max-len", "12", "--out", out},
	})
	w := fx.Weights(t, ckpt)
	sp := attention.DefaultSpecial
	beam, _ := openModel(t, "beam", false, func() (*builder.Model, error) { return attention.Beam(w, sp, attention.BuildOptions{}) })
	greedy, _ := openModel(t, "greedy", false, func() (*builder.Model, error) { return attention.Greedy(w, sp, attention.BuildOptions{}) })
	feeds := readInputs(t, inputs)
	got := runBeam(t, beam, feeds, 1, 12, 1, sp.PAD)
	want := readNBest(t, out)
	for b := range want {
		if !slices.Equal(got.rows[b].tokens[0], want[b].tokens[0]) || got.rows[b].scores[0] != want[b].scores[0] {
			t.Errorf("row %d: beam.onnx %v (score %v), reference %v (score %v)", b, got.rows[b].tokens[0], got.rows[b].scores[0], want[b].tokens[0], want[b].scores[0])
		}
		if !slices.Contains(want[b].tokens[0], 3) {
			t.Errorf("row %d: the reference's K = 1 never took token 3: %v", b, want[b].tokens[0])
		}
	}
	if n := checkGreedy(t, greedy, feeds, 12, got); n != len(want) {
		t.Errorf("greedy.onnx agrees with K = 1 in %d of %d rows; want none (it takes token 4 at every step)", len(want)-n, len(want))
	}
}

// TestBeamOutsideItsRange: the inputs callers must refuse do not bring the
// process down (ONNX Runtime aborts on some selections of zero elements):
// K below 1 runs as K = 1, max_len 0 is an error, a NaN or negative
// length penalty still returns.
func TestBeamOutsideItsRange(t *testing.T) {
	ortest.Require(t)
	w := fx.Weights(t, filepath.Join(filepath.Dir(fx.Root(t)), "demo", "luong.pt"))
	s, _ := openModel(t, "beam", false, func() (*builder.Model, error) {
		return attention.Beam(w, attention.DefaultSpecial, attention.BuildOptions{})
	})
	run := func(maxLen, k int64, alpha float64) (map[string]*onnxrun.Tensor, error) {
		return s.Run(map[string]*onnxrun.Tensor{
			attention.InSourceIDs:     onnxrun.NewInt64([]int64{2, 3}, []int64{5, 6, 7, 8, 9, 10}),
			attention.InSourceLengths: onnxrun.NewInt64([]int64{2}, []int64{3, 2}),
			attention.InMaxLen:        onnxrun.Scalar(maxLen),
			attention.InBeamSize:      onnxrun.Scalar(k),
			attention.InLengthPenalty: onnxrun.Scalar(alpha),
		})
	}
	one, err := run(8, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := one[attention.OutOutputIDs].Int64s()
	for _, k := range []int64{0, -3} {
		out, err := run(8, k, 1)
		if err != nil {
			t.Fatalf("K=%d: %v", k, err)
		}
		if got, _ := out[attention.OutOutputIDs].Int64s(); !slices.Equal(got, want) {
			t.Errorf("K=%d: %v, K=1 gives %v", k, got, want)
		}
	}
	if _, err := run(0, 4, 1); err == nil {
		t.Errorf("max_len 0 ran without an error")
	}
	for _, alpha := range []float64{math.NaN(), -1, math.Inf(1)} {
		if _, err := run(8, 4, alpha); err != nil {
			t.Errorf("length penalty %v: %v", alpha, err)
		}
	}
}
