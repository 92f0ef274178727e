// Package reliability holds attnx's long-running and whole-program tests:
// crash-safe export under SIGKILL (crash_test.go), determinism of export
// across processes (determinism_test.go), and a soak of the translate API
// that checks for leaks of Go heap and process memory (soak_test.go). It
// has no code of its own; run it with
//
//	go test ./reliability            (the soak is skipped with -short)
//
// Every test here builds or runs real artefacts: the attnx binary, model
// directories exported from checkpoints, ONNX Runtime sessions.
package reliability
