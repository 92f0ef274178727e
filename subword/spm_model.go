package subword

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// SentencePiece model files (.model) are serialised sentencepiece.ModelProto
// messages. This file is the one place of package subword that reads the
// protobuf wire format; it decodes the fields that encoding and decoding
// need, by their numbers in sentencepiece_model.proto, and skips the rest.

// Piece types (ModelProto.SentencePiece.Type).
const (
	pieceNormal      = 1
	pieceUnknown     = 2
	pieceControl     = 3
	pieceUserDefined = 4
	pieceUnused      = 5
	pieceByte        = 6
)

// Model types (TrainerSpec.ModelType).
const (
	modelUnigram = 1
	modelBPE     = 2
	modelWord    = 3
	modelChar    = 4
)

var modelTypeNames = map[int]string{modelUnigram: "unigram", modelBPE: "bpe", modelWord: "word", modelChar: "char"}

type spmPiece struct {
	text  string
	score float32
	typ   int
}

type spmNormalizer struct {
	name           string
	charsmap       []byte
	addDummyPrefix bool
	removeExtraWS  bool
	escapeWS       bool
	present        bool
}

type spmProto struct {
	pieces       []spmPiece
	modelType    int
	byteFallback bool
	wsAsSuffix   bool
	unkSurface   string
	normalizer   spmNormalizer
	denormalizer spmNormalizer
}

// parseSPM decodes a ModelProto. Field defaults are those of the .proto
// (model_type UNIGRAM, add_dummy_prefix, remove_extra_whitespaces and
// escape_whitespaces true, unk_surface " ⁇ ").
func parseSPM(b []byte) (*spmProto, error) {
	m := &spmProto{modelType: modelUnigram, unkSurface: " \u2047 "}
	m.normalizer = defaultNormalizer()
	m.denormalizer = defaultNormalizer()
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			p, err := parsePiece(v)
			if err != nil {
				return fmt.Errorf("piece %d: %w", len(m.pieces), err)
			}
			m.pieces = append(m.pieces, p)
		case num == 2 && typ == protowire.BytesType:
			return parseTrainerSpec(v, m)
		case num == 3 && typ == protowire.BytesType:
			n, err := parseNormalizerSpec(v)
			m.normalizer = n
			return err
		case num == 5 && typ == protowire.BytesType:
			n, err := parseNormalizerSpec(v)
			m.denormalizer = n
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func defaultNormalizer() spmNormalizer {
	return spmNormalizer{addDummyPrefix: true, removeExtraWS: true, escapeWS: true}
}

func parsePiece(b []byte) (spmPiece, error) {
	p := spmPiece{typ: pieceNormal}
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			p.text = string(v)
		case num == 2 && typ == protowire.Fixed32Type:
			p.score = math.Float32frombits(uint32(x))
		case num == 3 && typ == protowire.VarintType:
			p.typ = int(x)
		}
		return nil
	})
	return p, err
}

func parseTrainerSpec(b []byte, m *spmProto) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 3 && typ == protowire.VarintType:
			m.modelType = int(x)
		case num == 35 && typ == protowire.VarintType:
			m.byteFallback = x != 0
		case num == 24 && typ == protowire.VarintType:
			m.wsAsSuffix = x != 0
		case num == 44 && typ == protowire.BytesType:
			m.unkSurface = string(v)
		}
		return nil
	})
}

func parseNormalizerSpec(b []byte) (spmNormalizer, error) {
	n := defaultNormalizer()
	n.present = true
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			n.name = string(v)
		case num == 2 && typ == protowire.BytesType:
			n.charsmap = append([]byte(nil), v...)
		case num == 3 && typ == protowire.VarintType:
			n.addDummyPrefix = x != 0
		case num == 4 && typ == protowire.VarintType:
			n.removeExtraWS = x != 0
		case num == 5 && typ == protowire.VarintType:
			n.escapeWS = x != 0
		}
		return nil
	})
	return n, err
}

// eachField calls f for every field of message b: v holds a length-delimited
// field's bytes, x a varint or fixed field's value.
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("malformed protobuf tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var u uint32
			u, n = protowire.ConsumeFixed32(b)
			x = uint64(u)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("malformed protobuf field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := f(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}
