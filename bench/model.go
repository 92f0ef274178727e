package bench

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
)

// suppressedBias is written into decoder.classifier.bias[EOS] so that the
// decoders never emit EOS and every engine decodes exactly Config.Steps
// steps: |W_cls f| is bounded by the weights' sizes, far below 1e9 for any
// trained or random model, so argmax never lands on EOS while the other
// logits stay untouched.
const suppressedBias = -1e9

// RandomStateDict returns a seeded random state_dict of the spec's layout
// (docs/models.md) for arch, initialised like PyTorch's defaults:
// uniform in [-1/sqrt(H), 1/sqrt(H)], embeddings N(0, 1).
func RandomStateDict(arch attention.Arch, hidden, layers, srcVocab, tgtVocab int, seed uint64) (map[string]*builder.Tensor, error) {
	if hidden < 1 || layers < 1 || srcVocab < 1 || tgtVocab < 1 {
		return nil, fmt.Errorf("bench: random model H=%d L=%d Vs=%d Vt=%d: every size must be >= 1", hidden, layers, srcVocab, tgtVocab)
	}
	H := int64(hidden)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	k := 1 / math.Sqrt(float64(hidden))
	uniform := func(dims ...int64) *builder.Tensor {
		n := builder.NumElements(dims)
		raw := make([]byte, 4*n)
		for i := int64(0); i < n; i++ {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32((2*rng.Float64()-1)*k)))
		}
		return &builder.Tensor{DType: builder.Float, Dims: dims, Raw: raw}
	}
	normal := func(dims ...int64) *builder.Tensor {
		n := builder.NumElements(dims)
		raw := make([]byte, 4*n)
		for i := int64(0); i < n; i++ {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(rng.NormFloat64())))
		}
		return &builder.Tensor{DType: builder.Float, Dims: dims, Raw: raw}
	}
	sd := map[string]*builder.Tensor{
		"encoder.embedding.weight": normal(int64(srcVocab), H),
		"decoder.embedding.weight": normal(int64(tgtVocab), H),
		"decoder.classifier.bias":  uniform(int64(tgtVocab)),
	}
	for _, part := range []string{"encoder", "decoder"} {
		for l := 0; l < layers; l++ {
			in := H
			if part == "decoder" && l == 0 && arch == attention.Bahdanau {
				in = 2 * H
			}
			sd[fmt.Sprintf("%s.lstm.weight_ih_l%d", part, l)] = uniform(4*H, in)
			sd[fmt.Sprintf("%s.lstm.weight_hh_l%d", part, l)] = uniform(4*H, H)
			sd[fmt.Sprintf("%s.lstm.bias_ih_l%d", part, l)] = uniform(4 * H)
			sd[fmt.Sprintf("%s.lstm.bias_hh_l%d", part, l)] = uniform(4 * H)
		}
	}
	switch arch {
	case attention.Bahdanau:
		sd["decoder.fc_hidden.weight"] = uniform(H, H)
		sd["decoder.fc_encoder.weight"] = uniform(H, H)
		sd["decoder.weight"] = uniform(1, H)
		sd["decoder.classifier.weight"] = uniform(int64(tgtVocab), H)
	case attention.LuongDot, attention.LuongGeneral, attention.LuongConcat:
		sd["decoder.classifier.weight"] = uniform(int64(tgtVocab), 2*H)
		if arch != attention.LuongDot {
			sd["decoder.attention.fc.weight"] = uniform(H, H)
		}
		if arch == attention.LuongConcat {
			sd["decoder.attention.weight"] = uniform(1, H)
		}
	default:
		return nil, fmt.Errorf("bench: unknown arch %q (want bahdanau, luong-dot, luong-general or luong-concat)", arch)
	}
	return sd, nil
}

// SuppressEOS returns a copy of the state_dict whose classifier bias at eos
// is suppressedBias, so that greedy decoding never stops early. Only the
// bias is copied; the other tensors are shared.
func SuppressEOS(sd map[string]*builder.Tensor, eos int64) (map[string]*builder.Tensor, error) {
	b, ok := sd["decoder.classifier.bias"]
	if !ok {
		return nil, fmt.Errorf("bench: checkpoint has no decoder.classifier.bias to suppress EOS with")
	}
	v, err := b.ToFloat32()
	if err != nil {
		return nil, fmt.Errorf("bench: decoder.classifier.bias: %w", err)
	}
	if eos < 0 || eos >= int64(len(v)) {
		return nil, fmt.Errorf("bench: EOS id %d outside the target vocabulary [0, %d)", eos, len(v))
	}
	v[eos] = suppressedBias
	out := make(map[string]*builder.Tensor, len(sd))
	for k, t := range sd {
		out[k] = t
	}
	nb := builder.FloatTensor(b.Dims, v)
	nb.Name = b.Name
	out["decoder.classifier.bias"] = nb
	return out, nil
}

// randomSources returns source ids [B*S] (avoiding the special ids 0..3
// when the vocabulary allows) and full lengths [B].
func randomSources(batch, srcLen, srcVocab int, seed uint64) (ids, lens []int64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	low := 0
	if srcVocab > 4 {
		low = 4
	}
	ids = make([]int64, batch*srcLen)
	for i := range ids {
		ids[i] = int64(low + rng.IntN(srcVocab-low))
	}
	lens = make([]int64, batch)
	for i := range lens {
		lens[i] = int64(srcLen)
	}
	return ids, lens
}

// writeInputs writes source_ids and source_lengths as safetensors for bench.py.
func writeInputs(path string, batch, srcLen int, ids, lens []int64) error {
	return checkpoint.WriteSafetensors(path, map[string]*builder.Tensor{
		"source_ids":     builder.Int64Tensor([]int64{int64(batch), int64(srcLen)}, ids),
		"source_lengths": builder.Int64Tensor([]int64{int64(batch)}, lens),
	}, nil)
}
