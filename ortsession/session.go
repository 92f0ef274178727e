package ortsession

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/onnxfile"
	ort "github.com/yalue/onnxruntime_go"
)

// OptLevel is ONNX Runtime's graph optimisation level.
type OptLevel int

// The optimisation levels. The zero value, OptDefault, is ORT's default
// (all optimisations).
const (
	OptDefault OptLevel = iota
	OptDisable
	OptBasic
	OptExtended
	OptAll
)

// String returns "default", "disable", "basic", "extended" or "all".
func (l OptLevel) String() string {
	switch l {
	case OptDefault:
		return "default"
	case OptDisable:
		return "disable"
	case OptBasic:
		return "basic"
	case OptExtended:
		return "extended"
	case OptAll:
		return "all"
	}
	return "OptLevel(" + strconv.Itoa(int(l)) + ")"
}

// Device names accepted in Options.Device.
const (
	DeviceCPU  = "cpu"
	DeviceCUDA = "cuda"
	DeviceAuto = "auto"
)

// Options configures a Session. The zero value is a CPU session with ORT's
// default threads and optimisations and thread spinning disabled.
type Options struct {
	// IntraOpThreads is the size of the thread pool used inside one
	// operator; 0 leaves ORT's default (one per physical core).
	IntraOpThreads int
	// InterOpThreads is the size of the pool running independent operators
	// in parallel; 0 leaves ORT's default.
	InterOpThreads int
	// OptLevel is the graph optimisation level.
	OptLevel OptLevel
	// Device is "cpu" (or ""), "cuda" or "auto". "cuda" fails when the CUDA
	// execution provider cannot be used, saying why; "auto" then falls back
	// to CPU and records the reason in Session.Notes.
	Device string
	// CUDADeviceID selects the GPU for "cuda" and "auto".
	CUDADeviceID int
	// OptimizedModelPath, when set, makes ORT save the optimised graph there
	// when the session is created.
	OptimizedModelPath string
	// AllowSpinning keeps ORT's busy-waiting worker threads. By default
	// spinning is turned off ("session.intra_op.allow_spinning" and
	// "session.inter_op.allow_spinning" = "0"): on small machines, and with
	// several sessions or goroutines, spinning threads steal the CPU that
	// the other threads need.
	AllowSpinning bool
}

// IOInfo describes one model input or output.
type IOInfo struct {
	// Name is the graph input or output name.
	Name string
	// Kind is "tensor" or "sequence" (a sequence of tensors, which RunData
	// feeds and reads), or "map", "optional", ... for the kinds the package
	// does not support.
	Kind string
	// Type is the element type of a tensor, or of a sequence's tensors
	// (Undefined when the model file does not declare it).
	Type DType
	// Shape holds the dimensions; -1 where the dimension is not fixed.
	// It is nil when RankKnown is false.
	Shape []int64
	// DimNames holds the symbolic name of each dimension ("batch"), "" for
	// fixed or unnamed ones.
	DimNames []string
	// RankKnown is false when the model declares no shape at all.
	RankKnown bool
}

// String describes the declaration like "int64[batch,src_len]"; an unnamed
// free dimension prints as "?", an unknown rank as "[...]".
func (i IOInfo) String() string {
	if i.Kind == "sequence" {
		if i.Type == Undefined {
			return "seq(tensor)"
		}
		return "seq(" + i.Type.String() + ")"
	}
	if i.Kind != "tensor" {
		return i.Kind
	}
	if !i.RankKnown {
		return i.Type.String() + "[...]"
	}
	return i.Type.String() + formatDims(i.Shape, i.DimNames)
}

// Session is a loaded model ready to run. Run, RunValues and NewBinding are
// safe to call from many goroutines at once (ORT sessions allow concurrent
// runs); Close waits for runs in progress.
type Session struct {
	name    string // model path, or "model bytes"
	mu      sync.RWMutex
	closed  bool
	sess    *ort.DynamicAdvancedSession
	inputs  []IOInfo
	outputs []IOInfo
	device  string
	notes   []string

	bmu      sync.Mutex
	bindings map[*Binding]struct{}
}

// ErrClosed is returned by calls on a closed Session or Binding.
var ErrClosed = errors.New("ortsession: session is closed")

