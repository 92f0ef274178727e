// Package conformance runs the ONNX backend test data (model.onnx plus
// test_data_set_N/input_N.pb and output_N.pb, as Debian's libonnx-testdata
// installs under /usr/share/libonnx-testdata/data) through attnx: each model
// is loaded with package onnxfile, re-serialized, checked to decode equal to
// the original, and run through package onnxrun (ONNX Runtime) on every
// data set; outputs are compared with package compare.
//
// Sequences of tensors are fed and read (input_N.pb / output_N.pb then hold
// a SequenceProto) and compared element by element.
//
// Some cases fail with ONNX Runtime itself (no kernel for an old opset,
// results that differ from the reference, random outputs) or cannot run
// through the Go binding (optionals, empty sequences). They are named, with
// the stage at which they fail and why, in an expected-failure list made
// independently of this package: internal/conformance/expected/gen.mjs runs every
// case through ONNX Runtime's Node.js binding (`make conformance-expected`),
// and the list is built into attnx. A case then
//
//   - passes: it runs and every output matches;
//   - fails: it errors or mismatches and is not on the list, or fails at
//     another stage than the list says (an attnx bug, or a changed ORT);
//   - is an expected failure: it is on the list and fails at that stage;
//   - is unexpectedly passing: it is on the list but passes. This counts
//     as a failure of the run, as in ONNX Runtime's own backend test
//     runner, so that the list cannot rot: regenerate it.
package conformance

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
)

// DefaultRoot is where Debian's libonnx-testdata installs the backend tests.
const DefaultRoot = "/usr/share/libonnx-testdata/data"

// DefaultFolders are the folders of DefaultRoot that hold test cases.
var DefaultFolders = []string{"node", "pytorch-converted", "pytorch-operator", "simple"}

// Status is a case's verdict.
type Status string

// The verdicts.
const (
	// Passed: every output matches.
	Passed Status = "passed"
	// Failed: the case errors or mismatches and the expected-failure list
	// does not excuse it.
	Failed Status = "failed"
	// ExpectedFailure: the case fails at the stage its entry names.
	ExpectedFailure Status = "expected-failure"
	// UnexpectedlyPassing: the case passes but is on the list; the run
	// fails until the list is regenerated.
	UnexpectedlyPassing Status = "unexpectedly-passing"
	// NotImplemented (native backend): the model uses an operator the
	// native evaluator does not implement.
	NotImplemented Status = "not-implemented"
	// Unsupported (native backend): the evaluator implements the
	// operators but refuses this use of one (an attribute value, an
	// element type) when loading the model.
	Unsupported Status = "unsupported"
)

// Options configures Run. Zero fields take the defaults noted.
type Options struct {
	// Workers is the number of cases run at once (default 2).
	Workers int
	// Timeout bounds one case (default 2 minutes); a case that takes
	// longer fails.
	Timeout time.Duration
	// RTol and ATol are the float tolerances (default 1e-3 and 1e-7, as
	// the ONNX backend tests use). Integers, bools and strings compare
	// exactly.
	RTol, ATol float64
	// Match, when set, runs only the cases whose name matches.
	Match *regexp.Regexp
	// Expected is the expected-failure list; nil means the built-in one
	// (BuiltinExpectations). Entries are matched by case name
	// ("node/test_abs"), wherever the case directory is.
	Expected *Expectations
	// Progress, when set, is called after each case finishes.
	Progress func(done, total int, r CaseResult)
	// Backend is the engine that runs the models: "ort" (ONNX Runtime,
	// judged against the expected-failure list) or "go" (or "",
	// onnxrun.DefaultBackend: attnx's native evaluator; cases using an
	// operator it does not implement are NotImplemented, cases using an
	// unsupported variant of one it implements are Unsupported, every
	// other case must pass; the report counts them by operator).
	Backend string
}

// Case is one backend test: a directory with model.onnx and data sets.
type Case struct {
	// Name is "folder/test_name", such as "node/test_abs".
	Name string
	// Folder is the group the case belongs to ("node").
	Folder string
	// Dir is the case directory.
	Dir string
}

