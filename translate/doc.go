// Package translate is attnx's Go inference API: it opens a model directory
// (encoder.onnx, decoder.onnx, attnx.json and optionally greedy.onnx, see
// shared/spec/models.md) and greedy-decodes batches of source sentences.
//
//	tr, err := translate.Open("models/dates", translate.Options{})
//	if err != nil { ... }
//	defer tr.Close()
//	res, err := tr.Translate(ctx, []string{"3rd of March 2021"})
//	fmt.Println(res[0].Text) // 2021-03-03
//
// # Decoding
//
// Greedy decoding follows the spec exactly: the encoder runs once, the
// decoder starts from its state with SOS, each step feeds back the argmax of
// log_probs, a row stops at EOS (the EOS token is part of its output), and
// decoding stops when every row has stopped or a row reaches its length
// limit. The limit is Options.MaxLen tokens when set, else 2*n+10 for a
// source of n tokens; it is per row, so a sentence decodes to the same tokens
// whatever else is in its batch.
//
// Two engines do the same computation:
//
//   - "steps" runs encoder.onnx once and decoder.onnx once per step, through
//     ONNX Runtime IoBindings over preallocated tensors: the decoder's
//     hidden and cell ping-pong between two buffers, nothing is copied or
//     allocated per step except each row's output, and the argmax is done in
//     Go on the log_probs buffer.
//   - "loop" runs greedy.onnx, where the whole decode is one ONNX Loop: one
//     session run per batch.
//
// The default is "loop" when the directory has greedy.onnx, "steps" otherwise.
//
// # Inputs
//
// TranslateIDs takes token ids. Ragged batches are padded with PAD and carry
// their lengths; every row is checked before anything runs (not empty, ids in
// [0, Vs), not longer than Options.MaxSourceLen). Translate takes text and
// needs the source vocabulary of attnx.json: a vocabulary whose ordinary
// tokens are all single characters is character-level, and text is split
// into characters; otherwise text is split at white space. A character or
// word outside the vocabulary is an error unless Options.UnknownToUNK maps it
// to UNK. Errors about one input are *InputError values naming the row
// (counted from 0) and, where it applies, the position (counted from 0).
//
// # Concurrency
//
// A Translator is safe for use by many goroutines at once. The ONNX Runtime
// sessions are shared (ORT sessions allow concurrent runs); everything that
// changes during a decode lives in a per-call workspace (the preallocated
// tensors and IoBindings of one batch shape). Workspaces are kept on a
// bounded free list keyed by (batch, src_len): a call takes one (or makes
// one), owns it exclusively until the batch is done, and puts it back; the
// least recently returned workspaces are released when the list is full.
// Close waits for calls in progress, then releases the sessions and every
// pooled workspace; calls after Close fail with ErrClosed.
//
// A cancelled context stops the steps engine between two decoder steps; the
// loop engine checks it only before its single run.
package translate