// Open loads the .onnx model at path (external data files are found
// relative to it). It calls Init first.
func Open(path string, opt Options) (*Session, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ortsession: opening model: %w", err)
	}
	return open(path, path, data, opt)
}

// OpenBytes loads a model from the bytes of an .onnx file. Models with
// external data must be loaded with Open.
func OpenBytes(data []byte, opt Options) (*Session, error) {
	return open("model bytes", "", data, opt)
}

func open(name, path string, data []byte, opt Options) (*Session, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("ortsession: %s: empty model", name)
	}
	s := &Session{name: name, bindings: map[*Binding]struct{}{}}

	// Inputs and outputs: from the file's own declarations when they say
	// everything (each a tensor of a declared element type: every model
	// attnx writes), so that ONNX Runtime parses the model once, for the
	// session itself; else from a throwaway session without optimisations.
	declIn, declOut, derr := onnxfile.ReadGraphIO(data)
	if derr == nil {
		if in, ok := fromDecls(declIn); ok {
			if out, ok := fromDecls(declOut); ok {
				s.inputs, s.outputs = in, out
				return s.create(name, path, data, opt)
			}
		}
	}
	var ins, outs []ort.InputOutputInfo
	var err error
	if path != "" {
		infoOpts, oerr := newSessionOptions(Options{IntraOpThreads: 1, InterOpThreads: 1, OptLevel: OptDisable}, false)
		if oerr != nil {
			return nil, fmt.Errorf("ortsession: %s: %w", name, oerr)
		}
		ins, outs, err = ort.GetInputOutputInfoWithOptions(path, infoOpts)
		infoOpts.Destroy()
	} else {
		ins, outs, err = ort.GetInputOutputInfoWithONNXData(data)
	}
	if err != nil {
		return nil, fmt.Errorf("ortsession: loading %s: %w", name, err)
	}
	// ORT reports symbolic dimensions as -1 without their names, and an
	// absent shape like a rank-0 one: the file's own declarations say which.
	decls := map[string]onnxfile.ValueType{}
	for _, d := range append(declIn, declOut...) {
		decls[d.Name] = d.Type
	}
	s.inputs = describe(ins, decls, derr == nil)
	s.outputs = describe(outs, decls, derr == nil)
	return s.create(name, path, data, opt)
}

// fromDecls describes declared inputs or outputs as ONNX Runtime would,
// when each is a tensor of a declared element type; ok is false otherwise
// (ONNX Runtime is asked then). An output dimension the file leaves
// symbolic stays so, even where ONNX Runtime's inference would fix it.
func fromDecls(decls []onnxfile.ValueInfo) (infos []IOInfo, ok bool) {
	infos = make([]IOInfo, len(decls))
	for i, d := range decls {
		if d.Type.Kind != onnxfile.KindTensor || d.Type.Elem == builder.Undefined {
			return nil, false
		}
		io := IOInfo{Name: d.Name, Kind: "tensor", Type: DType(d.Type.Elem), RankKnown: d.Type.Shape != nil}
		if io.RankKnown {
			io.Shape = make([]int64, len(d.Type.Shape))
			io.DimNames = make([]string, len(d.Type.Shape))
			for j, dim := range d.Type.Shape {
				io.Shape[j] = dim.Value
				if dim.Value < 0 {
					io.Shape[j], io.DimNames[j] = -1, dim.Param
				}
			}
		}
		infos[i] = io
	}
	return infos, true
}

// create makes s's ONNX Runtime session, on the device opt asks for, from
// s.inputs and s.outputs.
func (s *Session) create(name, path string, data []byte, opt Options) (*Session, error) {
	var err error
	inNames, outNames := names(s.inputs), names(s.outputs)
	create := func(cuda bool) (*ort.DynamicAdvancedSession, error) {
		so, err := newSessionOptions(opt, cuda)
		if err != nil {
			return nil, err
		}
		defer so.Destroy()
		if path != "" {
			return ort.NewDynamicAdvancedSession(path, inNames, outNames, so)
		}
		return ort.NewDynamicAdvancedSessionWithONNXData(data, inNames, outNames, so)
	}

	switch opt.Device {
	case "", DeviceCPU:
		s.device = DeviceCPU
		s.sess, err = create(false)
	case DeviceCUDA:
		s.device = DeviceCUDA
		s.sess, err = create(true)
		if err != nil {
			return nil, &CUDAUnavailableError{Model: name, Err: err}
		}
	case DeviceAuto:
		s.device = DeviceCUDA
		s.sess, err = create(true)
		if err != nil {
			s.notes = append(s.notes, fmt.Sprintf("CUDA unavailable (%v), using CPU", err))
			s.device = DeviceCPU
			s.sess, err = create(false)
		}
	default:
		return nil, fmt.Errorf("ortsession: unknown device %q: want %q, %q or %q", opt.Device, DeviceCPU, DeviceCUDA, DeviceAuto)
	}
	if err != nil {
		return nil, fmt.Errorf("ortsession: creating session for %s: %w", name, err)
	}
	return s, nil
}

