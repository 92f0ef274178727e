// Package translate is attnx's Go inference API: it opens a model directory
// (encoder.onnx, decoder.onnx, attnx.json and optionally greedy.onnx, see
// docs/models.md) and decodes source sentences as the model's toolkit
// decodes them, greedily or with beam search.
//
//	tr, err := translate.Open("models/dates", translate.Options{})
//	if err != nil { ... }
//	defer tr.Close()
//	res, err := tr.Translate(ctx, []string{"3rd of March 2021"})
//	fmt.Println(res[0].Text, res[0].Score) // 2021-03-03 and its log-probability
//
// Zero Options decode as the model's toolkit decodes by default: its
// search, beam width, length penalty and output limits, as attnx export
// wrote them into attnx.json's "defaults" (ResolveDecoding); a field set
// overrides the model's value.
//
// # Decoding
//
// Greedy decoding follows the spec exactly: the encoder runs once, the
// decoder starts from its state with SOS, each step feeds back the argmax of
// log_probs, a row stops at EOS (the EOS token is part of its output), and
// decoding stops when every row has stopped or reached its output limit
// (see "Output limits").
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
// The default is "loop" when the search is greedy and the directory has
// greedy.onnx, "steps" otherwise. Either runs its graphs on attnx's native
// evaluator by default, or on ONNX Runtime (Options.Backend).
//
// # Output limits
//
// A row's output limit is Options.MaxLen tokens (EOS included) when set,
// else the model's own (attnx.json's defaults: OpenNMT-py's
// min(250, 1.25 n + 5), JoeyNMT's max_output_length or its factor of n,
// fairseq's 200 + 1), else 2n+10, for a source of n tokens. OpenNMT-py's
// and JoeyNMT's translate commands take n per batch, the longest source of
// the batch they put the sentence in (attnx.json's defaults.batching), so
// the same sentence can get another limit beside other sentences. The calls
// differ in which n they take, and this is the one place that says so:
//
//   - Translate, and TranslateCorpus (a file's lines, batched and emitted
//     as the toolkit's translate command does), give each text the limit
//     the toolkit gives it in a file of the call's texts: Translate of a
//     test set's lines gives the toolkit's lines.
//   - Translate with Options.PerSentenceLimits, TranslateIDs,
//     TranslateSources, TranslateCall, a Scheduler's calls, Stream and
//     TranslateInputs give each row the limit of its own length, so a
//     sentence decodes the same alone or beside any others (Stream's
//     batches are the lines that happen to have arrived). CallOptions'
//     AsTestSet asks TranslateCall and a Scheduler for the toolkit's
//     limits instead.
//
// For a model without defaults.batching (fairseq's, attnx's own) the two
// are the same. Translator.BatchDependentLimits reports whether they
// differ for a Translator's settings.
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
// hypotheses and scores as the steps engine. Beam = 1 is greedy
// decoding; Beam = 0 takes the model's default (greedy without one).
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
// # Scoring given translations
//
// Score (texts) and ScoreIDs (token ids) score a given translation of
// each source instead of searching for one: one forced pass of the
// reference through decoder.onnx (teacher forcing, decode.Forced), on
// the steps engine in batches of Options.BatchSize pairs, as
// onmt_translate -tgt (its GOLD SCORE), fairseq-generate
// --score-reference and JoeyNMT's return_prob: ref score it. Each
// PairScore holds the reference's tokens (EOS last), each token's
// log-prob, their sum (Score) and the rules' toolkit's normalized score
// (NormalizedScore: the sum under OpenNMT-py's rules, the mean per token
// under fairseq's; JoeyNMT's return_prob: ref reports the tokens' scores
// alone, and its NormalizedScore is the sum). Package outformat writes
// them as onmt_translate -verbose does, fairseqgen as fairseq-generate
// --score-reference does.
//
// # Target prefixes
//
// CallOptions.Prefixes forces the start of each output (interactive
// translation: the words the user typed), as OpenNMT-py's onmt_translate
// -tgt FILE -tgt_file_prefix (2.3.0's -tgt_prefix) and fairseq-generate
// --prefix-size N (prefix_tokens) do: one prefix of target ids per source
// (EncodePrefixes reads texts; nil for none), EOS not in it. At each of
// the prefix's steps every slot's log-probs are rewritten so that only
// the prefix token is worth taking (decode.Prefix): under fairseq's rules
// the others become -inf (its _prefix_tokens), under OpenNMT-py's they
// lose 10000 (its target_prefixing); the prefix token keeps its own
// log-prob, which the hypothesis' score counts. The search then goes on
// from the prefix's state: a beam holds one hypothesis worth having
// through the prefix (every beam shares it) and widens at the first free
// step. The output, its text and its positional scores start with the
// prefix. Under OpenNMT-py's rules the output limit and the minimum
// length grow by the prefix's length (DecodeStrategy.initialize; the
// toolkit takes the batch's longest and shortest prefix, attnx each
// row's own, the same for prefixes of one length); under the other
// rules a prefix must leave room for EOS in the row's limit. Greedy
// decoding takes prefixes under every rules; beam search under
// OpenNMT-py's and fairseq's only (the spec's and JoeyNMT's beams would
// finish the -inf hypotheses the forced steps leave, and those toolkits
// force no prefixes). Prefixes need the steps engine, as every
// CallOptions setting does.
//
// # Inputs
//
// TranslateIDs takes token ids. Ragged batches are padded with source id 0
// (positions past a row's length are masked, so any valid source id does;
// PAD is a target-side token and may lie outside the source vocabulary) and
// carry their lengths; every row is checked before anything runs (not
// empty, ids in [0, Vs), not longer than Options.MaxSourceLen). Translate
// takes UTF-8 text and needs the model's tokenizer or the source
// vocabulary of attnx.json: a vocabulary whose ordinary tokens are all
// single characters is character-level, and text is split into
// characters; otherwise text is split at white space. A blank text (white
// space only) gets the zero Result, as a blank line of a test set does; a
// text that is not valid UTF-8 is refused. A character or word outside the
// vocabulary is an error unless Options.UnknownToUNK maps it to UNK.
// Errors about one input are *InputError values naming the row (counted
// from 0 among all the call's texts) and, where it applies, the position
// (counted from 0).
//
// # Errors
//
// Errors wrap their causes (%w), and a caller branches on them with
// errors.Is and errors.As:
//
//   - a refusal of what the caller asked for, an option or an input,
//     matches *RequestError, whose Field names the option (Options' or
//     CallOptions' field name) or whose Row names the input: a server
//     answers it 400 without calling CheckCall first. errors.As also
//     finds the specific type where there is one (*InputError,
//     *BadInputError, *RulesError, *CopySearchError, *LoopGraphError).
//   - a model directory or one of its files that does not exist matches
//     fs.ErrNotExist.
//   - a Scheduler whose queue is full returns an error wrapping
//     ErrQueueFull (decode.ErrQueueFull: either name matches).
//   - a call on a closed Translator or Scheduler returns ErrClosed.
//   - a call whose context ends returns ctx.Err(): context.Canceled or
//     context.DeadlineExceeded.
//
// Anything else (a graph that fails to run, memory over
// Options.MaxLiveBytes: *MemoryLimitError) is the Translator's own
// failure.
//
// # Concurrency
//
// A Translator is safe for use by many goroutines at once. Its sessions
// (the native evaluator's or ONNX Runtime's, both of which allow
// concurrent runs) are shared; everything that changes during a
// steps-engine decode lives in an executor (the preallocated buffers and
// IoBindings of package decode) that the call owns until its batch is
// done. Executors are pooled by bytes, not by count or shape: an idle one
// serves any later batch it has room for, idle ones are kept up to
// Options.MaxIdleBytes (the oldest released first), and the executors of
// all calls in progress together stay within Options.MaxLiveBytes: a call
// that would go over waits for others to finish or for its context to
// end, and a batch that alone needs more is refused with an error that
// names the limit. Close waits for calls in progress, then releases the
// sessions and every pooled executor; calls after Close fail with
// ErrClosed.
//
// A cancelled context stops the steps engine between two decoder steps; the
// loop engine checks it only before its single run.
package translate