// CaseResult is the outcome of one case.
type CaseResult struct {
	Name   string `json:"name"`
	Folder string `json:"folder"`
	Status Status `json:"status"`
	// Stage is where the case failed; empty when it passed.
	Stage Stage `json:"stage,omitempty"`
	// Reason says why the case failed, or why it is unexpectedly passing.
	Reason string `json:"reason,omitempty"`
	// Expected is the case's entry in the expected-failure list, when it
	// has one that applies here.
	Expected *Expectation `json:"expected,omitempty"`
	// Note adds what the verdict alone does not say (an entry not applied
	// here, a random output that matched by chance).
	Note string `json:"note,omitempty"`
	// MaxAbsErr is the largest absolute error over the float outputs
	// compared.
	MaxAbsErr float64 `json:"max_abs_err"`
	// RoundTripEqual reports that the re-serialized model decodes equal
	// (onnxfile.Equal) to the original.
	RoundTripEqual bool `json:"round_trip_equal"`
	// DataSets is the number of test_data_set_N directories.
	DataSets int `json:"data_sets"`
	// Seconds is the wall time of the case.
	Seconds float64 `json:"seconds"`
	// Ops lists the operators the model uses and MissingOps those the
	// native evaluator lacks (native backend only).
	Ops        []string `json:"ops,omitempty"`
	MissingOps []string `json:"missing_ops,omitempty"`
}

// Report is the outcome of a run.
type Report struct {
	// Backend is the engine that ran the models ("ort" or "go").
	Backend             string `json:"backend"`
	Total               int    `json:"total"`
	Passed              int    `json:"passed"`
	Failed              int    `json:"failed"`
	ExpectedFailures    int    `json:"expected_failures"`
	UnexpectedlyPassing int    `json:"unexpectedly_passing"`
	// NotImplemented and Unsupported count the native backend's cases
	// with an operator it lacks, or a use of one it refuses.
	NotImplemented int `json:"not_implemented,omitempty"`
	Unsupported    int `json:"unsupported,omitempty"`
	// Ops counts the native backend's cases by operator.
	Ops []OpCount `json:"ops,omitempty"`
	// RoundTripEqual counts the models whose re-serialization decodes
	// equal to the original.
	RoundTripEqual int `json:"round_trip_equal"`
	// ORTVersion is the ONNX Runtime that ran the models.
	ORTVersion string `json:"ort_version"`
	// ExpectedList describes the expected-failure list checked against.
	ExpectedList ListInfo     `json:"expected_list"`
	Seconds      float64      `json:"seconds"`
	Cases        []CaseResult `json:"cases"`
}

// OK reports whether the run succeeded: no case failed and none is
// unexpectedly passing.
func (r *Report) OK() bool { return r.Failed == 0 && r.UnexpectedlyPassing == 0 }

// ListInfo describes an expected-failure list in a report.
type ListInfo struct {
	Source  string `json:"source"`
	Entries int    `json:"entries"`
	// Header is the list's leading comment: how and when it was made.
	Header []string `json:"header,omitempty"`
}

// Discover lists the cases under root, which may be a case directory
// (holding model.onnx), a folder of cases (node/), or a folder of such
// folders (the data root). Cases are sorted by name.
func Discover(root string) ([]Case, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("conformance: %s is not a directory", root)
	}
	if isCase(root) {
		dir := filepath.Clean(root)
		folder := filepath.Base(filepath.Dir(dir))
		return []Case{{Name: folder + "/" + filepath.Base(dir), Folder: folder, Dir: dir}}, nil
	}
	var cases []Case
	add := func(folderDir string) error {
		ents, err := os.ReadDir(folderDir)
		if err != nil {
			return fmt.Errorf("conformance: %w", err)
		}
		folder := filepath.Base(filepath.Clean(folderDir))
		for _, e := range ents {
			d := filepath.Join(folderDir, e.Name())
			if e.IsDir() && isCase(d) {
				cases = append(cases, Case{Name: folder + "/" + e.Name(), Folder: folder, Dir: d})
			}
		}
		return nil
	}
	if err := add(root); err != nil {
		return nil, err
	}
	if len(cases) == 0 {
		ents, err := os.ReadDir(root)
		if err != nil {
			return nil, fmt.Errorf("conformance: %w", err)
		}
		for _, e := range ents {
			if e.IsDir() {
				if err := add(filepath.Join(root, e.Name())); err != nil {
					return nil, err
				}
			}
		}
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("conformance: no test cases (directories with model.onnx) under %s", root)
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].Name < cases[j].Name })
	return cases, nil
}

// DiscoverDefault lists the cases of DefaultFolders under DefaultRoot.
func DiscoverDefault() ([]Case, error) {
	var all []Case
	for _, f := range DefaultFolders {
		cs, err := Discover(filepath.Join(DefaultRoot, f))
		if err != nil {
			return nil, fmt.Errorf("%w (install Debian's libonnx-testdata, or name a directory)", err)
		}
		all = append(all, cs...)
	}
	return all, nil
}