func newSessionOptions(opt Options, cuda bool) (*ort.SessionOptions, error) {
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("creating session options: %w", err)
	}
	fail := func(what string, err error) (*ort.SessionOptions, error) {
		so.Destroy()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if opt.IntraOpThreads < 0 || opt.InterOpThreads < 0 {
		return fail("thread counts", fmt.Errorf("IntraOpThreads=%d InterOpThreads=%d: want >= 0", opt.IntraOpThreads, opt.InterOpThreads))
	}
	if opt.IntraOpThreads > 0 {
		if err := so.SetIntraOpNumThreads(opt.IntraOpThreads); err != nil {
			return fail("setting IntraOpThreads", err)
		}
	}
	if opt.InterOpThreads > 0 {
		if err := so.SetInterOpNumThreads(opt.InterOpThreads); err != nil {
			return fail("setting InterOpThreads", err)
		}
	}
	if !opt.AllowSpinning {
		for _, k := range []string{"session.intra_op.allow_spinning", "session.inter_op.allow_spinning"} {
			if err := so.AddSessionConfigEntry(k, "0"); err != nil {
				return fail("setting "+k, err)
			}
		}
	}
	level := map[OptLevel]ort.GraphOptimizationLevel{
		OptDefault:  ort.GraphOptimizationLevelEnableAll,
		OptDisable:  ort.GraphOptimizationLevelDisableAll,
		OptBasic:    ort.GraphOptimizationLevelEnableBasic,
		OptExtended: ort.GraphOptimizationLevelEnableExtended,
		OptAll:      ort.GraphOptimizationLevelEnableAll,
	}
	lv, ok := level[opt.OptLevel]
	if !ok {
		return fail("optimisation level", fmt.Errorf("unknown OptLevel %d", int(opt.OptLevel)))
	}
	if err := so.SetGraphOptimizationLevel(lv); err != nil {
		return fail("setting optimisation level "+opt.OptLevel.String(), err)
	}
	if opt.OptimizedModelPath != "" {
		if err := so.SetOptimizedModelFilePath(opt.OptimizedModelPath); err != nil {
			return fail("setting OptimizedModelPath "+opt.OptimizedModelPath, err)
		}
	}
	if cuda {
		co, err := ort.NewCUDAProviderOptions()
		if err != nil {
			return fail("creating CUDA provider options", err)
		}
		defer co.Destroy()
		if opt.CUDADeviceID != 0 {
			if err := co.Update(map[string]string{"device_id": strconv.Itoa(opt.CUDADeviceID)}); err != nil {
				return fail("setting CUDA device_id", err)
			}
		}
		if err := so.AppendExecutionProviderCUDA(co); err != nil {
			return fail("adding the CUDA execution provider", err)
		}
	}
	return so, nil
}

// describe turns ORT's view of inputs/outputs into IOInfos, adding the
// symbolic names and shape presence that the model file declares (decls,
// by name; haveDecls is false when the file could not be read for them).
func describe(infos []ort.InputOutputInfo, decls map[string]onnxfile.ValueType, haveDecls bool) []IOInfo {
	out := make([]IOInfo, len(infos))
	for i, in := range infos {
		io := IOInfo{Name: in.Name, Kind: onnxTypeName(in.OrtValueType)}
		d, ok := decls[in.Name]
		if in.OrtValueType == ort.ONNXTypeTensor || in.OrtValueType == ort.ONNXTypeSparseTensor {
			io.Type = DType(in.DataType)
			switch {
			case ok:
				io.RankKnown = d.Shape != nil
			case haveDecls:
				io.RankKnown = true // ORT knows more than the file (should not happen)
			default:
				io.RankKnown = len(in.Dimensions) > 0 // cannot tell rank 0 from unknown
			}
			if io.RankKnown {
				io.Shape = append([]int64{}, in.Dimensions...)
				io.DimNames = make([]string, len(io.Shape))
				if ok && len(d.Shape) == len(io.Shape) {
					for j, dim := range d.Shape {
						if io.Shape[j] < 0 {
							io.DimNames[j] = dim.Param
						}
					}
				}
			}
		}
		if in.OrtValueType == ort.ONNXTypeSequence {
			if elem, isTensors := d.TensorElem(); isTensors {
				io.Type = DType(elem)
			}
		}
		out[i] = io
	}
	return out
}

