// Package decode is attnx's one decoding core over an exported model's
// encoder.onnx and decoder.onnx (docs/models.md). Every step-by-step
// decoder in attnx runs on it: package translate's "steps" engine, verify's
// step traces and greedy checks, and bench's lean loop. The whole-graph
// engine (greedy.onnx, one ONNX Loop) lives beside it in package translate.
//
// It has three layers, each usable alone:
//
//   - A Search decides, for one row, what to feed next: given the
//     log_probs (and attention) of the row's slots after a step, it writes
//     the next input tokens and, for each next slot, which current slot it
//     continues from, or finishes the row. It is pure Go on plain slices.
//     Greedy is the spec's greedy decoding; Argmax is attnx's one argmax
//     (ties to the lowest index, as torch.argmax on CPU). Beam is the
//     spec's beam search, a Search of width K: a row's K hypotheses are K
//     slots of the batch, reordered between steps by Next.
//
//   - An Executor runs decoder.onnx for a batch of slots over preallocated,
//     IoBinding-bound buffers, and changes the batch between steps: Next
//     gathers states along parent slots (rows leave, hypotheses reorder or
//     expand), Join encodes new rows and appends them (their encoder outputs
//     padded to the batch's source length, the batch re-laid out when a
//     longer source joins). Recurrent states are found from the decoder's
//     inputs: hidden, and cell only for LSTMs. Model.Bytes gives the
//     memory an Executor of a given capacity holds, for pools.
//
//   - A Batch drives rows through an Executor with their Searches: Decode
//     runs one caller's rows to the end, finished rows leaving the batch at
//     once; a scheduler keeps one Batch per model and adds and removes rows
//     between Steps.
//
// Once the batch shapes of a workload have been seen, a decoder step
// allocates nothing on the Go heap (see BenchmarkDecode,
// TestStepDoesNotAllocate and TestBeamStepDoesNotAllocate).
package decode