func isCase(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "model.onnx"))
	return err == nil && st.Mode().IsRegular()
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.RTol == 0 && o.ATol == 0 {
		o.RTol, o.ATol = 1e-3, 1e-7
	}
	return o
}

// Run runs the cases with opt.Workers in parallel and judges them against
// the expected-failure list. It fails only when ONNX Runtime cannot be
// loaded at all or the built-in list does not parse.
func Run(cases []Case, opt Options) (*Report, error) {
	opt = opt.withDefaults()
	native := onnxrun.BackendFor(opt.Backend, "") == onnxrun.BackendGo
	if err := onnxrun.Ready(opt.Backend); err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	if opt.Expected == nil {
		x, err := BuiltinExpectations()
		if err != nil {
			return nil, err
		}
		opt.Expected = x
	}
	if native {
		opt.Expected = backendIndependent(opt.Expected)
	}
	if opt.Match != nil {
		var keep []Case
		for _, c := range cases {
			if opt.Match.MatchString(c.Name) {
				keep = append(keep, c)
			}
		}
		cases = keep
	}
	// Each case's entry, when the list has one that applies here.
	expect := make([]*Expectation, len(cases))
	notes := make([]string, len(cases))
	var conds conditions
	for i, c := range cases {
		if e, ok := opt.Expected.Entries[c.Name]; ok {
			if applies, why := conds.applies(e); applies {
				expect[i] = &e
			} else {
				notes[i] = why
			}
		}
	}
	start := time.Now()
	results := make([]CaseResult, len(cases))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for w := 0; w < opt.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := runGuarded(cases[i], opt)
				r.Expected, r.Note = expect[i], notes[i]
				judge(&r, r.Expected)
				if native {
					judgeNative(&r, cases[i])
				}
				results[i] = r
				if opt.Progress != nil {
					mu.Lock()
					done++
					opt.Progress(done, len(cases), results[i])
					mu.Unlock()
				}
			}
		}()
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()
	rep := &Report{Total: len(cases), Cases: results, Backend: onnxrun.BackendORT, ORTVersion: onnxrun.Version(), Seconds: time.Since(start).Seconds(),
		ExpectedList: ListInfo{Source: opt.Expected.Source, Entries: len(opt.Expected.Entries), Header: opt.Expected.Header}}
	for _, r := range results {
		switch r.Status {
		case Passed:
			rep.Passed++
		case Failed:
			rep.Failed++
		case ExpectedFailure:
			rep.ExpectedFailures++
		case UnexpectedlyPassing:
			rep.UnexpectedlyPassing++
		case NotImplemented:
			rep.NotImplemented++
		case Unsupported:
			rep.Unsupported++
		}
		if r.RoundTripEqual {
			rep.RoundTripEqual++
		}
	}
	if native {
		rep.Backend, rep.ORTVersion = onnxrun.BackendGo, ""
		rep.Ops = opCounts(results)
	}
	return rep, nil
}

// runGuarded runs one case with a timeout and turns a panic into a failure.
// A case that times out is abandoned (ORT calls cannot be interrupted).
func runGuarded(c Case, opt Options) CaseResult {
	start := time.Now()
	ch := make(chan CaseResult, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- CaseResult{Name: c.Name, Folder: c.Folder, Stage: StagePanic, Reason: fmt.Sprintf("panic: %v", p)}
			}
		}()
		ch <- runCase(c, opt)
	}()
	timer := time.NewTimer(opt.Timeout)
	defer timer.Stop()
	var r CaseResult
	select {
	case r = <-ch:
	case <-timer.C:
		r = CaseResult{Name: c.Name, Folder: c.Folder, Stage: StageTimeout, Reason: fmt.Sprintf("timed out after %v", opt.Timeout)}
	}
	r.Seconds = math.Round(time.Since(start).Seconds()*1000) / 1000
	return r
}

// dataSet is one test_data_set_N: inputs and expected outputs by name.
type dataSet struct {
	dir     string
	inputs  map[string]onnxrun.Datum
	outputs []namedTensor
}

// namedTensor is an expected output: a tensor t, or, when isSeq, the
// sequence of tensors seq.
type namedTensor struct {
	name  string
	t     *builder.Tensor
	seq   []*builder.Tensor
	isSeq bool
}

