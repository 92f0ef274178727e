package checkpoint

import (
	"fmt"
	"sort"
)

// Chatbot is what PyTorch's chatbot tutorial checkpoint holds beside the
// weights: its Voc's vocabulary (voc_dict) and the special tokens' ids.
type Chatbot struct {
	// Vocab is index2word as a list, index = id.
	Vocab []string
	// PAD, SOS and EOS are the ids of the tutorial's PAD, SOS and EOS
	// tokens (0, 1 and 2 in the tutorial).
	PAD, SOS, EOS int64
	// Iteration is the training iteration saved.
	Iteration int64
}

// ReadChatbot reads the chatbot tutorial's vocabulary from sd's voc_dict:
// index2word (id -> word), num_words of them.
func ReadChatbot(sd *StateDict, path string) (*Chatbot, error) {
	if sd.Origin == nil || sd.Origin.Toolkit != ToolkitChatbot {
		return nil, fmt.Errorf("%s: not a chatbot tutorial checkpoint (no en, de and voc_dict entries)", path)
	}
	voc, ok := sd.Origin.Entries["voc_dict"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: voc_dict is %s, not the Voc's __dict__", path, describePlain(sd.Origin.Entries["voc_dict"]))
	}
	c := &Chatbot{PAD: -1, SOS: -1, EOS: -1}
	c.Iteration, _ = sd.Origin.Entries["iteration"].(int64)
	n, ok := voc["num_words"].(int64)
	if !ok || n < 1 || n > 1<<24 {
		return nil, fmt.Errorf("%s: voc_dict['num_words'] is %v, want a positive count", path, voc["num_words"])
	}
	words := map[int64]string{}
	switch iw := voc["index2word"].(type) {
	case []any: // a dict with int keys: (key, value) pairs
		for _, e := range iw {
			p, ok := e.([2]any)
			id, okID := p[0].(int64)
			w, okW := p[1].(string)
			if !ok || !okID || !okW {
				return nil, fmt.Errorf("%s: voc_dict['index2word'] has an entry %v, want int -> word", path, e)
			}
			words[id] = w
		}
	case map[string]any:
		if len(iw) > 0 {
			return nil, fmt.Errorf("%s: voc_dict['index2word'] has string keys, want ids", path)
		}
	default:
		return nil, fmt.Errorf("%s: voc_dict['index2word'] is %s, want a dict of id -> word", path, describePlain(voc["index2word"]))
	}
	c.Vocab = make([]string, n)
	var missing []int64
	for id := int64(0); id < n; id++ {
		w, ok := words[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		c.Vocab[id] = w
		switch w {
		case "PAD":
			c.PAD = id
		case "SOS":
			c.SOS = id
		case "EOS":
			c.EOS = id
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: voc_dict['index2word'] lacks %d of the num_words %d ids (first %d)", path, len(missing), n, missing[0])
	}
	var extra []int64
	for id := range words {
		if id < 0 || id >= n {
			extra = append(extra, id)
		}
	}
	if len(extra) > 0 {
		sort.Slice(extra, func(i, j int) bool { return extra[i] < extra[j] })
		return nil, fmt.Errorf("%s: voc_dict['index2word'] has id %d, outside num_words %d", path, extra[0], n)
	}
	for _, t := range []struct {
		name string
		id   int64
	}{{"PAD", c.PAD}, {"SOS", c.SOS}, {"EOS", c.EOS}} {
		if t.id < 0 {
			return nil, fmt.Errorf("%s: voc_dict['index2word'] has no %s token (the tutorial's index2word starts PAD, SOS, EOS)", path, t.name)
		}
	}
	return c, nil
}
