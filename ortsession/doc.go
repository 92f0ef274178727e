// Package runtime runs ONNX models through ONNX Runtime, using
// github.com/yalue/onnxruntime_go over the shared library that
// scripts/install-deps.sh installs (.deps/onnxruntime/lib/libonnxruntime.so.1,
// ONNX Runtime 1.24.1, CPU only) or the one $ATTNX_ORT_LIB names.
//
// The high-level path is Open (or OpenBytes) and Session.Run with Go-owned
// Tensors keyed by name; Run checks every input against the model's
// declaration and reports mismatches as
//
//	input "source_ids": got float32[2,5], model expects int64[batch,src_len]: element type float32, want int64
//
// Tensors hold Go slices of every ONNX numeric type, bools and strings;
// float16 and bfloat16 are []F16 and []BF16 bit patterns (F16From, BF16From
// and Tensor.AsFloat32 convert). Those two must be preallocated as outputs,
// which Run does from the declared shapes (see Session.Run).
//
// Models with sequence inputs or outputs (seq(tensor(T))) run through
// Session.RunData, which takes and returns Datum values: a *Tensor, or a
// *Sequence of tensors for what the model declares as a sequence. Element
// types are checked against the declaration; onnxruntime_go v1.27.0 cannot
// create empty input sequences nor read float16/bfloat16 elements of output
// sequences (see Sequence).
//
// The low-level path, for decode loops that run the same shapes many times,
// is Session.RunValues or a Binding over caller-owned, reused ORT values.
//
// Sessions are safe for concurrent use. Every ORT object the package makes is
// released by Session.Close or Binding.Close, or, for per-call tensors,
// before Run returns.
package ortsession