// runCase runs one case; it leaves Stage empty when the case passed, and
// otherwise sets Stage and Reason. The verdict is judge's.
func runCase(c Case, opt Options) CaseResult {
	r := CaseResult{Name: c.Name, Folder: c.Folder}
	fail := func(stage Stage, format string, a ...any) CaseResult {
		r.Stage, r.Reason = stage, fmt.Sprintf(format, a...)
		return r
	}
	modelPath := filepath.Join(c.Dir, "model.onnx")
	orig, err := onnxfile.Load(modelPath)
	if err != nil {
		return fail(StageExport, "%v", err)
	}
	b, err := onnxfile.MarshalProto(orig)
	if err != nil {
		return fail(StageExport, "export cannot re-serialize the model: %v", err)
	}
	back, err := onnxfile.LoadBytes(b)
	if err != nil {
		return fail(StageExport, "the re-serialized model does not load: %v", err)
	}
	if !onnxfile.Equal(orig, back) {
		return fail(StageExport, "the re-serialized model decodes differently from %s", modelPath)
	}
	r.RoundTripEqual = true

	ins, outs := onnxfile.GraphIO(orig)
	for _, v := range outs {
		if dt, ok := v.Type.TensorElem(); ok && v.Type.Kind == onnxfile.KindSequence {
			switch dt {
			case builder.Float16, builder.BFloat16:
				return fail(StageFeed, "output %q is a sequence of %s tensors; onnxruntime_go v1.27.0 truncates the %s tensors ORT allocates, and sequence elements cannot be preallocated", v.Name, dt, dt)
			}
		}
	}
	for i, v := range append(append([]onnxfile.ValueInfo{}, ins...), outs...) {
		if why := unsupported(v.Type); why != "" {
			kind := "output"
			if i < len(ins) {
				kind = "input"
			}
			return fail(StageFeed, "%s %q is %s, which the Go binding cannot feed or read (tensors and sequences of tensors only)", kind, v.Name, why)
		}
	}
	sets, err := loadDataSets(c.Dir, ins, outs)
	if err != nil {
		return fail(StageData, "cannot read the test data: %v", err)
	}
	r.DataSets = len(sets)
	if len(sets) == 0 {
		return fail(StageData, "no test_data_set_N directories in %s", c.Dir)
	}
	for _, s := range sets {
		for name, d := range s.inputs {
			ts := []*onnxrun.Tensor{}
			switch d := d.(type) {
			case *onnxrun.Tensor:
				ts = append(ts, d)
			case *onnxrun.Sequence:
				if d.Len() == 0 {
					return fail(StageFeed, "input %q is an empty sequence in %s, which onnxruntime_go v1.27.0 cannot create", name, filepath.Base(s.dir))
				}
				ts = d.Tensors
			}
			for _, t := range ts {
				if _, ok := t.Data.([]string); ok && len(t.Shape) == 0 {
					return fail(StageFeed, "input %q is or holds a rank-0 string tensor, which onnxruntime_go cannot create", name)
				}
			}
		}
	}
	maxErr, ferr := runSets(b, sets, opt)
	r.MaxAbsErr = maxErr
	if ferr != nil {
		return fail(ferr.stage, "%v", ferr.err)
	}
	return r
}

// stageError is a failure at a stage.
type stageError struct {
	stage Stage
	err   error
}

// session is what runSets needs of a runtime session.
type session interface {
	RunData(inputs map[string]onnxrun.Datum) (map[string]onnxrun.Datum, error)
	Close() error
}

// openSession opens a model for runSets; tests substitute a faulty runtime
// to check that its bugs are counted as failures.
var openSession = func(data []byte, opt onnxrun.Options) (session, error) {
	return onnxrun.OpenBytes(data, opt)
}

