package mtscore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Version is the version field of the signatures: sacreBLEU 2.6.0's
// algorithm, computed by attnx.
const Version = "2.6.0-attnx"

// Score is a corpus score: BLEU or chrF.
type Score interface {
	// Name is the metric's: "BLEU", or "chrF2" ("chrF2++" with word
	// n-grams).
	Name() string
	// Value is the score, from 0 to 100.
	Value() float64
	// Verbose is what sacreBLEU's score line gives after the score
	// (BLEU's precisions and lengths; empty for chrF).
	Verbose() string
	// Signature is sacreBLEU's signature of the settings that made it.
	Signature() string
}

func nrefs(n int) string {
	if n < 0 {
		return "var"
	}
	return strconv.Itoa(n)
}

func caseName(lower bool) string {
	if lower {
		return "lc"
	}
	return "mixed"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Line is sacreBLEU's score line: "NAME|SIGNATURE = SCORE VERBOSE", the
// score with width decimals (sacreBLEU's --width, default 2).
func Line(s Score, width int) string {
	line := fmt.Sprintf("%s|%s = %.*f", s.Name(), s.Signature(), width, s.Value())
	if v := s.Verbose(); v != "" {
		line += " " + v
	}
	return line
}

// JSON is sacreBLEU's --format json object: name, score (rounded to width
// decimals), signature, verbose_score and each signature field.
func JSON(s Score, width int) ([]byte, error) {
	rounded, _ := strconv.ParseFloat(strconv.FormatFloat(s.Value(), 'f', width, 64), 64)
	score := strconv.FormatFloat(rounded, 'g', -1, 64)
	if !strings.ContainsAny(score, ".eIN") {
		score += ".0" // as Python prints a float
	}
	type field struct {
		k string
		v any
	}
	fields := []field{{"name", s.Name()}, {"score", json.RawMessage(score)}, {"signature", s.Signature()}}
	if v := s.Verbose(); v != "" {
		fields = append(fields, field{"verbose_score", v})
	}
	for _, kv := range strings.Split(s.Signature(), "|") {
		k, v, _ := strings.Cut(kv, ":")
		fields = append(fields, field{k, v})
	}
	// an object with sacreBLEU's key order
	var b strings.Builder
	b.WriteString("{\n")
	for i, f := range fields {
		k, _ := json.Marshal(f.k)
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, " %s: %s", k, v)
		if i < len(fields)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}")
	return []byte(b.String()), nil
}
