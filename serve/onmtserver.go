package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The answers of onmt_server's API, shaped as onmt/bin/server.py shapes
// them: Flask's jsonify sorts every object's keys and escapes what is not
// ASCII, so the fields below are in that order and onmtWrite escapes.

// onmtResult is one translation of a translate answer.
type onmtResult struct {
	NBest     int     `json:"n_best"`
	PredScore pyFloat `json:"pred_score"`
	Src       string  `json:"src"`
	Tgt       string  `json:"tgt"`
}

// pyFloat is a number written as Python's json writes a float (its
// repr): the shortest digits that read back, "0.0" and "5.0" with their
// point, an exponent below 1e-4 and from 1e16 on ("1e-05", "1e+16").
type pyFloat float64

// MarshalJSON writes f as Python's repr.
func (f pyFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, fmt.Errorf("pred_score %v is not a JSON number", v)
	}
	e := strconv.FormatFloat(v, 'e', -1, 64) // -d.ddde±XX
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		return fmt.Appendf(nil, "%se%s%02d", mant, sign, exp), nil
	}
	out := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(out, ".") {
		out += ".0"
	}
	return []byte(out), nil
}

// onmtError is an error answer: {"error": ..., "status": "error"}, with
// "model_id" where the route names a model.
type onmtError struct {
	Error   string `json:"error"`
	ModelID *int   `json:"model_id,omitempty"`
	Status  string `json:"status"`
}

// onmtModelDict is one model of GET /models (ServerModel.to_dict).
type onmtModelDict struct {
	Loaded    bool                       `json:"loaded"`
	ModelID   int                        `json:"model_id"`
	Models    []string                   `json:"models"`
	Opt       map[string]json.RawMessage `json:"opt"`
	Timeout   json.RawMessage            `json:"timeout"`
	Tokenizer json.RawMessage            `json:"tokenizer,omitempty"`
}

// onmtInput is one element of a translate request: [{"id": N, "src": "..."}].
// onmt_server reads "ref" too (a reference it tokenizes and drops); keys
// it does not read are ignored, as it ignores them.
type onmtInput struct {
	ID  json.RawMessage `json:"id"`
	Src *string         `json:"src"`
}

// checkOnmt checks each onmt model's opt, once its model is loaded, as
// every request of its id will be checked (the server's limits, the
// settings the model's rules take), so that a bad opt stops the start
// instead of failing every request.
func (s *Server) checkOnmt() error {
	if s.cfg.Onmt == nil {
		return nil
	}
	for _, om := range s.cfg.Onmt.Models {
		m := s.models[om.Name]
		if m == nil {
			return fmt.Errorf("onmt model %d: no served model %q", om.ID, om.Name)
		}
		req := om.Decoding
		req.Inputs = []string{"x"}
		if _, msg := s.checkRequest(&req, m); msg != "" {
			return fmt.Errorf("onmt model %d: its opt, as the request fields it sets (beam_size is beam, max_length max_len, min_length min_len, alpha length_penalty, length_penalty length_penalty_form): %s", om.ID, msg)
		}
	}
	return nil
}

// onmtRoutes registers onmt_server's routes under the API's URL root.
func (s *Server) onmtRoutes(mux *http.ServeMux) {
	root := s.cfg.Onmt.URLRoot
	route := func(method, path string, h func(http.ResponseWriter, *http.Request)) {
		mux.HandleFunc(root+path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != method {
				w.Header().Set("Allow", method)
				onmtWrite(w, http.StatusMethodNotAllowed, onmtError{Error: fmt.Sprintf("%s %s: the method is %s", r.Method, r.URL.Path, method), Status: "error"})
				return
			}
			h(w, r)
		})
	}
	if root != "" {
		// A page under the root that is none of the routes.
		mux.HandleFunc(root+"/", func(w http.ResponseWriter, r *http.Request) {
			onmtWrite(w, http.StatusNotFound, onmtError{Error: fmt.Sprintf("no such page %s: onmt_server's API is POST %[2]s/translate, GET %[2]s/models, %[2]s/health, %[2]s/unload_model/ID, %[2]s/to_cpu/ID, %[2]s/to_gpu/ID and POST %[2]s/clone_model/ID", r.URL.Path, root), Status: "error"})
		})
	}
	route(http.MethodGet, "/health", s.onmtHealth)
	route(http.MethodGet, "/models", s.onmtModels)
	route(http.MethodPost, "/translate", s.onmtTranslate)
	for _, p := range []struct {
		method, path string
		h            func(http.ResponseWriter, *http.Request, *OnmtModel, int)
	}{
		{http.MethodPost, "/clone_model/", s.onmtClone},
		{http.MethodGet, "/unload_model/", s.onmtUnload},
		{http.MethodGet, "/to_cpu/", s.onmtToCPU},
		{http.MethodGet, "/to_gpu/", s.onmtToGPU},
	} {
		route(p.method, p.path+"{id}", func(w http.ResponseWriter, r *http.Request) {
			// Flask's <int:model_id>: digits only, else no such page.
			text := r.PathValue("id")
			id, err := strconv.Atoi(text)
			if err != nil || strings.TrimLeft(text, "0123456789") != "" {
				onmtWrite(w, http.StatusNotFound, onmtError{Error: fmt.Sprintf("no such page %s: the model id %q is not a number", r.URL.Path, text), Status: "error"})
				return
			}
			p.h(w, r, s.cfg.Onmt.byID[id], id)
		})
	}
}

