package onnxrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/onnxeval"
	"github.com/attnx/attnx/onnxfile"
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

// Ready reports whether backend ("" for DefaultBackend) can run models:
// for ONNX Runtime it loads the library (Init); the native backend is
// always ready.
func Ready(backend string) error {
	switch backend {
	case "":
		return Ready(DefaultBackend)
	case BackendORT:
		return Init()
	case BackendGo:
		return nil
	}
	return fmt.Errorf("onnxrun: unknown backend %q: want %q or %q", backend, BackendORT, BackendGo)
}

// Backends accepted in Options.Backend.
const (
	BackendORT = "ort"
	BackendGo  = "go"
)

// DefaultBackend is the backend of Options{} on the CPU: the native
// evaluator, in every build. ONNX Runtime serves Device "cuda" (and
// "auto" when it finds CUDA) unless Backend says otherwise, and any
// device with Backend "ort".
const DefaultBackend = BackendGo

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
	// Backend is the engine that runs the model: "ort" (ONNX Runtime) or
	// "go" (attnx's native evaluator, package onnxeval,
	// which needs no cgo and no shared library; it runs on the CPU, with
	// IntraOpThreads goroutines per product, and ignores the other
	// ORT-specific options). "" is DefaultBackend.
	Backend string
	// ORTLibrary is the ONNX Runtime shared library file to load
	// (libonnxruntime.so.1 of release 1.24.x), before $ATTNX_ORT_LIB and
	// the search Init makes; "" searches. A process loads one library:
	// the first session on ONNX Runtime loads it, and a later session
	// naming another file fails. The native backend ignores it.
	ORTLibrary string
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
	backend string
	ort     ortState        // the ONNX Runtime session (backend "ort")
	native  *onnxeval.Model // the native evaluator (backend "go")
	inputs  []IOInfo
	outputs []IOInfo
	device  string
	notes   []string

	bmu      sync.Mutex
	bindings map[*Binding]struct{}
}

// ErrClosed is returned by calls on a closed Session or Binding.
var ErrClosed = errors.New("onnxrun: session is closed")

// Open loads the .onnx model at path (external data files are found
// relative to it). It calls Init first.
func Open(path string, opt Options) (*Session, error) {
	s, note := openAuto(path, path, nil, opt)
	if s != nil {
		return s, nil
	}
	if opt.backend() == BackendGo {
		s, err := openNative(path, path, nil, opt) // it reads the file itself
		return s.noted(note), err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("onnxrun: opening model: %w", err)
	}
	return open(path, path, data, opt)
}

// OpenBytes loads a model from the bytes of an .onnx file. Models with
// external data must be loaded with Open.
func OpenBytes(data []byte, opt Options) (*Session, error) {
	return open("model bytes", "", data, opt)
}

func open(name, path string, data []byte, opt Options) (*Session, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("onnxrun: %s: empty model", name)
	}
	s, note := openAuto(name, path, data, opt)
	if s != nil {
		return s, nil
	}
	switch backend := opt.backend(); backend {
	case BackendORT:
		if err := initLibrary(opt.ORTLibrary); err != nil {
			return nil, err
		}
		s := &Session{name: name, backend: BackendORT, bindings: map[*Binding]struct{}{}}
		return s.openORT(path, data, opt)
	case BackendGo:
		s, err := openNative(name, path, data, opt)
		return s.noted(note), err
	}
	return nil, fmt.Errorf("onnxrun: unknown backend %q: want %q or %q", opt.Backend, BackendORT, BackendGo)
}

// openAuto settles Device "auto" with no Backend: ONNX Runtime on CUDA
// when this build has ONNX Runtime and it finds CUDA. Otherwise it returns
// no session and, for "auto", a note saying why: the caller opens the
// model on the native backend (the CPU), as for Device "cpu".
func openAuto(name, path string, data []byte, opt Options) (*Session, string) {
	if opt.Backend != "" || opt.Device != DeviceAuto {
		return nil, ""
	}
	if !HasORT {
		return nil, "CUDA unavailable (this build has no ONNX Runtime), using the native backend on the CPU"
	}
	if err := initLibrary(opt.ORTLibrary); err != nil {
		return nil, fmt.Sprintf("CUDA unavailable (%v), using the native backend on the CPU", err)
	}
	cuda := opt
	cuda.Backend, cuda.Device = BackendORT, DeviceCUDA
	var s *Session
	var err error
	if data == nil {
		s, err = Open(path, cuda)
	} else {
		s, err = open(name, path, data, cuda)
	}
	if err != nil {
		return nil, fmt.Sprintf("CUDA unavailable (%v), using the native backend on the CPU", err)
	}
	return s, ""
}

// noted adds note (when not "") to s's notes; s may be nil.
func (s *Session) noted(note string) *Session {
	if s != nil && note != "" {
		s.notes = append(s.notes, note)
	}
	return s
}

