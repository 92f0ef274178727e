package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"

	"github.com/attnx/attnx/translate"
)

// The translation answer is most of what the server writes, and most of
// it is attention weights: appendResponse writes it without reflection
// into a reused buffer, byte for byte as encoding/json would (with HTML
// escaping off), which the tests check.

// bufPool holds answer buffers for reuse.
var bufPool = sync.Pool{New: func() any { return new([]byte) }}

// writeResponse writes r with status 200.
func writeResponse(w http.ResponseWriter, r *Response) {
	bp := bufPool.Get().(*[]byte)
	b, err := appendResponse((*bp)[:0], r)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encoding the answer: "+err.Error())
	} else {
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{strconv.Itoa(len(b))}
		w.WriteHeader(http.StatusOK)
		w.Write(b)
	}
	if cap(b) <= 1<<20 { // do not keep the odd huge answer
		*bp = b
		bufPool.Put(bp)
	}
}

// appendResponse appends r as encoding/json encodes it, then a newline.
func appendResponse(b []byte, r *Response) ([]byte, error) {
	b = append(b, `{"model":`...)
	b = appendString(b, r.Model)
	b = append(b, `,"results":`...)
	if r.Results == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Results {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendResult(b, &r.Results[i]); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	if len(r.Notes) > 0 {
		b = append(b, `,"notes":`...)
		b = appendStrings(b, r.Notes)
	}
	return append(b, "}\n"...), nil
}

func appendResult(b []byte, r *translate.ResultJSON) ([]byte, error) {
	b = append(b, `{"input":`...)
	b = appendString(b, r.Input)
	b = append(b, `,"source_ids":`...)
	b = appendInts(b, r.SourceIDs)
	if len(r.SourceTokens) > 0 {
		b = append(b, `,"source_tokens":`...)
		b = appendStrings(b, r.SourceTokens)
	}
	b = append(b, `,"tokens":`...)
	b = appendInts(b, r.Tokens)
	if len(r.OutputTokens) > 0 {
		b = append(b, `,"output_tokens":`...)
		b = appendStrings(b, r.OutputTokens)
	}
	b = append(b, `,"text":`...)
	b = appendString(b, r.Text)
	// omitempty, as encoding/json writes the field.
	if len(r.Attention) > 0 {
		b = append(b, `,"attention":`...)
		b = append(b, '[')
		for i, row := range r.Attention {
			if i > 0 {
				b = append(b, ',')
			}
			if row == nil {
				b = append(b, "null"...)
				continue
			}
			b = append(b, '[')
			for j, x := range row {
				if j > 0 {
					b = append(b, ',')
				}
				var err error
				if b, err = appendFloat32(b, x); err != nil {
					return b, fmt.Errorf("attention[%d][%d]: %w", i, j, err)
				}
			}
			b = append(b, ']')
		}
		b = append(b, ']')
	}
	b = appendAlignment(b, r.Alignment)
	if len(r.Hypotheses) > 0 { // omitempty
		b = append(b, `,"hypotheses":[`...)
		for i := range r.Hypotheses {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendHypothesis(b, &r.Hypotheses[i]); err != nil {
				return b, fmt.Errorf("hypotheses[%d]: %w", i, err)
			}
		}
		b = append(b, ']')
	}
	var err error
	if b, err = appendScore(b, `,"score":`, r.Score); err != nil {
		return b, fmt.Errorf("score: %w", err)
	}
	if b, err = appendScore(b, `,"normalized_score":`, r.NormalizedScore); err != nil {
		return b, fmt.Errorf("normalized_score: %w", err)
	}
	if b, err = appendFloats(b, `,"positional_scores":`, r.PositionalScores); err != nil {
		return b, fmt.Errorf("positional_scores%w", err)
	}
	if r.ScoreBase != "" { // omitempty
		b = append(b, `,"score_base":`...)
		b = appendString(b, r.ScoreBase)
	}
	return append(b, '}'), nil
}

func appendHypothesis(b []byte, h *translate.HypothesisJSON) ([]byte, error) {
	b = append(b, `{"tokens":`...)
	b = appendInts(b, h.Tokens)
	if len(h.OutputTokens) > 0 {
		b = append(b, `,"output_tokens":`...)
		b = appendStrings(b, h.OutputTokens)
	}
	b = append(b, `,"text":`...)
	b = appendString(b, h.Text)
	b = append(b, `,"score":`...)
	var err error
	if b, err = appendFloat32(b, h.Score); err != nil {
		return b, fmt.Errorf("score: %w", err)
	}
	b = append(b, `,"normalized_score":`...)
	if b, err = appendFloat32(b, h.NormalizedScore); err != nil {
		return b, fmt.Errorf("normalized_score: %w", err)
	}
	if b, err = appendFloats(b, `,"positional_scores":`, h.PositionalScores); err != nil {
		return b, fmt.Errorf("positional_scores%w", err)
	}
	return append(appendAlignment(b, h.Alignment), '}'), nil
}

// appendAlignment appends the "alignment" key and its [src, tgt] pairs,
// nothing when there are none (omitempty).
func appendAlignment(b []byte, links [][2]int) []byte {
	if len(links) == 0 {
		return b
	}
	b = append(b, `,"alignment":[`...)
	for i, l := range links {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(l[0]), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(l[1]), 10)
		b = append(b, ']')
	}
	return append(b, ']')
}

// appendScore appends key and *x, nothing when x is nil (omitempty).
func appendScore(b []byte, key string, x *float32) ([]byte, error) {
	if x == nil {
		return b, nil
	}
	return appendFloat32(append(b, key...), *x)
}

// appendFloats appends key and xs as a JSON array, nothing when xs is
// empty (omitempty); the error names the bad element's index ("[3]: ...").
func appendFloats(b []byte, key string, xs []float32) ([]byte, error) {
	if len(xs) == 0 {
		return b, nil
	}
	b = append(append(b, key...), '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendFloat32(b, x); err != nil {
			return b, fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return append(b, ']'), nil
}

// appendStrings appends xs as a JSON array of strings.
func appendStrings(b []byte, xs []string) []byte {
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, x)
	}
	return append(b, ']')
}

func appendInts(b []byte, xs []int64) []byte {
	if xs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, x, 10)
	}
	return append(b, ']')
}

// appendFloat32 writes x as a JSON number the way encoding/json does for a
// float32: the shortest decimal that reads back as x, in plain notation
// unless |x| < 1e-6 or |x| >= 1e21, with exponents not padded.
func appendFloat32(b []byte, x float32) ([]byte, error) {
	if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
		return b, fmt.Errorf("%v is not a JSON number", x)
	}
	a := float32(math.Abs(float64(x)))
	if a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.AppendFloat(b, float64(x), 'f', -1, 32), nil
	}
	start := len(b)
	b = strconv.AppendFloat(b, float64(x), 'e', -1, 32)
	// strconv writes at least two exponent digits (1e-07); JSON writers
	// following ECMAScript write 1e-7.
	if e := bytes.LastIndexByte(b[start:], 'e'); e >= 0 {
		exp := b[start+e+1:]
		if len(exp) == 3 && exp[1] == '0' {
			exp[1] = exp[2]
			b = b[:len(b)-1]
		}
	}
	return b, nil
}

// appendString writes s as a JSON string. Plain printable ASCII, which is
// what the texts and tokens of most models are, is copied as it is; any
// other string is left to encoding/json (HTML escaping off), so that
// escapes, invalid UTF-8 and U+2028/U+2029 come out exactly as there.
func appendString(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
