package joeytest

import (
	"fmt"
	"sort"

	"github.com/attnx/attnx/mtscore"
)

// bleuKeys and chrfKeys are the arguments of sacreBLEU 2.6's BLEU and CHRF
// constructors: JoeyNMT's metrics pass the sacrebleu_cfg keys among them
// and drop the others.
var (
	bleuKeys = map[string]bool{"lowercase": true, "force": true, "tokenize": true, "smooth_method": true, "smooth_value": true,
		"max_ngram_order": true, "effective_order": true, "trg_lang": true, "references": true}
	chrfKeys = map[string]bool{"char_order": true, "word_order": true, "beta": true, "lowercase": true, "whitespace": true,
		"eps_smoothing": true, "references": true}
)

// bleu is JoeyNMT's metrics.bleu: sacreBLEU's corpus BLEU with the
// sacrebleu_cfg keys BLEU takes, and its signature.
func bleu(hyps, refs []string, cfg map[string]any) (float64, string, error) {
	var o mtscore.BLEUOptions
	for _, k := range sortedKeys(cfg) {
		if !bleuKeys[k] {
			continue
		}
		v := cfg[k]
		var err error
		switch k {
		case "lowercase":
			o.Lowercase, err = asBool(k, v)
		case "effective_order":
			o.EffectiveOrder, err = asBool(k, v)
		case "force":
			_, err = asBool(k, v) // a warning in sacreBLEU only
		case "tokenize":
			if v != nil {
				o.Tokenize, err = asString(k, v)
			}
		case "smooth_method":
			o.Smooth, err = asString(k, v)
		case "smooth_value":
			if v != nil {
				var f float64
				f, err = asFloat(k, v)
				o.SmoothValue = &f
			}
		case "max_ngram_order":
			var f float64
			f, err = asFloat(k, v)
			o.MaxOrder = int(f)
		case "trg_lang":
			var s string
			if s, err = asString(k, v); err == nil && (s == "zh" || s == "ja" || s == "ko") && cfg["tokenize"] == nil {
				err = fmt.Errorf("sacrebleu_cfg.trg_lang %q picks sacreBLEU's %s tokenizer, which attnx does not have (13a and none only)", s, s)
			}
		case "references":
			err = fmt.Errorf("sacrebleu_cfg.references: the references are the set's")
		}
		if err != nil {
			return 0, "", err
		}
	}
	s, err := mtscore.BLEU(hyps, [][]string{refs}, o)
	if err != nil {
		return 0, "", fmt.Errorf("sacrebleu_cfg: %w", err)
	}
	return s.Score, s.Signature(), nil
}

// chrf is JoeyNMT's metrics.chrf: sacreBLEU's corpus chrF with the keys
// CHRF takes, as a fraction (score / 100), and its signature.
func chrf(hyps, refs []string, cfg map[string]any) (float64, string, error) {
	var o mtscore.ChrFOptions
	for _, k := range sortedKeys(cfg) {
		if !chrfKeys[k] {
			continue
		}
		v := cfg[k]
		var err error
		var f float64
		switch k {
		case "lowercase":
			o.Lowercase, err = asBool(k, v)
		case "whitespace":
			o.Whitespace, err = asBool(k, v)
		case "eps_smoothing":
			o.EpsSmoothing, err = asBool(k, v)
		case "char_order":
			f, err = asFloat(k, v)
			o.CharOrder = int(f)
		case "word_order":
			f, err = asFloat(k, v)
			o.WordOrder = int(f)
		case "beta":
			f, err = asFloat(k, v)
			o.Beta = int(f)
		case "references":
			err = fmt.Errorf("sacrebleu_cfg.references: the references are the set's")
		}
		if err != nil {
			return 0, "", err
		}
	}
	s, err := mtscore.ChrF(hyps, [][]string{refs}, o)
	if err != nil {
		return 0, "", fmt.Errorf("sacrebleu_cfg: %w", err)
	}
	return s.Score / 100, s.Signature(), nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func asBool(k string, v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("sacrebleu_cfg.%s: %v is not true or false", k, v)
	}
	return b, nil
}

func asString(k string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("sacrebleu_cfg.%s: %v is not a string", k, v)
	}
	return s, nil
}

func asFloat(k string, v any) (float64, error) {
	switch x := v.(type) {
	case int:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return 0, fmt.Errorf("sacrebleu_cfg.%s: %v is not a number", k, v)
}

// TokenAccuracy is JoeyNMT's token_accuracy: the hypothesis tokens equal
// to the reference's at the same position, in percent of the hypothesis
// tokens (0 when there are none); tok is the target tokenizer.
func TokenAccuracy(hyps, refs []string, tok func(string) []string) float64 {
	correct, all := 0, 0
	for i := range hyps {
		h, r := tok(hyps[i]), tok(refs[i])
		all += len(h)
		for j := 0; j < len(h) && j < len(r); j++ {
			if h[j] == r[j] {
				correct++
			}
		}
	}
	if all == 0 {
		return 0
	}
	return float64(correct) / float64(all) * 100
}

// SequenceAccuracy is JoeyNMT's sequence_accuracy: the hypotheses equal to
// their reference, in percent (0 for none).
func SequenceAccuracy(hyps, refs []string) float64 {
	if len(hyps) == 0 {
		return 0
	}
	n := 0
	for i := range hyps {
		if hyps[i] == refs[i] {
			n++
		}
	}
	return float64(n) / float64(len(hyps)) * 100
}
