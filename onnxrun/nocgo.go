//go:build !cgo

package onnxrun

import "fmt"

// ErrNoORT is returned when an ONNX Runtime session is asked of an attnx
// built without cgo (CGO_ENABLED=0): that build carries only the native
// backend.
var ErrNoORT error = noORTError{}

type noORTError struct{}

// Error says that ONNX Runtime is missing from this build, and what to do.
func (noORTError) Error() string {
	return "onnxrun: this attnx was built without cgo (CGO_ENABLED=0), so ONNX Runtime is unavailable; use the native backend (--backend go, Options.Backend \"go\") or build with cgo"
}

// NativeOnly tells the tests' helpers (internal/testenv) that the build
// has the native backend alone, which every session then uses by default.
func (noORTError) NativeOnly() bool { return true }

// HasORT reports whether this build can run ONNX Runtime: not without cgo.
const HasORT = false

// Init reports that ONNX Runtime cannot be loaded in a build without cgo.
func Init() error { return ErrNoORT }

// initLibrary is Init: no library can be loaded without cgo.
func initLibrary(string) error { return ErrNoORT }

// LibraryPath returns "": no ONNX Runtime library is loaded without cgo.
func LibraryPath() string { return "" }

// Version returns "": no ONNX Runtime library is loaded without cgo.
func Version() string { return "" }

// ortState is empty without cgo: no session can use ONNX Runtime.
type ortState struct{}

func (s *Session) openORT(path string, data []byte, opt Options) (*Session, error) {
	return nil, fmt.Errorf("%s: %w", s.name, ErrNoORT)
}

func (s *Session) closeORT() error { return nil }

func (s *Session) runDataORT(map[string]Datum, map[string]int64) (map[string]Datum, error) {
	return nil, ErrNoORT
}

// ortBinding is empty without cgo.
type ortBinding struct{}

func (b *Binding) newORT() error { return ErrNoORT }

func (ob *ortBinding) bindTensor(*Session, string, string, *Tensor) error { return ErrNoORT }

func (ob *ortBinding) run(*Session) error { return ErrNoORT }

func (ob *ortBinding) destroy() {}