// onmtHealth answers {"status": "ok"} once the models are loaded (onmt_server
// listens only then); 503 while they load.
func (s *Server) onmtHealth(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		onmtWrite(w, http.StatusServiceUnavailable, onmtError{Error: "not ready: the models are loading", Status: "error"})
		return
	}
	onmtWrite(w, http.StatusOK, map[string]string{"status": "ok"})
}

// onmtModels answers the models as onmt_server's list_models does.
func (s *Server) onmtModels(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		onmtWrite(w, http.StatusServiceUnavailable, onmtError{Error: "not ready: the models are loading", Status: "error"})
		return
	}
	out := []onmtModelDict{}
	for _, m := range s.cfg.Onmt.Models {
		opt := map[string]json.RawMessage{}
		for k, v := range m.opt {
			if k != "models" && k != "src" {
				opt[k] = v
			}
		}
		out = append(out, onmtModelDict{Loaded: true, ModelID: m.ID, Models: m.paths, Opt: opt, Timeout: m.timeout, Tokenizer: m.tokenizer})
	}
	onmtWrite(w, http.StatusOK, out)
}

// onmtUnknown is onmt_server's ServerModelError for an unknown id, as
// its unload_model and clone_model answer it.
func onmtUnknown(id int) string { return fmt.Sprintf("No such model '%d'", id) }

// onmtNoModel is onmtUnknown with the ids served, for the routes where
// onmt_server fails on an unknown id (500) instead of answering it.
func (s *Server) onmtNoModel(id string) string {
	ids := make([]string, len(s.cfg.Onmt.Models))
	for i, m := range s.cfg.Onmt.Models {
		ids[i] = strconv.Itoa(m.ID)
	}
	return fmt.Sprintf("No such model '%s': this server serves the model ids %s", id, strings.Join(ids, ", "))
}

// onmtClone refuses POST /clone_model/ID: attnx serve's models are those
// of its conf.json. (onmt_server 3.5.1's own clone_model answers 500: it
// passes the timeout as the new model's id and reads the load time of a
// model it has not loaded.)
func (s *Server) onmtClone(w http.ResponseWriter, r *http.Request, m *OnmtModel, id int) {
	if m == nil {
		onmtWrite(w, http.StatusOK, onmtError{Error: onmtUnknown(id), Status: "error"})
		return
	}
	onmtWrite(w, http.StatusOK, onmtError{Error: fmt.Sprintf("clone_model is refused: attnx serve serves the models of its conf.json; add an entry with id, model %q and the new opt there, and restart", m.paths[0]), Status: "error"})
}

// onmtUnload answers GET /unload_model/ID: unknown ids as onmt_server
// answers them; a served model is not unloaded (attnx serve keeps every
// model loaded, its idle buffers handed back after --idle-release).
func (s *Server) onmtUnload(w http.ResponseWriter, r *http.Request, m *OnmtModel, id int) {
	if m == nil {
		onmtWrite(w, http.StatusOK, onmtError{Error: onmtUnknown(id), ModelID: &id, Status: "error"})
		return
	}
	onmtWrite(w, http.StatusOK, onmtError{Error: fmt.Sprintf("unload_model is refused: attnx serve keeps model %d loaded until it stops (it hands the idle buffers back after --idle-release)", id), ModelID: &id, Status: "error"})
}