func names(infos []IOInfo) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.Name
	}
	return out
}

// Inputs returns the model's inputs in graph order (initializers excluded).
func (s *Session) Inputs() []IOInfo { return cloneInfos(s.inputs) }

// Outputs returns the model's outputs in graph order.
func (s *Session) Outputs() []IOInfo { return cloneInfos(s.outputs) }

func cloneInfos(in []IOInfo) []IOInfo {
	out := make([]IOInfo, len(in))
	for i, x := range in {
		x.Shape = append([]int64(nil), x.Shape...)
		x.DimNames = append([]string(nil), x.DimNames...)
		out[i] = x
	}
	return out
}

// Device returns the device the session runs on: "cpu" or "cuda". With
// Device "auto" it says which one was chosen.
func (s *Session) Device() string { return s.device }

// Notes returns what the session wants its user to know about how it was
// set up, e.g. "CUDA unavailable (...), using CPU" after an "auto" fallback.
func (s *Session) Notes() []string { return append([]string(nil), s.notes...) }

// Close releases the ORT session and every Binding made from it. It waits
// for runs in progress. Calling it again does nothing and returns nil.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.bmu.Lock()
	for b := range s.bindings {
		b.release()
	}
	s.bindings = nil
	s.bmu.Unlock()
	if err := s.sess.Destroy(); err != nil {
		return fmt.Errorf("ortsession: closing session for %s: %w", s.name, err)
	}
	s.sess = nil
	return nil
}

// Run runs the model on inputs, keyed by input name, and returns every
// output keyed by output name. Before running, each input is checked against
// the model's declaration: no missing or unknown names, the declared element
// type and rank, fixed dimensions equal, symbolic dimensions consistent
// across inputs, and data length equal to the shape's element count. Input
// data is read in place; outputs own new slices.
//
// Models without inputs run through an IoBinding with preallocated outputs,
// which needs every output's shape to be fully declared. Outputs of rank 0
// are preallocated too (onnxruntime_go cannot read them back otherwise); an
// output whose shape the model does not declare at all and that turns out to
// be rank 0 cannot be read and gives an error.
//
// float16 and bfloat16 outputs are preallocated as well (onnxruntime_go
// v1.27.0 truncates the ones ORT allocates), with their declared shape and
// the symbolic dimensions the inputs fix; an output whose shape does not
// follow from those is an error. Rank-0 and empty float16/bfloat16 tensors
// cannot be fed or read.
//
// Models with sequence inputs or outputs must use RunData.
func (s *Session) Run(inputs map[string]*Tensor) (map[string]*Tensor, error) {
	for _, info := range s.outputs {
		if info.Kind == "sequence" {
			return nil, fmt.Errorf("ortsession: %s: output %q is a %s, which Run cannot return; use RunData", s.name, info.Name, info)
		}
	}
	in := make(map[string]Datum, len(inputs))
	for name, t := range inputs {
		in[name] = t
	}
	out, err := s.RunData(in)
	if err != nil {
		return nil, err
	}
	res := make(map[string]*Tensor, len(out))
	for name, d := range out {
		res[name] = d.(*Tensor)
	}
	return res, nil
}

