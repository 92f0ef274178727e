package quant

import (
	"fmt"
	"strings"
)

// Precision is the precision of an exported model's weights, as
// `attnx export --weights` and attnx.json's "weights" spell it. What each
// one stores in which form is decided by the graph builder (package
// attention, reduced.go) from the measurements of docs/quantization.md.
type Precision string

// The precisions.
const (
	// PrecisionFP32 keeps every weight float32: the exact model.
	PrecisionFP32 Precision = "fp32"
	// PrecisionInt8 stores the decoder step's products (classifier, attention
	// projections, recurrent cell) as int8 computed by standard ONNX
	// operators (DynamicQuantizeLinear, MatMulInteger), and the embedding
	// tables as int8 rows.
	PrecisionInt8 Precision = "int8"
	// PrecisionInt4 is PrecisionInt8 with the classifier, the bulk of the bytes read per
	// step, stored 4-bit for ONNX Runtime's com.microsoft MatMulNBits: such
	// a model runs on ONNX Runtime only.
	PrecisionInt4 Precision = "int4"
)

// Precisions lists every precision, float32 first.
var Precisions = []Precision{PrecisionFP32, PrecisionInt8, PrecisionInt4}

// ParsePrecision checks a precision name given by a user; "" is PrecisionFP32.
func ParsePrecision(s string) (Precision, error) {
	p := Precision(strings.TrimSpace(s))
	if p == "" {
		return PrecisionFP32, nil
	}
	for _, q := range Precisions {
		if p == q {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown weights precision %q (want fp32, int8 or int4)", s)
}

// ParsePrecisions parses a comma-separated list such as "fp32,int8,int4",
// refusing duplicates.
func ParsePrecisions(s string) ([]Precision, error) {
	var out []Precision
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		p, err := ParsePrecision(f)
		if err != nil {
			return nil, err
		}
		for _, q := range out {
			if q == p {
				return nil, fmt.Errorf("weights precision %s listed twice in %q", p, s)
			}
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no weights precision in %q (want some of fp32, int8, int4)", s)
	}
	return out, nil
}

// OrFP32 returns p, or PrecisionFP32 when p is empty (attnx.json files written
// before the precision was recorded).
func (p Precision) OrFP32() Precision {
	if p == "" {
		return PrecisionFP32
	}
	return p
}

// Reduced reports whether p stores any weight in less than float32.
func (p Precision) Reduced() bool { return p.OrFP32() != PrecisionFP32 }

// StandardOps reports whether a model of precision p uses standard ONNX
// operators only (so that onnx.checker accepts it and any runtime can run
// it); false for PrecisionInt4, which needs ONNX Runtime's com.microsoft domain.
func (p Precision) StandardOps() bool { return p.OrFP32() != PrecisionInt4 }
