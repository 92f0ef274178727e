package bench

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
)

// suppressedBias is written into the classifier's bias at EOS so that the
// decoders never emit EOS and every engine decodes exactly Config.Steps
// steps: |W_cls f| is bounded by the weights' sizes, far below 1e9 for any
// trained or random model, so argmax never lands on EOS while the other
// logits stay untouched.
const suppressedBias = -1e9

// RandomStateDict returns a seeded random state_dict of cfg's
// architecture, cell and sizes, with the keys attention.ExpectedKeys lists
// (the optional ones left out), initialised like PyTorch's defaults:
// embeddings N(0, 1), every other tensor uniform in [-1/sqrt(H), 1/sqrt(H)].
func RandomStateDict(cfg attention.Config, seed uint64) (map[string]*builder.Tensor, error) {
	if cfg.Hidden < 1 || cfg.Layers < 1 || cfg.SrcVocab < 1 || cfg.TgtVocab < 1 {
		return nil, fmt.Errorf("bench: random model H=%d L=%d Vs=%d Vt=%d: every size must be >= 1", cfg.Hidden, cfg.Layers, cfg.SrcVocab, cfg.TgtVocab)
	}
	keys, err := attention.ExpectedKeys(cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: random model: %w", err)
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	k := 1 / math.Sqrt(float64(cfg.Hidden))
	sd := map[string]*builder.Tensor{}
	for _, key := range keys {
		if key.Optional {
			continue
		}
		embedding := strings.HasSuffix(key.Key, "embedding.weight") || strings.HasSuffix(key.Key, "emb_luts.0.weight") || strings.HasSuffix(key.Key, "lut.weight")
		n := builder.NumElements(key.Dims)
		raw := make([]byte, 4*n)
		for i := int64(0); i < n; i++ {
			v := (2*rng.Float64() - 1) * k
			if embedding {
				v = rng.NormFloat64()
			}
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(v)))
		}
		sd[key.Key] = &builder.Tensor{DType: builder.Float, Dims: key.Dims, Raw: raw}
	}
	return sd, nil
}

// ToolkitConfig completes a random model's configuration for a toolkit's
// architecture with that toolkit's usual choices: a bidirectional encoder
// of h = H/2 per direction (OpenNMT-py's brnn; the others' encoders, whose
// outputs are 2h = H wide), input feeding where the toolkit has it, and
// its default bridge; the chatbot's and bentrevett's models are GRUs, the
// latter with one layer; fairseq's an LSTM.
func ToolkitConfig(cfg attention.Config) attention.Config {
	cfg.Bidirectional = true
	a := string(cfg.Arch)
	switch {
	case strings.HasPrefix(a, "onmt-"):
		cfg.EncoderHidden, cfg.InputFeed = cfg.Hidden/2, true
	case strings.HasPrefix(a, "joey-"):
		cfg.EncoderHidden, cfg.InputFeed, cfg.Bridge = cfg.Hidden/2, true, "bridge"
	case cfg.Arch == attention.Bentrevett:
		cfg.Cell, cfg.Layers, cfg.EncoderHidden = attention.GRU, 1, cfg.Hidden/2
	case strings.HasPrefix(a, "fairseq-"):
		// fairseq's LSTMModel: its encoder's layers are the decoder's, h =
		// H/2 per direction (no state projection), input feeding always.
		cfg.Cell, cfg.EncoderHidden, cfg.InputFeed = attention.LSTM, cfg.Hidden/2, true
	default: // the chatbot: one size everywhere
		cfg.Cell = attention.GRU
	}
	return cfg
}

// classifierBiases are the keys of the classifier's bias: the article's
// and the tutorial's names.
var classifierBiases = []string{"decoder.classifier.bias", "decoder.out.bias", "generator.bias", "decoder.fc_out.bias", "generator.linear.bias"}

// SuppressEOS returns a copy of the state_dict whose classifier bias at eos
// is suppressedBias, so that greedy decoding never stops early. Only the
// bias is copied; the other tensors are shared.
func SuppressEOS(sd map[string]*builder.Tensor, eos int64) (map[string]*builder.Tensor, error) {
	var name string
	for _, k := range classifierBiases {
		if _, ok := sd[k]; ok {
			name = k
			break
		}
	}
	if name == "" {
		return nil, fmt.Errorf("bench: checkpoint has no %s to suppress EOS with", strings.Join(classifierBiases, " or "))
	}
	nb, n, ok, err := sd[name].WithFloat32At(eos, suppressedBias)
	switch {
	case err != nil:
		return nil, fmt.Errorf("bench: %s: %w", name, err)
	case !ok:
		return nil, fmt.Errorf("bench: EOS id %d outside the target vocabulary [0, %d)", eos, n)
	}
	out := make(map[string]*builder.Tensor, len(sd))
	for k, t := range sd {
		out[k] = t
	}
	out[name] = nb
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