// RunData is Run for models with sequences: inputs map each input name to
// a *Tensor or, for an input the model declares as a sequence of tensors, a
// *Sequence; outputs come back the same way (a *Sequence for each sequence
// output). A sequence input is checked to be non-empty (onnxruntime_go
// cannot create an empty one) and to hold valid tensors of the declared
// element type; element shapes are not checked. Everything Run says about
// tensors holds here too.
func (s *Session) RunData(inputs map[string]Datum) (map[string]Datum, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	symbols, err := s.check(inputs)
	if err != nil {
		return nil, err
	}
	in := make([]ort.Value, len(s.inputs))
	out := make([]ort.Value, len(s.outputs))
	var elems []ort.Value // elements of input sequences, released after them
	// One deferred closure, so that it sees the elements appended below (a
	// deferred destroyAll(elems) would see the nil slice of this line).
	defer func() {
		destroyAll(out)
		destroyAll(in)
		destroyAll(elems)
	}()
	for i, info := range s.inputs {
		switch d := inputs[info.Name].(type) {
		case *Sequence:
			v, e, err := newSequenceValue(d)
			if err != nil {
				return nil, fmt.Errorf("ortsession: input %q: %w", info.Name, err)
			}
			in[i] = v
			elems = append(elems, e...)
		case *Tensor:
			v, err := NewValue(d)
			if err != nil {
				return nil, fmt.Errorf("ortsession: input %q: %w", info.Name, err)
			}
			in[i] = v
		}
	}
	if len(in) == 0 {
		if err := s.runNoInputs(out); err != nil {
			return nil, err
		}
	} else if err := s.runWithInputs(in, out, symbols); err != nil {
		return nil, err
	}
	res := make(map[string]Datum, len(out))
	for i, info := range s.outputs {
		if seq, ok := out[i].(*ort.Sequence); ok {
			sq, err := sequenceFromValue(seq)
			if err != nil {
				return nil, fmt.Errorf("ortsession: %s: output %q (%s): %w", s.name, info.Name, info, err)
			}
			res[info.Name] = sq
			continue
		}
		t, err := FromValue(out[i])
		if err != nil {
			return nil, fmt.Errorf("ortsession: %s: output %q: %w", s.name, info.Name, err)
		}
		res[info.Name] = t
	}
	return res, nil
}

// isHalf reports whether an output is a float16 or bfloat16 tensor, which
// must be preallocated: onnxruntime_go v1.27.0 truncates ORT-allocated ones
// to half their bytes.
func isHalf(info IOInfo) bool {
	return info.Kind == "tensor" && (info.Type == Float16 || info.Type == BFloat16)
}

// runWithInputs runs the model on in, preallocating the outputs that must
// be: rank-0 ones, and float16/bfloat16 ones. The shape of a float16 or
// bfloat16 output comes from its declaration, with symbolic dimensions taken
// from the inputs (symbols). onnxruntime_go v1.27.0 cannot return one that
// ORT allocates (it copies one byte per element and then fails), and the
// shape is lost with it, so an output whose shape cannot be resolved before
// running is an error.
func (s *Session) runWithInputs(in, out []ort.Value, symbols map[string]int64) error {
	var guessed []string // outputs whose shapes came from symbols
	for i, info := range s.outputs {
		var shape []int64
		switch {
		case isHalf(info):
			sh, fromSymbols, ok := resolveShape(info, symbols)
			if !ok {
				return fmt.Errorf("ortsession: %s: output %q is declared %s, and its shape does not follow from the declaration and the inputs' dimensions; "+
					"%s outputs must be preallocated with their exact shape (onnxruntime_go v1.27.0 cannot read the ones ORT allocates)",
					s.name, info.Name, info, info.Type)
			}
			if fromSymbols {
				guessed = append(guessed, fmt.Sprintf("%q as %s", info.Name, info.Type.String()+formatDims(sh, nil)))
			}
			shape = sh
		case info.Kind == "tensor" && info.RankKnown && len(info.Shape) == 0:
		default:
			continue
		}
		v, err := newEmptyValue(info.Type, shape)
		if err != nil {
			return fmt.Errorf("ortsession: %s: output %q (%s): %w", s.name, info.Name, info, err)
		}
		out[i] = v
	}
	if err := s.sess.Run(in, out); err != nil {
		if len(guessed) > 0 {
			return fmt.Errorf("ortsession: running %s: %w (float16/bfloat16 outputs were preallocated from their declared symbolic shapes: %s; "+
				"a declaration that does not hold makes ORT refuse the output)", s.name, err, strings.Join(guessed, ", "))
		}
		return fmt.Errorf("ortsession: running %s: %w", s.name, err)
	}
	return nil
}

