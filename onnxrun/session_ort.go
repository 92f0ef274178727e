//go:build cgo

package onnxrun

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/attnx/attnx/onnxfile"
	ort "github.com/yalue/onnxruntime_go"
)

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
		s.ort.sess, err = create(false)
	case DeviceCUDA:
		s.device = DeviceCUDA
		s.ort.sess, err = create(true)
		if err != nil {
			return nil, &CUDAUnavailableError{Model: name, Err: err}
		}
	case DeviceAuto:
		s.device = DeviceCUDA
		s.ort.sess, err = create(true)
		if err != nil {
			s.notes = append(s.notes, fmt.Sprintf("CUDA unavailable (%v), using CPU", err))
			s.device = DeviceCPU
			s.ort.sess, err = create(false)
		}
	default:
		return nil, fmt.Errorf("onnxrun: unknown device %q: want %q, %q or %q", opt.Device, DeviceCPU, DeviceCUDA, DeviceAuto)
	}
	if err != nil {
		return nil, fmt.Errorf("onnxrun: creating session for %s: %w", name, err)
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
				return fmt.Errorf("onnxrun: %s: output %q is declared %s, and its shape does not follow from the declaration and the inputs' dimensions; "+
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
			return fmt.Errorf("onnxrun: %s: output %q (%s): %w", s.name, info.Name, info, err)
		}
		out[i] = v
	}
	if err := s.ort.sess.Run(in, out); err != nil {
		if len(guessed) > 0 {
			return fmt.Errorf("onnxrun: running %s: %w (float16/bfloat16 outputs were preallocated from their declared symbolic shapes: %s; "+
				"a declaration that does not hold makes ORT refuse the output)", s.name, err, strings.Join(guessed, ", "))
		}
		return fmt.Errorf("onnxrun: running %s: %w", s.name, err)
	}
	return nil
}

// runNoInputs runs a model without inputs: onnxruntime_go's Run cannot pass
// an empty input list, so bind preallocated outputs to an IoBinding.
func (s *Session) runNoInputs(out []ort.Value) error {
	b, err := s.ort.sess.CreateIoBinding()
	if err != nil {
		return fmt.Errorf("onnxrun: %s: creating IoBinding: %w", s.name, err)
	}
	defer b.Destroy()
	for i, info := range s.outputs {
		if info.Kind != "tensor" || !info.RankKnown || hasFreeDim(info.Shape) {
			return fmt.Errorf("onnxrun: %s has no inputs and its output %q is declared %s; "+
				"a model without inputs can only run when every output has a fully known shape (it must be preallocated)",
				s.name, info.Name, info)
		}
		v, err := newEmptyValue(info.Type, info.Shape)
		if err != nil {
			return fmt.Errorf("onnxrun: %s: output %q (%s): %w", s.name, info.Name, info, err)
		}
		out[i] = v
		if err := b.BindOutput(info.Name, v); err != nil {
			return fmt.Errorf("onnxrun: %s: binding output %q: %w", s.name, info.Name, err)
		}
	}
	if err := s.ort.sess.RunWithBinding(b); err != nil {
		return fmt.Errorf("onnxrun: running %s: %w", s.name, err)
	}
	return nil
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

func (s *Session) openORT(path string, data []byte, opt Options) (*Session, error) {
	name := s.name

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
			return nil, fmt.Errorf("onnxrun: %s: %w", name, oerr)
		}
		ins, outs, err = ort.GetInputOutputInfoWithOptions(path, infoOpts)
		infoOpts.Destroy()
	} else {
		ins, outs, err = ort.GetInputOutputInfoWithONNXData(data)
	}
	if err != nil {
		return nil, fmt.Errorf("onnxrun: loading %s: %w", name, err)
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

// HasORT reports whether this build can run ONNX Runtime (a build with
// cgo; the library is still loaded at run time, see Init).
const HasORT = true

// runDataORT is RunData on ONNX Runtime, the inputs checked.
func (s *Session) runDataORT(inputs map[string]Datum, symbols map[string]int64) (map[string]Datum, error) {
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
				return nil, fmt.Errorf("onnxrun: input %q: %w", info.Name, err)
			}
			in[i] = v
			elems = append(elems, e...)
		case *Tensor:
			v, err := NewValue(d)
			if err != nil {
				return nil, fmt.Errorf("onnxrun: input %q: %w", info.Name, err)
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
				return nil, fmt.Errorf("onnxrun: %s: output %q (%s): %w", s.name, info.Name, info, err)
			}
			res[info.Name] = sq
			continue
		}
		t, err := FromValue(out[i])
		if err != nil {
			return nil, fmt.Errorf("onnxrun: %s: output %q: %w", s.name, info.Name, err)
		}
		res[info.Name] = t
	}
	return res, nil
}

// ortState is a Session's ONNX Runtime session.
type ortState struct {
	sess *ort.DynamicAdvancedSession
}

func (s *Session) closeORT() error {
	if s.ort.sess == nil {
		return nil
	}
	if err := s.ort.sess.Destroy(); err != nil {
		return fmt.Errorf("onnxrun: closing session for %s: %w", s.name, err)
	}
	s.ort.sess = nil
	return nil
}