// onmtToCPU answers GET /to_cpu/ID: {"model_id": ID, "status": "ok"} on
// the CPU, where the model is; refused on a GPU, whose sessions attnx
// does not move.
func (s *Server) onmtToCPU(w http.ResponseWriter, r *http.Request, m *OnmtModel, id int) {
	switch {
	case m == nil:
		onmtWrite(w, http.StatusNotFound, onmtError{Error: s.onmtNoModel(strconv.Itoa(id)), ModelID: &id, Status: "error"})
	case s.cfg.Device != "" && s.cfg.Device != "cpu":
		onmtWrite(w, http.StatusOK, onmtError{Error: fmt.Sprintf("to_cpu is refused: attnx serve runs model %d where --device %s put it", id, s.cfg.Device), ModelID: &id, Status: "error"})
	default:
		onmtWrite(w, http.StatusOK, map[string]any{"model_id": id, "status": "ok"})
	}
}

// onmtToGPU refuses GET /to_gpu/ID: attnx serve's device is --device's.
// (onmt_server answers 500 when no GPU was configured, -gpu -1.)
func (s *Server) onmtToGPU(w http.ResponseWriter, r *http.Request, m *OnmtModel, id int) {
	if m == nil {
		onmtWrite(w, http.StatusNotFound, onmtError{Error: s.onmtNoModel(strconv.Itoa(id)), ModelID: &id, Status: "error"})
		return
	}
	dev := s.cfg.Device
	if dev == "" {
		dev = "cpu"
	}
	onmtWrite(w, http.StatusOK, onmtError{Error: fmt.Sprintf("to_gpu is refused: attnx serve runs model %d where --device %s put it (start it with --device cuda to run on a GPU)", id, dev), ModelID: &id, Status: "error"})
}

// onmtTranslate answers POST /translate: [{"id": N, "src": "..."}, ...],
// every input translated by the first one's model (id 0 when it names
// none), as onmt_server does; the answer holds n_best lists, the k-th
// list the k-th best translation of every input.
func (s *Server) onmtTranslate(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	s.metrics.inFlight.Inc()
	defer s.metrics.inFlight.Dec()
	name, code, out, release := s.handleOnmt(w, r)
	defer release()
	s.metrics.requests.WithLabelValues(name, strconv.Itoa(code)).Inc()
	if code == statusClientGone {
		return
	}
	if code == http.StatusOK {
		s.metrics.latency.WithLabelValues(name).Observe(time.Since(start).Seconds())
	}
	onmtWrite(w, code, out)
}

// handleOnmt returns the served model's name ("" when none was found),
// the status and the body of a translate answer.
func (s *Server) handleOnmt(w http.ResponseWriter, r *http.Request) (string, int, any, func()) {
	none := func() {}
	fail := func(name string, code int, format string, args ...any) (string, int, any, func()) {
		return name, code, onmtError{Error: fmt.Sprintf(format, args...), Status: "error"}, none
	}
	if !s.ready.Load() {
		return fail("", http.StatusServiceUnavailable, "not ready: the models are loading")
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	var inputs []onmtInput
	if code, msg := s.readBodyWith(w, r, deadline, func(body io.Reader) (int, string) { return decodeOnmt(body, &inputs, s.cfg.MaxBodyBytes) }); code != 0 {
		return fail("", code, "%s", msg)
	}
	if len(inputs) == 0 {
		return fail("", http.StatusBadRequest, `no inputs: want [{"id": N, "src": "text"}, ...]`)
	}
	// The first input's id chooses the model of all, as in onmt_server.
	id := 0
	if raw := inputs[0].ID; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &id); err != nil {
			return fail("", http.StatusBadRequest, "[0].id = %s: want a model id, an integer", raw)
		}
	}
	om := s.cfg.Onmt.byID[id]
	if om == nil {
		return fail("", http.StatusNotFound, "%s", s.onmtNoModel(strconv.Itoa(id)))
	}
	// Each src is stripped of its white space, which its translation
	// gets back; one with nothing else is not translated ("" scored 0).
	var texts []string
	index := make([]int, len(inputs)) // -1: empty
	heads, tails := make([]string, len(inputs)), make([]string, len(inputs))
	for i, in := range inputs {
		if in.Src == nil {
			return fail(om.Name, http.StatusBadRequest, `[%d]: no "src": want {"id": N, "src": "text"}`, i)
		}
		src := *in.Src
		heads[i], tails[i] = pySpaces(src, false), pySpaces(src, true)
		text := pyStrip(src)
		if text == "" {
			index[i] = -1
			continue
		}
		index[i] = len(texts)
		texts = append(texts, text)
	}
	nBest := max(om.NBest, 1)
	lists := make([][]onmtResult, nBest)
	var res *Response
	release := none
	if len(texts) > 0 {
		req := om.Decoding
		req.Model, req.Inputs = om.Name, texts
		pretok := om.Pretokenized
		req.Pretokenized = &pretok
		m, code, resp, rel := s.translateRequest(ctx, w, r, &req, "")
		release = rel
		name := om.Name
		if m != nil {
			name = m.name
		}
		if code != http.StatusOK {
			if code == statusClientGone {
				return name, code, nil, release
			}
			msg := fmt.Sprint(resp)
			if e, ok := resp.(ErrorResponse); ok {
				msg = e.Error
			}
			return name, code, onmtError{Error: msg, Status: "error"}, release
		}
		res = resp.(*Response)
	}
	eos := int64(-1)
	if m := s.models[om.Name]; m != nil {
		eos = m.info.Special.EOS
	}
	for k := range nBest {
		lists[k] = make([]onmtResult, len(inputs))
		for i, in := range inputs {
			o := onmtResult{NBest: nBest, Src: *in.Src}
			if j := index[i]; j >= 0 {
				hyps := res.Results[j].Hypotheses
				if k >= len(hyps) {
					return om.Name, http.StatusInternalServerError, onmtError{Error: fmt.Sprintf("decoding failed: input %d has %d hypotheses, not n_best %d", i, len(hyps), nBest), Status: "error"}, release
				}
				h := hyps[k]
				o.PredScore = pyFloat(h.NormalizedScore)
				o.Tgt = h.Text
				if om.Pretokenized {
					pieces := h.OutputTokens
					if n := len(pieces); n > 0 && len(h.Tokens) == n && h.Tokens[n-1] == eos {
						pieces = pieces[:n-1]
					}
					o.Tgt = strings.Join(pieces, " ")
				}
			}
			o.Tgt = heads[i] + o.Tgt + tails[i]
			lists[k][i] = o
		}
	}
	return om.Name, http.StatusOK, lists, release
}

