package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/attnx/attnx/internal/panics"
	"github.com/attnx/attnx/translate"
)

// PathScore takes a ScoreRequest by POST and answers a ScoreResponse:
// the model's scores of given translations (translate.Translator.Score).
const PathScore = "/v1/score"

// ScoreRequest is the body of POST /v1/score: sources and, for each, a
// given translation to score (corpus filtering, reranking), as
// onmt_translate -tgt and fairseq-generate --score-reference score them.
type ScoreRequest struct {
	// Model names the model (the server's first when empty).
	Model string `json:"model,omitempty"`
	// Inputs are the source texts, References their translations, one
	// per input.
	Inputs     []string `json:"inputs"`
	References []string `json:"references"`
	// Pretokenized takes both sides as the model's pieces already.
	Pretokenized *bool `json:"pretokenized,omitempty"`
}

var scoreFields = func() string {
	var names []string
	for f := range reflect.TypeFor[ScoreRequest]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}()

// ScoreResponse answers a ScoreRequest: one score per pair, in order.
type ScoreResponse struct {
	Model  string                `json:"model"`
	Scores []translate.PairScore `json:"scores"`
}

// ScoringBackend is a Backend that scores given translations; the
// backends OpenTranslatorBackend and the batching one open are.
type ScoringBackend interface {
	// Score returns, for each pair src[i], tgt[i], the reference's
	// per-token log-probs and scores under the model's rules
	// (translate.Translator.Score); pretokenized says the texts are
	// pieces already.
	Score(ctx context.Context, src, tgt []string, pretokenized bool) ([]translate.PairScore, error)
}

// Score scores the pairs on the backend's Translator.
func (b *translatorBackend) Score(ctx context.Context, src, tgt []string, pretokenized bool) ([]translate.PairScore, error) {
	return scoreOn(ctx, b.def, pretokenized, src, tgt)
}

// Score scores the pairs on the backend's Translator, beside the
// scheduler's batch (a Translator runs calls side by side).
func (b *batchingBackend) Score(ctx context.Context, src, tgt []string, pretokenized bool) ([]translate.PairScore, error) {
	return scoreOn(ctx, b.tr, pretokenized, src, tgt)
}

// scoreOn scores with tr. A request of pretokenized pairs, where tr does
// not take pieces, is refused: the backend's Translator reads text.
func scoreOn(ctx context.Context, tr *translate.Translator, pretokenized bool, src, tgt []string) ([]translate.PairScore, error) {
	if pretokenized {
		return nil, &translate.RequestError{Row: -1, Err: errors.New("pretokenized: scoring takes text, which the model's tokenizers segment")}
	}
	return tr.Score(ctx, src, tgt)
}

// score answers POST /v1/score.
func (s *Server) score(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, format string, args ...any) {
		s.refuse(w, code, fmt.Sprintf(format, args...))
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(http.StatusMethodNotAllowed, `%s %s: use POST with a JSON body such as {"inputs": ["text"], "references": ["translation"]}`, r.Method, r.URL.Path)
		return
	}
	if !s.ready.Load() {
		fail(http.StatusServiceUnavailable, "not ready: the models are loading")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	var req ScoreRequest
	if code, msg := s.readBodyWith(w, r, deadline, func(body io.Reader) (int, string) {
		return decodeRequest(body, &req, s.cfg.MaxBodyBytes, scoreFields)
	}); code != 0 {
		fail(code, "%s", msg)
		return
	}
	m, code, msg := s.resolveModel("", req.Model)
	if code != 0 {
		fail(code, "%s", msg)
		return
	}
	n := len(req.Inputs)
	switch {
	case n == 0:
		fail(http.StatusBadRequest, `no inputs: give "inputs": ["text", ...] and "references": ["translation", ...]`)
		return
	case len(req.References) != n:
		fail(http.StatusBadRequest, "%d inputs and %d references: give one reference per input", n, len(req.References))
		return
	case n > s.cfg.MaxInputs:
		fail(http.StatusBadRequest, "%d inputs: more than the limit of %d per request (--max-inputs); split them into several requests", n, s.cfg.MaxInputs)
		return
	}
	for i := range n {
		for _, x := range []struct {
			field, text string
		}{{"inputs", req.Inputs[i]}, {"references", req.References[i]}} {
			if len(x.text) > s.cfg.MaxInputBytes {
				fail(http.StatusRequestEntityTooLarge, "%s[%d]: %d bytes: more than the limit of %d bytes per input (--max-input-bytes); split it", x.field, i, len(x.text), s.cfg.MaxInputBytes)
				return
			}
		}
	}
	sb, ok := m.backend.(ScoringBackend)
	if !ok {
		fail(http.StatusNotImplemented, "model %q: its backend does not score given translations", m.name)
		return
	}
	var scores []translate.PairScore
	err := panics.Call(func() (err error) {
		scores, err = sb.Score(ctx, req.Inputs, req.References, req.Pretokenized != nil && *req.Pretokenized)
		return err
	}, "scoring a request of %d pairs for model %q", n, m.name)
	var re *translate.RequestError
	switch {
	case err == nil:
		s.metrics.requests.WithLabelValues(m.name, "200").Inc()
		writeJSON(w, http.StatusOK, ScoreResponse{Model: m.name, Scores: scores})
	case errors.As(err, &re):
		fail(http.StatusBadRequest, "%v", err)
	case ctx.Err() != nil:
		fail(http.StatusServiceUnavailable, "scoring did not finish within the request timeout of %s (--request-timeout)", s.cfg.RequestTimeout)
	default:
		fail(http.StatusInternalServerError, "scoring for model %q: %v", m.name, err)
	}
}