// BackendFor is the backend that Options with backend and device run on:
// backend, or for "" ONNX Runtime when the device is CUDA (in a build
// that has it) and DefaultBackend otherwise (Device "auto" tries CUDA
// first when opening).
func BackendFor(backend, device string) string {
	switch {
	case backend != "":
		return backend
	case device == DeviceCUDA && HasORT:
		return BackendORT
	}
	return DefaultBackend
}

// backend is the backend o asks for (BackendFor).
func (o Options) backend() string { return BackendFor(o.Backend, o.Device) }

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

// Close releases the session (ONNX Runtime's, or the native evaluator's
// model with its idle buffers and its hold on the kernels' goroutines) and
// every Binding made from it. It waits for runs in progress. Calling it
// again does nothing and returns nil.
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
	if s.native != nil {
		err := s.native.Close() // its idle buffers, its hold on the kernels' goroutines
		s.native = nil
		return err
	}
	return s.closeORT()
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
	return s.RunContext(context.Background(), inputs)
}

// RunContext is Run until ctx is done. The native backend stops before its
// next node or Loop iteration and returns ctx's error, so a deadline stops
// a whole-decode graph (greedy.onnx, beam.onnx) in the middle; ONNX Runtime
// runs to the end once started (ctx is checked before).
func (s *Session) RunContext(ctx context.Context, inputs map[string]*Tensor) (map[string]*Tensor, error) {
	for _, info := range s.outputs {
		if info.Kind == "sequence" {
			return nil, fmt.Errorf("onnxrun: %s: output %q is a %s, which Run cannot return; use RunData", s.name, info.Name, info)
		}
	}
	in := make(map[string]Datum, len(inputs))
	for name, t := range inputs {
		in[name] = t
	}
	out, err := s.runData(ctx, in)
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
	return s.runData(context.Background(), inputs)
}

func (s *Session) runData(ctx context.Context, inputs map[string]Datum) (map[string]Datum, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	symbols, err := s.check(inputs)
	if err != nil {
		return nil, err
	}
	if s.native != nil {
		return s.runNative(ctx, inputs)
	}
	return s.runDataORT(inputs, symbols)
}

// isHalf reports whether an output is a float16 or bfloat16 tensor, which
// must be preallocated: onnxruntime_go v1.27.0 truncates ORT-allocated ones
// to half their bytes.
func isHalf(info IOInfo) bool {
	return info.Kind == "tensor" && (info.Type == Float16 || info.Type == BFloat16)
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

func hasFreeDim(shape []int64) bool {
	for _, d := range shape {
		if d < 0 {
			return true
		}
	}
	return false
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
		return nil, fmt.Errorf("onnxrun: %s: unknown input %s; the model's inputs are %s",
			s.name, strings.Join(unknown, ", "), s.describeInputs())
	}
	var missing []string
	for _, info := range s.inputs {
		if _, ok := inputs[info.Name]; !ok {
			missing = append(missing, fmt.Sprintf("%q (%s)", info.Name, info))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("onnxrun: %s: missing input %s; the model's inputs are %s",
			s.name, strings.Join(missing, ", "), s.describeInputs())
	}
	symbols := map[string]string{} // dim name -> "value (from input X)"
	symVals := map[string]int64{}
	for _, info := range s.inputs {
		d := inputs[info.Name]
		if info.Kind == "sequence" {
			seq, ok := d.(*Sequence)
			if !ok {
				return nil, fmt.Errorf("onnxrun: %s: input %q: got %s, model expects a %s: pass a *Sequence (to RunData)", s.name, info.Name, describeDatum(d), info)
			}
			if err := checkSequence(info, seq); err != nil {
				return nil, fmt.Errorf("onnxrun: %s: %w", s.name, err)
			}
			continue
		}
		t, ok := d.(*Tensor)
		if !ok && d != nil {
			return nil, fmt.Errorf("onnxrun: %s: input %q: got %s, model expects %s", s.name, info.Name, describeDatum(d), info)
		}
		if err := checkTensor(info, t); err != nil {
			return nil, fmt.Errorf("onnxrun: %s: %w", s.name, err)
		}
		for j, n := range info.DimNames {
			if n == "" {
				continue
			}
			if v, ok := symVals[n]; ok && v != t.Shape[j] {
				return nil, fmt.Errorf("onnxrun: %s: input %q: got %s, model expects %s: dimension %d (%s) is %d, but %s",
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
	return "onnxrun: " + e.Remedy(fmt.Sprintf("use Device %q, or %q to fall back to CPU", DeviceCPU, DeviceAuto))
}

// Unwrap returns ONNX Runtime's error.
func (e *CUDAUnavailableError) Unwrap() error { return e.Err }