// resolveShape returns an output's shape from its declaration, with
// symbolic dimensions looked up in symbols. ok is false when the rank is
// unknown or a dimension is neither fixed nor a known symbol; fromSymbols
// says that some dimension came from symbols.
func resolveShape(info IOInfo, symbols map[string]int64) (shape []int64, fromSymbols, ok bool) {
	if !info.RankKnown {
		return nil, false, false
	}
	shape = make([]int64, len(info.Shape))
	for j, d := range info.Shape {
		if d >= 0 {
			shape[j] = d
			continue
		}
		v, known := symbols[info.DimNames[j]]
		if info.DimNames[j] == "" || !known {
			return nil, false, false
		}
		shape[j], fromSymbols = v, true
	}
	return shape, fromSymbols, true
}

// runNoInputs runs a model without inputs: onnxruntime_go's Run cannot pass
// an empty input list, so bind preallocated outputs to an IoBinding.
func (s *Session) runNoInputs(out []ort.Value) error {
	b, err := s.sess.CreateIoBinding()
	if err != nil {
		return fmt.Errorf("ortsession: %s: creating IoBinding: %w", s.name, err)
	}
	defer b.Destroy()
	for i, info := range s.outputs {
		if info.Kind != "tensor" || !info.RankKnown || hasFreeDim(info.Shape) {
			return fmt.Errorf("ortsession: %s has no inputs and its output %q is declared %s; "+
				"a model without inputs can only run when every output has a fully known shape (it must be preallocated)",
				s.name, info.Name, info)
		}
		v, err := newEmptyValue(info.Type, info.Shape)
		if err != nil {
			return fmt.Errorf("ortsession: %s: output %q (%s): %w", s.name, info.Name, info, err)
		}
		out[i] = v
		if err := b.BindOutput(info.Name, v); err != nil {
			return fmt.Errorf("ortsession: %s: binding output %q: %w", s.name, info.Name, err)
		}
	}
	if err := s.sess.RunWithBinding(b); err != nil {
		return fmt.Errorf("ortsession: running %s: %w", s.name, err)
	}
	return nil
}

func hasFreeDim(shape []int64) bool {
	for _, d := range shape {
		if d < 0 {
			return true
		}
	}
	return false
}

// destroyHook, when set (by tests), sees every value destroyAll releases.
var destroyHook func(ort.Value)

// destroyAll releases every value of vs and clears the slice.
func destroyAll(vs []ort.Value) {
	for i, v := range vs {
		if !isNilValue(v) {
			if destroyHook != nil {
				destroyHook(v)
			}
			v.Destroy()
		}
		vs[i] = nil
	}
}

