// Package serve is attnx's HTTP translation service (`attnx serve`): one
// process serves one or more model directories by name, each through a
// Backend, with JSON errors, bounded queues, Prometheus metrics, an
// attention viewer for people, and graceful shutdown.
//
// # API
//
//	POST /v1/translate              a Request; answers a Response
//	POST /v1/models/NAME/translate  the same, for the model NAME
//	GET  /v1/models                 the models, with vocabularies and limits
//	GET  /                          the attention viewer
//	GET  /healthz                   200 while the process runs (liveness)
//	GET  /readyz                    200 once every model is loaded and until
//	                                shutdown begins, while no model's queue
//	                                is full; else 503 (readiness)
//	GET  /metrics                   Prometheus text format
//
// A request gives texts or token id rows, at most Config.MaxInputs, and
// optionally max_len and the model:
//
//	{"inputs": ["3rd of March 2021"], "max_len": 20}
//	{"model": "dates", "ids": [[12, 56, 44]]}
//
// The answer has one result per input, in order, with the fields of
// `attnx translate --json` (translate.ResultJSON): input, source_ids,
// tokens, text, attention, the "hypotheses" list (greedy decoding's one,
// or with "beam" K > 1 beam search's "n_best", best first, each with
// tokens, text, score and normalized_score; "length_penalty" is the
// ranking's alpha), and the best one's "score", "normalized_score" and,
// where the search records them (greedy decoding, fairseq's rules),
// "positional_scores", each token's log-prob: natural logs ("score_base":
// "e"), whatever the search.
// The model is the one named in the path or the "model" field, else the
// first one given to the server. With batching on, a beam request's rows
// join the shared batch as any others, K slots each; with batching off it
// is decoded alone on the steps engine, as `attnx translate --beam K`
// does.
//
// # Errors
//
// Every error answer is a JSON ErrorResponse whose message names what is
// wrong: 400 for a body that is not one JSON object, an unknown field, a
// value of the wrong type, no inputs, both inputs and ids, too many inputs,
// an empty input, a character or word outside the source vocabulary (the
// input's index and the position), a source longer than
// Config.MaxSourceLen, an id outside the vocabulary, max_len outside
// 1..Config.MaxOutLen (or max_len_a or max_len_ratio giving an input a
// longer output limit), under fairseq's rules a min_len at or above an
// input's output limit, beam outside 1..Config.MaxBeam (and, with
// batching on, Config.MaxBatchRows), n_best outside 1..beam, a negative
// length_penalty; 404 for an unknown model or
// page; 405 for a method other than POST; 413 for a body over
// Config.MaxBodyBytes (1 MiB by default); 429 (with Retry-After) when the
// model's queue is full; 503 while the models load; 504 when a request is
// not answered within Config.RequestTimeout; 500 when decoding fails.
//
// # Admission and backends
//
// The Backend decodes. With Config.Batching (the default of `attnx
// serve`), OpenBatchingBackend gives each model one continuous-batching
// scheduler (translate.Scheduler over decode.Scheduler): one goroutine
// drives one running decoder batch; a request's rows are encoded and join
// it at the next step boundary, each row leaves as soon as it finishes,
// and the request is answered once all its rows are done, so a short
// sentence never waits for a long one and the batch is as full as the load
// allows. At most Config.MaxBatchRows rows decode together; the rows of
// up to Config.MaxQueue requests wait to join, in arrival order; past that
// a request gets 429 at once. Results are those of a lone Translator call:
// the same tokens, attention within 1e-5. Unless Config.Threads says
// otherwise, a model whose decoder step is small gets one ONNX Runtime
// thread (BatchingThreads): its steps run one after another on one
// goroutine, beside the request handlers.
//
// With batching off, OpenTranslatorBackend makes each request one call of a
// translate.Translator, decoded alone (the Translator runs concurrent calls
// side by side on shared ONNX Runtime sessions); a limiter hands at most
// Config.MaxConcurrent requests to it at once, at most Config.MaxQueue more
// wait, and past that a request gets 429 at once. Config.Open chooses
// another backend, such as a test double; a SchedulingBackend admits
// requests itself.
//
// A request whose client goes away while it waits or decodes is abandoned
// (its context is cancelled) and counted with status 499; one that runs
// past Config.RequestTimeout gets 504. Either way, with batching on, its
// rows leave the batch at the next step boundary. With batching off and
// the loop engine (greedy.onnx, one ONNX Runtime run per call), a call
// cannot stop mid-decode: the abandoned request's decode runs to its end
// and its result is dropped; the steps engine (--engine steps) stops
// between two decoder steps.
//
// # Metrics
//
// attnx_serve_requests_total{model,code}, attnx_serve_request_duration_seconds{model}
// (answers 200), attnx_serve_batch_rows{model} (rows decoded together: per
// decoder step with batching on, per Translator call with it off),
// attnx_serve_tokens_decoded_total{model}, attnx_serve_inputs_translated_total{model},
// attnx_serve_queue_depth{model}, attnx_serve_requests_in_flight,
// attnx_serve_rows_in_flight (the inputs of the requests admitted and not
// yet answered: the load deploy/hpa.yaml scales on), with
// batching on attnx_serve_rows_joined_total{model} and
// attnx_serve_rows_removed_total{model} (rows that left the batch
// unfinished: cancelled or timed out), and the Go and process collectors.
//
// # Shutdown
//
// Server.Serve loads the models after it starts listening, so that
// liveness answers while they load. When its context ends (attnx serve:
// SIGTERM or Ctrl-C), readiness fails at once, the listener stays open for
// Config.DrainDelay (so that a load balancer stops sending requests; each
// answer then closes its connection, so that a client's next request goes
// to another replica instead of meeting this one's close), then closes;
// requests in flight, and any that reached a handler, are answered within
// Config.ShutdownTimeout; then the backends close and Serve returns nil.
//
// # Load tests
//
// RunLoad drives a running server with concurrent single-sentence clients
// and reports throughput, latency percentiles and the server's batch sizes;
// `attnx loadtest` runs it for several client counts.
package serve
