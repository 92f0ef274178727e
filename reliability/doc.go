// Package reliability holds attnx's long-running and whole-program tests:
// crash-safe export under SIGKILL (crash_test.go), determinism of export
// across processes (determinism_test.go), and soaks of the translate API
// that check for leaks of Go heap and process memory (soak_test.go). It
// has no code of its own; run it with
//
//	go test ./reliability            (the soak is skipped with -short)
//
// Every test here builds or runs real artefacts: the attnx binary, model
// directories exported from checkpoints, ONNX Runtime sessions.
//
// The attnx binary is built with -tags attnx_crashpoints, which compiles in
// modeldir's crash points: ATTNX_CRASH_AT=POINT makes the process SIGKILL
// itself at that point of the model directory swap (before-swap, renamed,
// swapped, removing-old, aside), and ATTNX_SWAP=rename forces the rename
// fallback used where the system has no atomic exchange. Binaries built
// without the tag contain neither and ignore both variables.
//
// The leak tests sample memory after returning freed memory to the system
// (procstat.ReleaseFreeMemory: Go's GC and FreeOSMemory, glibc's
// malloc_trim), fit the growth rate (Theil-Sen) once the allocators
// have settled, and compare it with what a real leak costs, measured in the
// same process: one small OrtValue per translation, one unclosed
// translator per open/close cycle.
package reliability