// isNilValue reports whether v is nil, or a nil pointer in a non-nil
// interface: onnxruntime_go can store one as an output when it fails to
// wrap a value that ORT made (e.g. NewCustomDataTensor refusing an empty
// tensor returns a nil *CustomDataTensor with its error).
func isNilValue(v ort.Value) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// check validates caller tensors against the declared inputs, and returns
// the value of every symbolic dimension the inputs fix.
func (s *Session) check(inputs map[string]Datum) (map[string]int64, error) {
	var unknown []string
	for name := range inputs {
		if s.inputIndex(name) < 0 {
			unknown = append(unknown, strconv.Quote(name))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("ortsession: %s: unknown input %s; the model's inputs are %s",
			s.name, strings.Join(unknown, ", "), s.describeInputs())
	}
	var missing []string
	for _, info := range s.inputs {
		if _, ok := inputs[info.Name]; !ok {
			missing = append(missing, fmt.Sprintf("%q (%s)", info.Name, info))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("ortsession: %s: missing input %s; the model's inputs are %s",
			s.name, strings.Join(missing, ", "), s.describeInputs())
	}
	symbols := map[string]string{} // dim name -> "value (from input X)"
	symVals := map[string]int64{}
	for _, info := range s.inputs {
		d := inputs[info.Name]
		if info.Kind == "sequence" {
			seq, ok := d.(*Sequence)
			if !ok {
				return nil, fmt.Errorf("ortsession: %s: input %q: got %s, model expects a %s: pass a *Sequence (to RunData)", s.name, info.Name, describeDatum(d), info)
			}
			if err := checkSequence(info, seq); err != nil {
				return nil, fmt.Errorf("ortsession: %s: %w", s.name, err)
			}
			continue
		}
		t, ok := d.(*Tensor)
		if !ok && d != nil {
			return nil, fmt.Errorf("ortsession: %s: input %q: got %s, model expects %s", s.name, info.Name, describeDatum(d), info)
		}
		if err := checkTensor(info, t); err != nil {
			return nil, fmt.Errorf("ortsession: %s: %w", s.name, err)
		}
		for j, n := range info.DimNames {
			if n == "" {
				continue
			}
			if v, ok := symVals[n]; ok && v != t.Shape[j] {
				return nil, fmt.Errorf("ortsession: %s: input %q: got %s, model expects %s: dimension %d (%s) is %d, but %s",
					s.name, info.Name, t, info, j, n, t.Shape[j], symbols[n])
			} else if !ok {
				symVals[n] = t.Shape[j]
				symbols[n] = fmt.Sprintf("input %q has %s=%d", info.Name, n, t.Shape[j])
			}
		}
	}
	return symVals, nil
}

// describeDatum is d.String(), or "nil" for a nil interface.
func describeDatum(d Datum) string {
	if d == nil {
		return "nil"
	}
	return d.String()
}

// checkTensor validates one caller tensor against its declaration; the
// error names the input, what it got and what the model expects.
func checkTensor(info IOInfo, t *Tensor) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("input %q: got %s, model expects %s: %s", info.Name, t, info, fmt.Sprintf(format, a...))
	}
	if t == nil {
		return fmt.Errorf("input %q: nil tensor, model expects %s", info.Name, info)
	}
	if info.Kind != "tensor" {
		return fmt.Errorf("input %q: model expects a %s, which runtime does not support (tensors only)", info.Name, info.Kind)
	}
	if t.DType() == Undefined {
		return bad("unsupported data type %T (supported: %s)", t.Data, supportedData)
	}
	if t.DType() != info.Type {
		return bad("element type %s, want %s", t.DType(), info.Type)
	}
	n, err := builder.ElementCount(t.Shape)
	if err != nil {
		return bad("%v", err)
	}
	if info.RankKnown {
		if len(t.Shape) != len(info.Shape) {
			return bad("rank %d, want %d", len(t.Shape), len(info.Shape))
		}
		for j, d := range info.Shape {
			if d >= 0 && t.Shape[j] != d {
				return bad("dimension %d is %d, want %d", j, t.Shape[j], d)
			}
		}
	}
	if int64(t.Len()) != n {
		return bad("shape holds %d elements but data has %d", n, t.Len())
	}
	return nil
}

func (s *Session) inputIndex(name string) int {
	for i, in := range s.inputs {
		if in.Name == name {
			return i
		}
	}
	return -1
}

func (s *Session) outputIndex(name string) int {
	for i, o := range s.outputs {
		if o.Name == name {
			return i
		}
	}
	return -1
}

func (s *Session) describeInputs() string {
	if len(s.inputs) == 0 {
		return "(none)"
	}
	parts := make([]string, len(s.inputs))
	for i, in := range s.inputs {
		parts[i] = fmt.Sprintf("%q %s", in.Name, in)
	}
	return strings.Join(parts, ", ")
}

// CUDAUnavailableError is a session asked for on DeviceCUDA where CUDA
// cannot be used. Its remedy, choosing the CPU or falling back to it, is
// worded by each surface in its own terms (Remedy).
type CUDAUnavailableError struct {
	// Model names the model the session was for.
	Model string
	// Err is ONNX Runtime's error.
	Err error
}

// Remedy returns the error's message with the remedy named by the caller
// ("pass --device cpu, or --device auto to fall back to the CPU", say).
func (e *CUDAUnavailableError) Remedy(remedy string) string {
	return fmt.Sprintf("%s: the cuda device was asked for but CUDA cannot be used (ONNX Runtime %s at %s): %v; "+
		"the ONNX Runtime that scripts/install-deps.sh installs is CPU-only, CUDA needs a GPU build with its CUDA provider library, CUDA and cuDNN; %s",
		e.Model, Version(), LibraryPath(), e.Err, remedy)
}

// Error returns the message with the remedy in the terms of Options.
func (e *CUDAUnavailableError) Error() string {
	return "ortsession: " + e.Remedy(fmt.Sprintf("use Device %q, or %q to fall back to CPU", DeviceCPU, DeviceAuto))
}

// Unwrap returns ONNX Runtime's error.
func (e *CUDAUnavailableError) Unwrap() error { return e.Err }
