package translate

import (
	"fmt"
	"path/filepath"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/decode"
)

// EncodePrefixes tokenises target prefixes (text, with the target side's
// tokenizer or vocabulary as Score reads references, or pieces with
// Options.Pretokenized) into the ids CallOptions.Prefixes takes, EOS not
// appended: the start of each translation that the user typed. A blank
// text is no prefix (nil). A piece outside the target vocabulary of a
// model without an unknown token is an *InputError naming the row.
func (t *Translator) EncodePrefixes(texts []string) ([][]int64, error) {
	if !t.tgt.known() {
		return nil, &RequestError{Row: -1, Err: fmt.Errorf("translate: prefixes: %s has no target vocabulary to read prefixes with", filepath.Join(t.dir, "attnx.json"))}
	}
	out := make([][]int64, len(texts))
	for i, s := range texts {
		if blank(s) {
			continue
		}
		ids, err := t.tgt.encode(i, s, t.tgtUNK >= 0, t.tgtUNK, nil, t.opt.Pretokenized, nil)
		if err != nil {
			return nil, err
		}
		out[i] = ids
	}
	return out, nil
}

// rowPrefix returns row r's prefix (searchOpts.prefixes).
func (so searchOpts) rowPrefix(r int) []int64 {
	if r < len(so.prefixes) {
		return so.prefixes[r]
	}
	return nil
}

// checkPrefixes refuses, before anything runs, prefixes that are not one
// per row, and a row's prefix with an id outside the target vocabulary,
// with EOS or PAD (a prefix is the start of the output, which the search
// ends), or as long as the row's output limit l (EOS must still fit
// after it; OpenNMT-py's rules raise the limit by the prefix instead).
func (t *Translator) checkPrefixes(rows int, so searchOpts) error {
	if so.prefixes == nil {
		return nil
	}
	if len(so.prefixes) != rows {
		return &RequestError{Row: min(rows, len(so.prefixes)), Err: fmt.Errorf("translate: CallOptions.Prefixes: %d prefixes for %d sources: want one per source (nil for none)", len(so.prefixes), rows)}
	}
	if so.beam > 1 && !so.openNMT && !so.fairseq {
		// The spec's and JoeyNMT's beams finish a hypothesis on an EOS
		// candidate of -inf, which a forced step makes of every slot's.
		return optionErrorf("Prefixes", "translate: CallOptions.Prefixes with Beam %d under Rules %q: prefixes are beam-searched under Rules %q or %q (the toolkits that force them), or decoded greedily under any rules", so.beam, so.rulesName(), RulesOpenNMT, RulesFairseq)
	}
	return nil
}

// checkPrefix refuses row r's prefix under limits l (checkPrefixes).
func (t *Translator) checkPrefix(r int, so searchOpts, l Limits) error {
	p := so.rowPrefix(r)
	vt := int64(t.info.TgtVocab)
	sp := t.info.Special
	for j, id := range p {
		switch {
		case id < 0 || id >= vt:
			return &InputError{Row: r, Position: j, Msg: fmt.Sprintf("prefix id %d at position %d: want 0 to %d (the target vocabulary)", id, j, vt-1)}
		case id == sp.EOS || id == sp.PAD && sp.PAD >= 0:
			return &InputError{Row: r, Position: j, Msg: fmt.Sprintf("prefix id %d at position %d is the target's EOS or PAD token: a prefix is the start of the output, before its end", id, j)}
		}
	}
	if len(p) > 0 && len(p) >= l.Max {
		return &InputError{Row: r, Position: -1, Msg: fmt.Sprintf("prefix of %d tokens does not leave room for EOS in this input's output limit of %d tokens, EOS included: shorten the prefix or raise MaxLen", len(p), l.Max)}
	}
	return nil
}

// prefixed wraps each search of a row with a prefix (so.prefixes) in a
// decode.Prefix, under the rules' toolkit's ways: OpenNMT-py's
// target_prefixing takes 10000 from the other tokens and its
// DecodeStrategy.initialize adds the prefix's length to -max_length and
// -min_length; fairseq's _prefix_tokens (and the spec's and JoeyNMT's
// rules here) set them to -inf within the same limits.
func (t *Translator) prefixed(ss []decode.Search, so searchOpts) []decode.Search {
	if so.prefixes == nil {
		return ss
	}
	fill := decode.PrefixInf
	if so.openNMT {
		fill = decode.PrefixMinus10000
	}
	for r, s := range ss {
		p := so.rowPrefix(r)
		if len(p) == 0 {
			continue
		}
		if so.openNMT {
			onmtPrefixMinLen(s, len(p))
		}
		ss[r] = &decode.Prefix{Search: s, Tokens: p, Fill: fill}
	}
	return ss
}

// prefixLimits are row r's limits l with its prefix: under OpenNMT-py's
// rules -max_length and -min_length grow by the prefix's tokens, as
// DecodeStrategy.initialize does (OpenNMT-py by the batch's longest and
// shortest prefix; here each row by its own, the same when a batch's
// prefixes are of one length). The search's MaxLen is l.Max
// (rowLimit); its minimum length is onmtPrefixMinLen's.
func (so searchOpts) prefixLimits(r int, l Limits) Limits {
	if n := len(so.rowPrefix(r)); n > 0 && so.openNMT {
		l.Max += n
		if l.Min > 0 {
			l.Min += n
		}
	}
	return l
}

// onmtPrefixMinLen raises an OpenNMT-py search's -min_length (its rules'
// EOSFromStep) by the prefix's n tokens (prefixLimits).
func onmtPrefixMinLen(s decode.Search, n int) {
	minLen := func(r **attention.Rules) {
		if *r != nil && (*r).EOSFromStep > 0 {
			*r = withMinLen(*r, (*r).EOSFromStep+n)
		}
	}
	switch s := s.(type) {
	case *decode.OpenNMTBeam:
		minLen(&s.Rules)
	case *decode.OpenNMTSample:
		minLen(&s.Rules)
	case *decode.Greedy:
		minLen(&s.Rules)
	}
}

// unprefixed returns the search a decode.Prefix wraps, or s.
func unprefixed(s decode.Search) decode.Search {
	if p, ok := s.(*decode.Prefix); ok {
		return p.Search
	}
	return s
}

// keptPrefixes returns the prefixes of texts' rows that are not blank
// (those translateTexts decodes), refusing prefixes that are not one per
// text.
func keptPrefixes(texts []string, prefixes [][]int64) ([][]int64, error) {
	if prefixes == nil {
		return nil, nil
	}
	if len(prefixes) != len(texts) {
		return nil, &RequestError{Row: min(len(texts), len(prefixes)), Err: fmt.Errorf("translate: CallOptions.Prefixes: %d prefixes for %d texts: want one per text (nil for none)", len(prefixes), len(texts))}
	}
	kept := make([][]int64, 0, len(texts))
	for i, s := range texts {
		if !blank(s) {
			kept = append(kept, prefixes[i])
		}
	}
	return kept, nil
}