// decodeOnmt reads a translate body, a JSON list of inputs, into in. It
// returns 0 or the status and message of what is wrong with it.
func decodeOnmt(body io.Reader, in *[]onmtInput, limit int64) (int, string) {
	data, err := io.ReadAll(body)
	var tooBig *http.MaxBytesError
	var ne interface{ Timeout() bool }
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than the limit of %d bytes (--max-body); split the inputs into several requests", limit)
	case errors.As(err, &ne) && ne.Timeout():
		return http.StatusRequestTimeout, "the request body did not arrive in time"
	case err != nil:
		return http.StatusBadRequest, fmt.Sprintf("reading the body: %v", err)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		what := "empty"
		if len(trimmed) > 0 {
			what = "not a JSON list"
		}
		return http.StatusBadRequest, fmt.Sprintf(`body %s: want a JSON list of inputs, [{"id": N, "src": "text"}, ...]`, what)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return http.StatusBadRequest, fmt.Sprintf("body is not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	*in = make([]onmtInput, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &(*in)[i]); err != nil {
			return http.StatusBadRequest, fmt.Sprintf(`[%d] = %s: want an object {"id": N, "src": "text"}`, i, abbrev(string(r)))
		}
	}
	return 0, ""
}

// abbrev shortens s for an error message.
func abbrev(s string) string {
	if utf8.RuneCountInString(s) <= 60 {
		return s
	}
	return string([]rune(s)[:57]) + "..."
}

// pyIsSpace is Python's str.isspace for one character (what re's \s and
// str.strip take as white space): Unicode's, and the separators
// U+001C..U+001F.
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pyStrip is Python's str.strip().
func pyStrip(s string) string { return strings.TrimFunc(s, pyIsSpace) }

// pySpaces returns the white space s starts with, or with tail the white
// space it ends with (re.search(r"^\s+") and r"\s+$").
func pySpaces(s string, tail bool) string {
	if tail {
		return s[len(strings.TrimRightFunc(s, pyIsSpace)):]
	}
	return s[:len(s)-len(strings.TrimLeftFunc(s, pyIsSpace))]
}

// onmtWrite writes v as Flask 2's jsonify does: compact, every character
// outside ASCII escaped (\uXXXX, surrogate pairs past U+FFFF), a final
// newline.
func onmtWrite(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		buf.Reset()
		enc.Encode(onmtError{Error: "encoding the answer: " + err.Error(), Status: "error"})
	}
	out := make([]byte, 0, buf.Len())
	for _, r := range buf.String() {
		switch {
		case r < utf8.RuneSelf:
			out = append(out, byte(r))
		case r > 0xffff:
			r -= 0x10000
			out = fmt.Appendf(out, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(out)
}
