package serve

import (
	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/translate"
	"reflect"
	"strings"
)

// The routes of the service.
const (
	// PathTranslate takes a Request by POST and answers a Response.
	PathTranslate = "/v1/translate"
	// PathModels lists the models served (GET), as a ModelsResponse.
	PathModels = "/v1/models"
	// PathModelTranslate is PathTranslate for the model named in the path:
	// /v1/models/NAME/translate.
	PathModelTranslate = "/v1/models/{name}/translate"
	// PathHealth answers 200 while the process is alive (liveness).
	PathHealth = "/healthz"
	// PathReady answers 200 once every model is loaded and until shutdown
	// begins, while no model's queue is full (Server.Saturated); 503
	// otherwise (readiness).
	PathReady = "/readyz"
	// PathMetrics serves Prometheus metrics in the text format.
	PathMetrics = "/metrics"
	// PathViewer serves the attention viewer page.
	PathViewer = "/"
)

// DefaultPort is the port `attnx serve` listens on by default, and the one
// the manifests under deploy/ use.
const DefaultPort = 8080

// Request is the body of POST /v1/translate. Exactly one of Inputs and IDs
// is given.
type Request struct {
	// Model names the model to use; empty means the default one (the first
	// given to the server). The path /v1/models/NAME/translate names it too.
	Model string `json:"model,omitempty"`
	// Inputs are texts, tokenised with the model's source vocabulary.
	Inputs []string `json:"inputs,omitempty"`
	// IDs are source token id rows, for models without a vocabulary or
	// callers that tokenise themselves.
	IDs [][]int64 `json:"ids,omitempty"`
	// MaxLen limits each output to this many tokens, EOS included; absent
	// means 2n+10 for a source of n tokens, as `attnx translate` does.
	MaxLen *int `json:"max_len,omitempty"`
	// Beam is the beam width K: absent or 1 decodes greedily; K > 1 runs
	// beam search and each result lists its n-best hypotheses
	// ("hypotheses"), as `attnx translate --beam K --json` does.
	Beam *int `json:"beam,omitempty"`
	// NBest is the number of hypotheses listed per input, 1 to Beam
	// (absent: 1).
	NBest *int `json:"n_best,omitempty"`
	// LengthPenalty is beam search's alpha (hypotheses are ranked by
	// score / length ** alpha), finite and >= 0; absent means
	// translate.DefaultLengthPenalty.
	LengthPenalty *float64 `json:"length_penalty,omitempty"`
	// LengthPenaltyForm is "power" (score / length ** alpha) or "wu"
	// (score / ((5 + length) / 6) ** alpha: OpenNMT-py's -length_penalty
	// wu, JoeyNMT's beam_alpha); absent means the server's default.
	LengthPenaltyForm *string `json:"length_penalty_form,omitempty"`
	// MinLen keeps EOS out of the first MinLen output tokens (OpenNMT-py's
	// -min_length, JoeyNMT's min_output_length); absent means the
	// server's default.
	MinLen *int `json:"min_len,omitempty"`
	// Rules are beam search's rules: "spec" (attnx's), "opennmt"
	// (OpenNMT-py's, as onmt_translate decodes; length_penalty_form then
	// takes "none", "avg" or "wu"), "joeynmt" (JoeyNMT 2.3's;
	// length_penalty is its beam_alpha) or "fairseq" (fairseq's
	// SequenceGenerator, greedy included; length_penalty is its
	// --lenpen); absent means the model's default.
	// BanUNK keeps the unknown token out of the output: OpenNMT-py's
	// -ban_unk_token, JoeyNMT's generate_unk: false.
	Rules  *string `json:"rules,omitempty"`
	BanUNK *bool   `json:"ban_unk,omitempty"`
	// NoRepeatNgram and RepetitionPenalty are JoeyNMT's
	// no_repeat_ngram_size and repetition_penalty for beam search;
	// absent means the model's default.
	NoRepeatNgram     *int     `json:"no_repeat_ngram,omitempty"`
	RepetitionPenalty *float64 `json:"repetition_penalty,omitempty"`
	// ReplaceUnk replaces each unknown output token with the source token
	// it attends to most (OpenNMT-py's -replace_unk); absent means the
	// server's default.
	ReplaceUnk *bool `json:"replace_unk,omitempty"`
	// Attention true answers each result's attention weights (the
	// viewer asks for them); absent or false answers none. They are most
	// of an answer's bytes: T x src_len numbers per input.
	Attention *bool `json:"attention,omitempty"`
	// Alignment true answers each result's and hypothesis' hard
	// alignment ("alignment": [source position, output position] pairs,
	// translate.Result.Alignment) without the weights; "attention": true
	// answers it too.
	Alignment *bool `json:"alignment,omitempty"`
	// The toolkits' other settings (docs/decoding.md): OpenNMT-py's
	// max_len_ratio, block_ngram_repeat, ignore_when_blocking, ratio and
	// the coverage penalty (coverage_penalty, beta, stepwise_penalty);
	// fairseq's unk_penalty, temperature and max_len_a; random sampling
	// (sampling, sampling_topk, sampling_topp, seed) under either's
	// rules. Absent means the server's default (none).
	MaxLenRatio        *float64 `json:"max_len_ratio,omitempty"`
	BlockNgramRepeat   *int     `json:"block_ngram_repeat,omitempty"`
	IgnoreWhenBlocking []string `json:"ignore_when_blocking,omitempty"`
	Ratio              *float64 `json:"ratio,omitempty"`
	CoveragePenalty    *string  `json:"coverage_penalty,omitempty"`
	Beta               *float64 `json:"beta,omitempty"`
	StepwisePenalty    *bool    `json:"stepwise_penalty,omitempty"`
	UnkPenalty         *float64 `json:"unk_penalty,omitempty"`
	Temperature        *float64 `json:"temperature,omitempty"`
	MaxLenA            *float64 `json:"max_len_a,omitempty"`
	Sampling           *bool    `json:"sampling,omitempty"`
	SamplingTopK       *int     `json:"sampling_topk,omitempty"`
	SamplingTopP       *float64 `json:"sampling_topp,omitempty"`
	Seed               *uint64  `json:"seed,omitempty"`
	// fairseq's other searches (docs/decoding.md): match_source_len,
	// diverse_beam_groups with diverse_beam_strength, diversity_rate.
	MatchSourceLen      *bool    `json:"match_source_len,omitempty"`
	DiverseBeamGroups   *int     `json:"diverse_beam_groups,omitempty"`
	DiverseBeamStrength *float64 `json:"diverse_beam_strength,omitempty"`
	DiversityRate       *float64 `json:"diversity_rate,omitempty"`
	// Pretokenized true takes each input as the model's source pieces
	// already, separated by spaces (a test set segmented by the
	// toolkit's scripts): the model's tokenizer is not run.
	Pretokenized *bool `json:"pretokenized,omitempty"`
	// Prefix holds, for each of "inputs", the start of its translation
	// (target text the user typed; "" for none), forced as onmt_translate
	// -tgt_file_prefix and fairseq-generate --prefix-size force it: the
	// search goes on from it, its log-probs in the score, and the
	// translation starts with it (translate.CallOptions.Prefixes).
	Prefix []string `json:"prefix,omitempty"`
}

