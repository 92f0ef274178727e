// Package translate is attnx's Go inference API: it opens a model directory
// (encoder.onnx, decoder.onnx, attnx.json and optionally greedy.onnx, see
// docs/models.md) and decodes batches of source sentences, greedily or with
// beam search.
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
//   - "steps" runs encoder.onnx once and decoder.onnx once per step on
//     attnx's decoding core (package decode): IoBindings over preallocated
//     buffers, the argmax in Go on the log_probs buffer, and rows leaving
//     the batch as soon as they finish, so a long row does not keep the
//     short ones running. Nothing is allocated per step except each row's
//     output.
//   - "loop" runs greedy.onnx, where the whole decode is one ONNX Loop: one
//     session run per batch.
//
// The default is "loop" when the directory has greedy.onnx, "steps" otherwise.
//
// # Beam search
//
// Options.Beam = K > 1 decodes with the spec's beam search instead: K
// hypotheses per input, candidates ranked by score (the float32 sum of
// log_probs), then hypothesis, then token; finished hypotheses ordered by
// score / length ** Options.LengthPenalty. Result.Hypotheses holds the best
// Options.NBest, each with its tokens, text, score and normalised score;
// Result's Tokens, Text and Attention are the best one's. It runs on the
// steps engine (package decode's Beam): the K hypotheses of every row
// share one batch of decoder steps, the encoder runs once per row, and the
// hypotheses' states are reordered between steps without allocating.
// With Engine "loop" it runs beam.onnx instead (written by attnx export
// --beam): the whole search in one session run per batch, rows grouped by
// their length limit (the graph takes one max_len), with the same
// hypotheses and scores as the steps engine. Beam = 1 (or 0) is greedy
// decoding.
//
// # Scores
//
// Every decoded Result carries its score, whatever the search: Hypotheses
// is never empty (greedy decoding lists its one hypothesis), and
// Result.Score, NormalizedScore and PositionalScores are the best
// hypothesis'. Scores are natural logs: Score sums the tokens' log-probs,
// NormalizedScore is what the search ranks by. A greedy result's
// PositionalScores are its tokens' log-probs and its NormalizedScore the
// one its rules' toolkit prints for greedy decoding: under OpenNMT-py's,
// onmt_translate -beam_size 1's PRED SCORE (a BeamSearch of one, after
// -length_penalty); under JoeyNMT's the sum (its greedy search reports
// token scores); else the spec's beam of one's, score / len ** alpha.
//
// # Inputs
//
// TranslateIDs takes token ids. Ragged batches are padded with source id 0
// (positions past a row's length are masked, so any valid source id does;
// PAD is a target-side token and may lie outside the source vocabulary) and
// carry their lengths; every row is checked before anything runs (not empty, ids in
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
// changes during a steps-engine decode lives in an executor (the
// preallocated buffers and IoBindings of package decode) that the call owns
// until its batch is done. Executors are pooled by bytes, not by count or
// shape: an idle one serves any later batch it has room for, idle ones are
// kept up to Options.MaxIdleBytes (the oldest released first), and the
// executors of all calls in progress together stay within
// Options.MaxLiveBytes: a call that would go over waits for others to
// finish or for its context to end, and a batch that alone needs more is
// refused with an error that names the limit. Close waits for calls in
// progress, then releases the sessions and every pooled executor; calls
// after Close fail with ErrClosed.
//
// A cancelled context stops the steps engine between two decoder steps; the
// loop engine checks it only before its single run.
package translate
