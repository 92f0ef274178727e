// Package onnxrun runs ONNX models: on ONNX Runtime (backend "ort",
// through github.com/yalue/onnxruntime_go over ONNX Runtime 1.24.x's
// shared library) or on attnx's native Go evaluator (backend "go", package
// onnxeval), chosen per session with Options.Backend. The library is the
// file Options.ORTLibrary or $ATTNX_ORT_LIB names, else the first found
// beside the executable, through the dynamic loader (an install in
// /usr/local/lib after ldconfig), in the usual system directories, or in
// the .deps/ of an attnx checkout (make deps); Init lists the order, and
// its error, when none is found, what to install. In a build without cgo (CGO_ENABLED=0) the
// ONNX Runtime files are left out: the package then has the native backend
// alone, DefaultBackend is "go", and asking for "ort" is ErrNoORT.
//
// The high-level path is Open (or OpenBytes) and Session.Run with Go-owned
// Tensors keyed by name; Run checks every input against the model's
// declaration and reports mismatches as
//
//	input "source_ids": got float32[2,5], model expects int64[batch,src_len]: element type float32, want int64
//
// Tensors hold Go slices of every ONNX numeric type, bools and strings;
// float16 and bfloat16 are []F16 and []BF16 bit patterns (F16From, BF16From
// and Tensor.AsFloat32 convert). On ONNX Runtime those two must be
// preallocated as outputs, which Run does from the declared shapes (see
// Session.Run); the native backend holds neither, nor strings.
//
// Models with sequence inputs or outputs (seq(tensor(T))) run through
// Session.RunData on ONNX Runtime, which takes and returns Datum values: a
// *Tensor, or a *Sequence of tensors for what the model declares as a
// sequence. Element types are checked against the declaration;
// onnxruntime_go v1.27.0 cannot create empty input sequences nor read
// float16/bfloat16 elements of output sequences (see Sequence).
//
// The low-level path, for decode loops that run the same shapes many times,
// is a Binding: caller-owned tensors bound once (BindInputTensor,
// BindOutputTensor) and run again and again with their data changed in
// place; on ONNX Runtime it is an IoBinding over views of the tensors'
// slices, and the ORT-only RunValues and BindInput/BindOutput take ORT
// values directly.
//
// Sessions are safe for concurrent use. Every ORT object the package makes is
// released by Session.Close or Binding.Close, or, for per-call tensors,
// before Run returns.
package onnxrun
