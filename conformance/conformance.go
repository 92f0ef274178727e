// Package conformance runs the ONNX backend test data (model.onnx plus
// test_data_set_N/input_N.pb and output_N.pb, as Debian's libonnx-testdata
// installs under /usr/share/libonnx-testdata/data) through attnx: each model
// is loaded with package export, re-serialized, checked to decode equal to
// the original, and run through package runtime (ONNX Runtime) on every
// data set; outputs are compared with package compare.
//
// A case whose round-tripped model fails or mismatches is run again from
// the original file: when ONNX Runtime fails the same way there, the case
// is "skipped" with ORT's message (ORT's limitation, not attnx's); when only
// the round trip fails, it is "failed" (an attnx bug). Sequences of tensors
// are fed and read (input_N.pb / output_N.pb then hold a SequenceProto) and
// compared element by element. Cases with types the runtime binding cannot
// feed or read (optionals, maps, sequences of anything but tensors, complex,
// empty input sequences, float16/bfloat16 output sequences) are skipped
// with that reason.
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
	"github.com/attnx/attnx/export"
	"github.com/attnx/attnx/runtime"
)

// DefaultRoot is where Debian's libonnx-testdata installs the backend tests.
const DefaultRoot = "/usr/share/libonnx-testdata/data"

// DefaultFolders are the folders of DefaultRoot that hold test cases.
var DefaultFolders = []string{"node", "pytorch-converted", "pytorch-operator", "simple"}

// Status is a case's verdict.
type Status string

// The verdicts.
const (
	Passed  Status = "passed"
	Failed  Status = "failed"
	Skipped Status = "skipped"
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
	// Strict counts every case whose round-tripped model errors or
	// mismatches as failed, without running the original file to excuse
	// it (so a corrupted expected output fails).
	Strict bool
	// Progress, when set, is called after each case finishes.
	Progress func(done, total int, r CaseResult)
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
	// Group is a short reason shared by similar cases, for summaries.
	Group string `json:"group,omitempty"`
	// Reason says why the case failed or was skipped.
	Reason string `json:"reason,omitempty"`
	// MaxAbsErr is the largest absolute error over the float outputs of
	// every data set of the round-tripped model's run.
	MaxAbsErr float64 `json:"max_abs_err"`
	// RoundTripEqual reports that the re-serialized model decodes equal
	// (export.Equal) to the original.
	RoundTripEqual bool `json:"round_trip_equal"`
	// RanOriginal reports that the original file was run through ORT too.
	RanOriginal bool `json:"ran_original,omitempty"`
	// DataSets is the number of test_data_set_N directories.
	DataSets int `json:"data_sets"`
	// Seconds is the wall time of the case.
	Seconds float64 `json:"seconds"`
}