// requestFields lists Request's JSON fields, for error messages: read
// from the type, so that a field added there is listed.
var requestFields = func() string {
	var names []string
	for f := range reflect.TypeFor[Request]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}()

// DecodingFields lists the JSON fields of Request that set how the
// inputs are decoded (all but the inputs, the model, pretokenized and
// attention), in Request's order: read from the type, so that a field
// added there is listed where attnx serve's help names them.
func DecodingFields() []string {
	var names []string
	for f := range reflect.TypeFor[Request]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "model", "inputs", "ids", "pretokenized", "attention":
			continue
		}
		names = append(names, name)
	}
	return names
}

// Response is the answer to a successful POST /v1/translate: one result
// per input, in input order, with the fields of `attnx translate --json`.
type Response struct {
	// Model is the name of the model that translated.
	Model string `json:"model"`
	// Results holds one result per input.
	Results []translate.ResultJSON `json:"results"`
	// Notes says what the server noticed about the request that the
	// caller may want to change (input that looks segmented already).
	Notes []string `json:"notes,omitempty"`
}

// ErrorResponse is the body of every 4xx and 5xx answer.
type ErrorResponse struct {
	// Error says what is wrong and, where it helps, what was expected.
	Error string `json:"error"`
}

// ModelsResponse is the answer to GET /v1/models.
type ModelsResponse struct {
	Models []ModelInfo `json:"models"`
}

// ModelInfo describes one served model: what the viewer needs to label
// tokens, and what a client needs to send ids.
type ModelInfo struct {
	// Name is the name requests use.
	Name string `json:"name"`
	// Default is true for the model used when a request names none.
	Default bool `json:"default"`
	attention.Config
	// Special holds the special token ids.
	Special attention.Special `json:"special_tokens"`
	// SrcTokens and TgtTokens are the vocabularies (index = id), when the
	// model directory has them.
	SrcTokens []string `json:"src_vocab,omitempty"`
	TgtTokens []string `json:"tgt_vocab,omitempty"`
	// Batching is true when the model is served by the continuous-batching
	// scheduler, false when each request is decoded alone.
	Batching bool `json:"batching"`
	// MaxInputs, MaxSourceLen, MaxOutLen and MaxBeam are the server's
	// limits per request (0: none for MaxSourceLen).
	MaxInputs    int `json:"max_inputs"`
	MaxSourceLen int `json:"max_source_len"`
	MaxOutLen    int `json:"max_out_len"`
	MaxBeam      int `json:"max_beam"`
	// MaxRequestMemory is the per-request memory budget in bytes: a
	// request whose estimated need (rows x beam x max_len x src_len, the
	// answer included) is larger is refused with 413.
	MaxRequestMemory int64 `json:"max_request_memory"`
	// DefaultBeam and DefaultRules are how a request that sets no
	// decoding field is decoded (the model's defaults under the server's
	// flags): beam 5 with OpenNMT-py's rules, say.
	DefaultBeam  int    `json:"default_beam"`
	DefaultRules string `json:"default_rules"`
}

// canReplaceUnk reports whether the model can replace unknown output
// tokens: its source vocabulary's unknown token is in the target one too,
// as translate.Options.ReplaceUnk needs.
func (m ModelInfo) canReplaceUnk() bool {
	return modeldir.TargetUNK(m.Special.UNK, m.SrcTokens, m.TgtTokens) >= 0
}