// runSets opens the model from data and runs every data set, returning
// the largest absolute float error and the first failure: a session error
// (StageLoad), a run error (StageRun) or a missing or different output
// (StageCompare).
func runSets(data []byte, sets []dataSet, opt Options) (float64, *stageError) {
	sess, err := openSession(data, onnxrun.Options{Backend: opt.Backend, IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		return 0, &stageError{StageLoad, oneLine(err)}
	}
	defer sess.Close()
	maxErr := 0.0
	for _, s := range sets {
		got, err := sess.RunData(s.inputs)
		if err != nil {
			return maxErr, &stageError{StageRun, fmt.Errorf("%s: %w", filepath.Base(s.dir), oneLine(err))}
		}
		for i, want := range s.outputs {
			g, ok := got[want.name]
			if !ok {
				return maxErr, &stageError{StageCompare, fmt.Errorf("%s: no output %q", filepath.Base(s.dir), want.name)}
			}
			e, err := compareDatum(g, want, opt)
			if e > maxErr {
				maxErr = e
			}
			if err != nil {
				return maxErr, &stageError{StageCompare, fmt.Errorf("%s: output %d %q: %w", filepath.Base(s.dir), i, want.name, err)}
			}
		}
	}
	return maxErr, nil
}

// oneLine shortens an ORT error to its first line.
func oneLine(err error) error {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return errors.New(msg)
}

// unsupported says why the runtime binding cannot handle a value of type
// t, or returns "".
func unsupported(t onnxfile.ValueType) string {
	switch t.Kind {
	case onnxfile.KindSequence:
		if t.Inner == nil || t.Inner.Kind != onnxfile.KindTensor {
			return "a sequence of non-tensors"
		}
		if why := unsupported(*t.Inner); why != "" {
			return "a sequence of " + strings.TrimPrefix(why, "a ")
		}
		return ""
	case onnxfile.KindOptional:
		return "an optional"
	case onnxfile.KindMap:
		return "a map"
	case onnxfile.KindSparseTensor:
		return "a sparse tensor"
	case onnxfile.KindTensor:
		switch t.Elem {
		case builder.Complex64, builder.Complex128:
			return "a " + t.Elem.String() + " tensor"
		}
	}
	return ""
}

// loadDataSets reads every test_data_set_N of dir: input_K.pb feeds the
// K-th non-initializer graph input, output_K.pb is the K-th output.
func loadDataSets(dir string, ins, outs []onnxfile.ValueInfo) ([]dataSet, error) {
	dirs, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	sort.Strings(dirs)
	var sets []dataSet
	for _, d := range dirs {
		s := dataSet{dir: d, inputs: map[string]onnxrun.Datum{}}
		for k := 0; ; k++ {
			p := filepath.Join(d, fmt.Sprintf("input_%d.pb", k))
			if _, err := os.Stat(p); err != nil {
				break
			}
			if k >= len(ins) {
				return nil, fmt.Errorf("%s: more input files than the model's %d inputs", p, len(ins))
			}
			if isSequence(ins[k]) {
				bts, err := onnxfile.ReadSequenceProto(p)
				if err != nil {
					return nil, err
				}
				seq := onnxrun.NewSequence()
				for i, bt := range bts {
					bfloat16Bits(bt, ins[k])
					rt, err := onnxrun.FromBuilder(bt)
					if err != nil {
						return nil, fmt.Errorf("%s: element %d: %w", p, i, err)
					}
					seq.Tensors = append(seq.Tensors, rt)
				}
				s.inputs[ins[k].Name] = seq
				continue
			}
			bt, err := onnxfile.ReadTensorProto(p)
			if err != nil {
				return nil, err
			}
			bfloat16Bits(bt, ins[k])
			rt, err := onnxrun.FromBuilder(bt)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			s.inputs[ins[k].Name] = rt
		}
		for k := 0; ; k++ {
			p := filepath.Join(d, fmt.Sprintf("output_%d.pb", k))
			if _, err := os.Stat(p); err != nil {
				break
			}
			if k >= len(outs) {
				return nil, fmt.Errorf("%s: more output files than the model's %d outputs", p, len(outs))
			}
			if isSequence(outs[k]) {
				bts, err := onnxfile.ReadSequenceProto(p)
				if err != nil {
					return nil, err
				}
				for _, bt := range bts {
					bfloat16Bits(bt, outs[k])
				}
				s.outputs = append(s.outputs, namedTensor{name: outs[k].Name, seq: bts, isSeq: true})
				continue
			}
			bt, err := onnxfile.ReadTensorProto(p)
			if err != nil {
				return nil, err
			}
			bfloat16Bits(bt, outs[k])
			s.outputs = append(s.outputs, namedTensor{name: outs[k].Name, t: bt})
		}
		sets = append(sets, s)
	}
	return sets, nil
}

// bfloat16Bits retypes a uint16 test tensor as bfloat16 when the model
// declares v as bfloat16: numpy has no bfloat16, so the ONNX test generator
// wrote bfloat16 data as UINT16 tensors of the same bits (as in
// node/test_cast_BFLOAT16_to_FLOAT, whose input 16117 is 0x3ef5, bfloat16
// 0.4785, the expected output).
func bfloat16Bits(t *builder.Tensor, v onnxfile.ValueInfo) {
	if elem, ok := v.Type.TensorElem(); ok && t.DType == builder.Uint16 && elem == builder.BFloat16 {
		t.DType = builder.BFloat16
	}
}

// isSequence reports whether v is declared as a sequence (of tensors, the
// only kind unsupported lets through).
func isSequence(v onnxfile.ValueInfo) bool {
	return v.Type.Kind == onnxfile.KindSequence
}