// Report is the outcome of a run.
type Report struct {
	Total   int `json:"total"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	// RoundTripEqual counts the models whose re-serialization decodes
	// equal to the original.
	RoundTripEqual int `json:"round_trip_equal"`
	// OriginalRuns counts the cases that were also run from the original
	// file, because the round-tripped model failed or mismatched.
	OriginalRuns int `json:"original_runs"`
	// ORTVersion is the ONNX Runtime that ran the models.
	ORTVersion string       `json:"ort_version"`
	Seconds    float64      `json:"seconds"`
	Cases      []CaseResult `json:"cases"`
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

// Run runs the cases with opt.Workers in parallel and returns the report.
// It fails only when ONNX Runtime cannot be loaded at all.
func Run(cases []Case, opt Options) (*Report, error) {
	opt = opt.withDefaults()
	if err := runtime.Init(); err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
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
				results[i] = runGuarded(cases[i], opt)
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
	rep := &Report{Total: len(cases), Cases: results, ORTVersion: runtime.Version(), Seconds: time.Since(start).Seconds()}
	for _, r := range results {
		switch r.Status {
		case Passed:
			rep.Passed++
		case Failed:
			rep.Failed++
		case Skipped:
			rep.Skipped++
		}
		if r.RoundTripEqual {
			rep.RoundTripEqual++
		}
		if r.RanOriginal {
			rep.OriginalRuns++
		}
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
				ch <- CaseResult{Name: c.Name, Folder: c.Folder, Status: Failed, Group: "panic", Reason: fmt.Sprintf("panic: %v", p)}
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
		r = CaseResult{Name: c.Name, Folder: c.Folder, Status: Failed, Group: "timed out",
			Reason: fmt.Sprintf("timed out after %v", opt.Timeout)}
	}
	r.Seconds = math.Round(time.Since(start).Seconds()*1000) / 1000
	return r
}

// dataSet is one test_data_set_N: inputs and expected outputs by name.
type dataSet struct {
	dir     string
	inputs  map[string]runtime.Datum
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

func runCase(c Case, opt Options) CaseResult {
	r := CaseResult{Name: c.Name, Folder: c.Folder}
	fail := func(group, format string, a ...any) CaseResult {
		r.Status, r.Group, r.Reason = Failed, group, fmt.Sprintf(format, a...)
		return r
	}
	skip := func(group, format string, a ...any) CaseResult {
		r.Status, r.Group, r.Reason = Skipped, group, fmt.Sprintf(format, a...)
		return r
	}
	modelPath := filepath.Join(c.Dir, "model.onnx")
	orig, err := export.Load(modelPath)
	if err != nil {
		return fail("export cannot load the model", "%v", err)
	}
	b, err := export.MarshalProto(orig)
	if err != nil {
		return fail("export cannot re-serialize the model", "%v", err)
	}
	back, err := export.LoadBytes(b)
	if err != nil {
		return fail("re-serialized model does not load", "%v", err)
	}
	if !export.Equal(orig, back) {
		return fail("round trip changed the model", "the re-serialized model decodes differently from %s", modelPath)
	}
	r.RoundTripEqual = true

	ins, outs := export.GraphIO(orig)
	for _, v := range outs {
		if dt, ok := v.Type.TensorElem(); ok && v.Type.Kind == export.KindSequence {
			switch dt {
			case builder.Float16, builder.BFloat16:
				return skip("runtime cannot read "+dt.String()+" sequence elements", "output %q is a sequence of %s tensors; onnxruntime_go v1.27.0 truncates the %s tensors ORT allocates, and sequence elements cannot be preallocated", v.Name, dt, dt)
			}
		}
	}
	for i, v := range append(append([]export.ValueInfo{}, ins...), outs...) {
		if why := unsupported(v.Type); why != "" {
			kind := "output"
			if i < len(ins) {
				kind = "input"
			}
			return skip("runtime cannot feed or read "+why, "%s %q is %s, which the runtime binding cannot feed or read (tensors of numbers, bools and strings only)", kind, v.Name, why)
		}
	}
	sets, err := loadDataSets(c.Dir, ins, outs)
	if err != nil {
		return fail("cannot read test data", "%v", err)
	}
	r.DataSets = len(sets)
	if len(sets) == 0 {
		return skip("no test data sets", "no test_data_set_N directories in %s", c.Dir)
	}
	for _, s := range sets {
		for name, d := range s.inputs {
			ts := []*runtime.Tensor{}
			switch d := d.(type) {
			case *runtime.Tensor:
				ts = append(ts, d)
			case *runtime.Sequence:
				if d.Len() == 0 {
					return skip("runtime cannot feed an empty sequence", "input %q is an empty sequence in %s, which onnxruntime_go v1.27.0 cannot create", name, filepath.Base(s.dir))
				}
				ts = d.Tensors
			}
			for _, t := range ts {
				if _, ok := t.Data.([]string); ok && len(t.Shape) == 0 {
					return skip("runtime cannot feed rank-0 strings", "input %q is or holds a rank-0 string tensor, which onnxruntime_go cannot create", name)
				}
			}
		}
	}

	maxErr, rtErr := runSets(b, "", sets, opt)
	r.MaxAbsErr = maxErr
	if rtErr == nil {
		r.Status = Passed
		return r
	}
	if opt.Strict {
		var ce *caseError
		group := "fails"
		if errors.As(rtErr, &ce) {
			group = ce.group
		}
		return fail(group, "%v", rtErr)
	}
	// The round-tripped model failed: does ORT fail on the original too?
	r.RanOriginal = true
	_, origErr := runSets(nil, modelPath, sets, opt)
	if origErr == nil {
		return fail("only the round-tripped model fails", "%v (the original file passes)", rtErr)
	}
	group := "ORT fails on the original file too: " + classify(origErr)
	return skip(group, "ONNX Runtime fails on the original file too: %v", origErr)
}

// classify names the kind of an ORT failure, for grouping skipped cases.
func classify(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "layout == 1") || strings.Contains(msg, "Batchwise recurrent"):
		return "RNN/GRU/LSTM with layout=1 is not supported"
	case strings.Contains(msg, "Could not find an implementation for"):
		return "no kernel for this operator version or type"
	case strings.Contains(msg, "is not a registered function/op"):
		return "operator not implemented (training/preview domain)"
	case strings.Contains(msg, "locale"):
		return "StringNormalizer cannot create its locale"
	case strings.Contains(msg, ", model expects "):
		return "test data does not fit the model's declared inputs"
	}
	var ce *caseError
	if errors.As(err, &ce) {
		return ce.group
	}
	return "error"
}

// caseError is an error with a group for summaries.
type caseError struct {
	group string
	err   error
}

func (e *caseError) Error() string { return e.err.Error() }
func (e *caseError) Unwrap() error { return e.err }

// runSets opens the model (from data, or from path when data is nil) and
// runs every data set, returning the largest absolute float error and the
// first failure: a session error, a run error or a mismatch.
func runSets(data []byte, path string, sets []dataSet, opt Options) (float64, error) {
	ropt := runtime.Options{IntraOpThreads: 1, InterOpThreads: 1}
	var sess *runtime.Session
	var err error
	if data != nil {
		sess, err = runtime.OpenBytes(data, ropt)
	} else {
		sess, err = runtime.Open(path, ropt)
	}
	if err != nil {
		return 0, &caseError{"ORT rejects the model", oneLine(err)}
	}
	defer sess.Close()
	maxErr := 0.0
	for _, s := range sets {
		got, err := sess.RunData(s.inputs)
		if err != nil {
			return maxErr, &caseError{"ORT fails running the model", fmt.Errorf("%s: %w", filepath.Base(s.dir), oneLine(err))}
		}
		for i, want := range s.outputs {
			g, ok := got[want.name]
			if !ok {
				return maxErr, &caseError{"missing output", fmt.Errorf("%s: no output %q", filepath.Base(s.dir), want.name)}
			}
			e, err := compareDatum(g, want, opt)
			if e > maxErr {
				maxErr = e
			}
			if err != nil {
				return maxErr, &caseError{"outputs differ from the expected ones", fmt.Errorf("%s: output %d %q: %w", filepath.Base(s.dir), i, want.name, err)}
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
func unsupported(t export.ValueType) string {
	switch t.Kind {
	case export.KindSequence:
		if t.Inner == nil || t.Inner.Kind != export.KindTensor {
			return "a sequence of non-tensors"
		}
		if why := unsupported(*t.Inner); why != "" {
			return "a sequence of " + strings.TrimPrefix(why, "a ")
		}
		return ""
	case export.KindOptional:
		return "an optional"
	case export.KindMap:
		return "a map"
	case export.KindSparseTensor:
		return "a sparse tensor"
	case export.KindTensor:
		switch t.Elem {
		case builder.Complex64, builder.Complex128:
			return "a " + t.Elem.String() + " tensor"
		}
	}
	return ""
}

// loadDataSets reads every test_data_set_N of dir: input_K.pb feeds the
// K-th non-initializer graph input, output_K.pb is the K-th output.
func loadDataSets(dir string, ins, outs []export.ValueInfo) ([]dataSet, error) {
	dirs, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	sort.Strings(dirs)
	var sets []dataSet
	for _, d := range dirs {
		s := dataSet{dir: d, inputs: map[string]runtime.Datum{}}
		for k := 0; ; k++ {
			p := filepath.Join(d, fmt.Sprintf("input_%d.pb", k))
			if _, err := os.Stat(p); err != nil {
				break
			}
			if k >= len(ins) {
				return nil, fmt.Errorf("%s: more input files than the model's %d inputs", p, len(ins))
			}
			if isSequence(ins[k]) {
				bts, err := export.ReadSequenceProto(p)
				if err != nil {
					return nil, err
				}
				seq := runtime.NewSequence()
				for i, bt := range bts {
					bfloat16Bits(bt, ins[k])
					rt, err := runtime.FromBuilder(bt)
					if err != nil {
						return nil, fmt.Errorf("%s: element %d: %w", p, i, err)
					}
					seq.Tensors = append(seq.Tensors, rt)
				}
				s.inputs[ins[k].Name] = seq
				continue
			}
			bt, err := export.ReadTensorProto(p)
			if err != nil {
				return nil, err
			}
			bfloat16Bits(bt, ins[k])
			rt, err := runtime.FromBuilder(bt)
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
				bts, err := export.ReadSequenceProto(p)
				if err != nil {
					return nil, err
				}
				for _, bt := range bts {
					bfloat16Bits(bt, outs[k])
				}
				s.outputs = append(s.outputs, namedTensor{name: outs[k].Name, seq: bts, isSeq: true})
				continue
			}
			bt, err := export.ReadTensorProto(p)
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
func bfloat16Bits(t *builder.Tensor, v export.ValueInfo) {
	if elem, ok := v.Type.TensorElem(); ok && t.DType == builder.Uint16 && elem == builder.BFloat16 {
		t.DType = builder.BFloat16
	}
}

// isSequence reports whether v is declared as a sequence (of tensors, the
// only kind unsupported lets through).
func isSequence(v export.ValueInfo) bool {
	return v.Type.Kind == export.KindSequence
}
