package subword

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/attnx/attnx/internal/mergeheap"
)

// SentencePiece segments text the way a trained SentencePiece model
// (a .model file of spm_train, the "sentencepiece" transform of OpenNMT-py
// and JoeyNMT) does: normalisation by the model's rules, then unigram
// Viterbi segmentation or BPE merges, by model type.
type SentencePiece struct {
	path       string
	proto      *spmProto
	norm       *normalizer
	pieces     map[string]int // normal, user-defined and unused pieces
	reserved   map[string]int // control, unknown and byte pieces
	unkID      int
	minScore   float32
	maxScore   float32
	maxPiece   int // longest piece in bytes
	byteLookup [256]int
}

// LoadSentencePiece reads a SentencePiece model file.
func LoadSentencePiece(path string) (*SentencePiece, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sp, err := ParseSentencePiece(b)
	if err != nil {
		return nil, fmt.Errorf("%s: not a SentencePiece model file (%w)", path, err)
	}
	sp.path = path
	return sp, nil
}

// ParseSentencePiece reads a SentencePiece model from the bytes of a .model
// file.
func ParseSentencePiece(b []byte) (*SentencePiece, error) {
	if len(b) == 0 {
		return nil, errors.New("empty file")
	}
	m, err := parseSPM(b)
	if err != nil {
		return nil, err
	}
	if len(m.pieces) == 0 {
		return nil, errors.New("no pieces: want a sentencepiece ModelProto with a vocabulary")
	}
	if m.modelType != modelUnigram && m.modelType != modelBPE && m.modelType != modelWord && m.modelType != modelChar {
		return nil, fmt.Errorf("model type %d: want unigram (1), bpe (2), word (3) or char (4)", m.modelType)
	}
	if m.denormalizer.present && len(m.denormalizer.charsmap) > 0 {
		return nil, errors.New("the model has denormalisation rules (denormalizer_spec), which attnx does not apply")
	}
	sp := &SentencePiece{proto: m, pieces: map[string]int{}, reserved: map[string]int{}, unkID: -1,
		minScore: math.MaxFloat32, maxScore: math.SmallestNonzeroFloat32}
	for i := range sp.byteLookup {
		sp.byteLookup[i] = -1
	}
	var userDefined []string
	for id, p := range m.pieces {
		if p.text == "" {
			return nil, fmt.Errorf("piece %d is empty", id)
		}
		switch p.typ {
		case pieceNormal, pieceUserDefined, pieceUnused:
			if _, dup := sp.pieces[p.text]; dup {
				return nil, fmt.Errorf("piece %d %q is defined twice", id, p.text)
			}
			sp.pieces[p.text] = id
			sp.maxPiece = max(sp.maxPiece, len(p.text))
			if p.typ == pieceUserDefined {
				userDefined = append(userDefined, p.text)
			}
		case pieceUnknown, pieceControl, pieceByte:
			if _, dup := sp.reserved[p.text]; dup {
				return nil, fmt.Errorf("piece %d %q is defined twice", id, p.text)
			}
			sp.reserved[p.text] = id
			if p.typ == pieceUnknown {
				if sp.unkID >= 0 {
					return nil, fmt.Errorf("pieces %d and %d are both of type UNKNOWN", sp.unkID, id)
				}
				sp.unkID = id
			}
			if p.typ == pieceByte {
				if b, ok := byteOfPiece(p.text); ok {
					sp.byteLookup[b] = id
				}
			}
		default:
			return nil, fmt.Errorf("piece %d %q has unknown type %d", id, p.text, p.typ)
		}
		if p.typ == pieceNormal {
			sp.minScore = min(sp.minScore, p.score)
			sp.maxScore = max(sp.maxScore, p.score)
		}
	}
	if sp.unkID < 0 {
		return nil, errors.New("no piece of type UNKNOWN (<unk>)")
	}
	if m.byteFallback {
		for b, id := range sp.byteLookup {
			if id < 0 {
				return nil, fmt.Errorf("byte_fallback is set but there is no piece for byte 0x%02X", b)
			}
		}
	}
	sp.norm = &normalizer{spec: m.normalizer, userDefined: newPrefixSet(userDefined), wsAsSuffix: m.wsAsSuffix}
	if len(m.normalizer.charsmap) > 0 {
		rules, err := parseCharsMap(m.normalizer.charsmap)
		if err != nil {
			return nil, err
		}
		sp.norm.rules = rules
	}
	return sp, nil
}

// byteOfPiece parses a byte piece "<0xAB>".
func byteOfPiece(s string) (int, bool) {
	if len(s) != 6 || !strings.HasPrefix(s, "<0x") || s[5] != '>' {
		return 0, false
	}
	v := 0
	for _, c := range s[3:5] {
		switch {
		case c >= '0' && c <= '9':
			v = v*16 + int(c-'0')
		case c >= 'A' && c <= 'F':
			v = v*16 + int(c-'A') + 10
		case c >= 'a' && c <= 'f':
			v = v*16 + int(c-'a') + 10
		default:
			return 0, false
		}
	}
	return v, true
}

// SetVocabulary keeps the segmentation to the pieces in vocab, as
// SentencePiece's SetVocabulary does (JoeyNMT calls it with the model's
// vocabulary): normal pieces outside it, but single characters, are no
// longer used. Unigram and BPE models only.
func (sp *SentencePiece) SetVocabulary(vocab []string) error {
	if sp.proto.modelType != modelUnigram && sp.proto.modelType != modelBPE {
		return fmt.Errorf("a vocabulary constraint applies to unigram and BPE models, not %s", sp.ModelType())
	}
	in := make(map[string]bool, len(vocab))
	for _, v := range vocab {
		in[v] = true
	}
	for id := range sp.proto.pieces {
		p := &sp.proto.pieces[id]
		switch p.typ {
		case pieceControl, pieceUnknown, pieceUserDefined:
			continue
		}
		_, size := utf8.DecodeRuneInString(p.text)
		if in[p.text] || size == len(p.text) {
			p.typ = pieceNormal
		} else {
			p.typ = pieceUnused
		}
	}
	return nil
}

// ModelType is "unigram", "bpe", "word" or "char".
func (sp *SentencePiece) ModelType() string { return modelTypeNames[sp.proto.modelType] }

// Size is the number of pieces.
func (sp *SentencePiece) Size() int { return len(sp.proto.pieces) }

// Piece returns the piece with id id.
func (sp *SentencePiece) Piece(id int) string { return sp.proto.pieces[id].text }

// ID returns the id of a piece, the unknown piece's id when it has none.
func (sp *SentencePiece) ID(piece string) int {
	if id, ok := sp.reserved[piece]; ok {
		return id
	}
	if id, ok := sp.pieces[piece]; ok {
		return id
	}
	return sp.unkID
}

func (sp *SentencePiece) typ(id int) int { return sp.proto.pieces[id].typ }

// Normalize returns text as the model normalises it before segmentation
// (white space shown as U+2581).
func (sp *SentencePiece) Normalize(text string) string { return sp.norm.normalize(text) }

// Encode segments text into pieces, as spm_encode --output_format=piece
// does: consecutive unknown pieces are merged into one, and with byte
// fallback unknown characters become byte pieces.
func (sp *SentencePiece) Encode(text string) []string {
	norm := sp.norm.normalize(text)
	if norm == "" {
		return nil
	}
	var segs []segment
	switch sp.proto.modelType {
	case modelUnigram:
		segs = sp.viterbi(norm)
	case modelBPE:
		segs = sp.bpe(norm)
	case modelWord:
		segs = sp.words(norm)
	case modelChar:
		segs = sp.chars(norm)
	}
	var out []string
	// A run of unknown pieces is one piece, as spm_encode writes it: the
	// run is joined once it ends (adding each to the last would copy the
	// run once per character).
	var unkRun strings.Builder
	endRun := func() {
		if unkRun.Len() > 0 {
			out = append(out, unkRun.String())
			unkRun.Reset()
		}
	}
	for _, s := range segs {
		unk := s.id == sp.unkID
		switch {
		case unk && sp.proto.byteFallback:
			for i := 0; i < len(s.piece); i++ {
				out = append(out, sp.proto.pieces[sp.byteLookup[s.piece[i]]].text)
			}
		case unk:
			unkRun.WriteString(s.piece)
		default:
			endRun()
			out = append(out, s.piece)
		}
	}
	endRun()
	return out
}

// EncodeIDs is Encode's pieces as the model's ids.
func (sp *SentencePiece) EncodeIDs(text string) []int {
	pieces := sp.Encode(text)
	ids := make([]int, len(pieces))
	for i, p := range pieces {
		ids[i] = sp.ID(p)
	}
	return ids
}

type segment struct {
	piece string
	id    int
}

// unkPenalty is subtracted from the lowest piece score to score an unknown
// character in unigram segmentation.
const unkPenalty = 10.0

// viterbi is unigram segmentation: the sequence of pieces with the highest
// total score, a character at a time, an unknown character scoring the
// lowest piece score minus unkPenalty. Scores are kept in float32 and the
// arithmetic follows SentencePiece's, so that near ties go the same way.
func (sp *SentencePiece) viterbi(s string) []segment {
	type best struct {
		score float32
		start int
		id    int
	}
	n := len(s)
	ends := make([]best, n+1)
	for i := range ends {
		ends[i].start = -1
	}
	unkScore := sp.minScore - unkPenalty
	for start := 0; start < n; {
		here := ends[start].score
		_, mblen := utf8.DecodeRuneInString(s[start:])
		single := false
		for end := start + 1; end <= n && end-start <= sp.maxPiece; end++ {
			id, ok := sp.pieces[s[start:end]]
			if !ok || sp.typ(id) == pieceUnused {
				continue
			}
			length := end - start
			// SentencePiece's score here is a double (the user-defined
			// bonus subtracts the double 0.1), so the candidate is summed
			// and compared in double and stored in float: ties between
			// paths are broken by that rounding.
			score := float64(sp.proto.pieces[id].score)
			if sp.typ(id) == pieceUserDefined {
				score = float64(float32(length)*sp.maxScore) - 0.1
			}
			cand := score + float64(here)
			if t := &ends[end]; t.start == -1 || cand > float64(t.score) {
				*t = best{score: float32(cand), start: start, id: id}
			}
			if length == mblen {
				single = true
			}
		}
		if !single {
			cand := unkScore + here
			if t := &ends[start+mblen]; t.start == -1 || cand > t.score {
				*t = best{score: cand, start: start, id: sp.unkID}
			}
		}
		start += mblen
	}
	var out []segment
	for end := n; end > 0; {
		b := ends[end]
		if b.start < 0 {
			break
		}
		out = append(out, segment{piece: s[b.start:end], id: b.id})
		end = b.start
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// bpe is SentencePiece's BPE segmentation: starting from characters
// (user-defined symbols kept whole), repeatedly merge the adjacent pair
// whose merged piece has the highest score (leftmost first on ties) until
// no merged pair is a piece; pieces marked unused are split back into the
// pair they came from.
func (sp *SentencePiece) bpe(s string) []segment {
	type symbol struct {
		prev, next int
		frozen     bool
		start, end int // bytes of s
	}
	var syms []symbol
	for pos := 0; pos < len(s); {
		l := sp.norm.userDefined.longest(s[pos:])
		frozen := l > 0
		if !frozen {
			_, l = utf8.DecodeRuneInString(s[pos:])
		}
		i := len(syms)
		syms = append(syms, symbol{prev: i - 1, next: i + 1, frozen: frozen, start: pos, end: pos + l})
		pos += l
	}
	if len(syms) == 0 {
		return nil
	}
	syms[len(syms)-1].next = -1
	h := &mergeheap.Heap{}
	revMerge := map[string][2]string{}
	tryPair := func(left, right int) {
		if left < 0 || right < 0 || syms[left].frozen || syms[right].frozen {
			return
		}
		merged := s[syms[left].start:syms[right].end]
		id, ok := sp.pieces[merged]
		if !ok {
			return
		}
		h.Push(mergeheap.Pair{Left: left, Right: right, Score: float64(sp.proto.pieces[id].score), Size: len(merged)})
		if sp.typ(id) == pieceUnused {
			revMerge[merged] = [2]string{s[syms[left].start:syms[left].end], s[syms[right].start:syms[right].end]}
		}
	}
	for i := 1; i < len(syms); i++ {
		tryPair(i-1, i)
	}
	for h.Len() > 0 {
		top := h.Pop()
		l, r := &syms[top.Left], &syms[top.Right]
		if l.end == l.start || r.end == r.start || (l.end-l.start)+(r.end-r.start) != top.Size || l.next != top.Right {
			continue
		}
		l.end = r.end
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = top.Left
		}
		r.start, r.end = 0, 0
		tryPair(l.prev, top.Left)
		tryPair(top.Left, l.next)
	}
	var out []segment
	var resegment func(w string)
	resegment = func(w string) {
		id := sp.ID(w)
		if sp.typ(id) == pieceUnused {
			if p, ok := revMerge[w]; ok {
				resegment(p[0])
				resegment(p[1])
				return
			}
		}
		out = append(out, segment{piece: w, id: id})
	}
	for i := 0; i >= 0; i = syms[i].next {
		resegment(s[syms[i].start:syms[i].end])
	}
	return out
}

// words splits at the white-space symbol, which starts each word.
func (sp *SentencePiece) words(s string) []segment {
	var out []segment
	start := 0
	for i := 1; i <= len(s); i++ {
		if i == len(s) || strings.HasPrefix(s[i:], spaceSymbol) {
			if i > start {
				w := s[start:i]
				out = append(out, segment{piece: w, id: sp.ID(w)})
			}
			start = i
		}
	}
	return out
}

// chars splits into characters.
func (sp *SentencePiece) chars(s string) []segment {
	var out []segment
	for _, r := range s {
		c := string(r)
		out = append(out, segment{piece: c, id: sp.ID(c)})
	}
	return out
}

// Decode joins pieces back into text, as spm_decode --input_format=piece
// does: control pieces vanish, the unknown piece becomes the model's
// unk_surface (" ⁇ " by default), byte pieces are reassembled into UTF-8,
// U+2581 becomes a space and the first word's leading one is dropped.
func (sp *SentencePiece) Decode(pieces []string) string {
	var text strings.Builder
	var bytes []byte
	flush := func() {
		for len(bytes) > 0 {
			r, size := utf8.DecodeRune(bytes)
			if r == utf8.RuneError && size <= 1 {
				text.WriteString("\uFFFD")
				size = 1
			} else {
				text.Write(bytes[:size])
			}
			bytes = bytes[size:]
		}
	}
	bosWS := true
	bosWSSeen := false
	ns := sp.proto.normalizer
	for _, p := range pieces {
		id := sp.ID(p)
		if sp.typ(id) == pieceByte {
			b, _ := byteOfPiece(sp.proto.pieces[id].text)
			bytes = append(bytes, byte(b))
			continue
		}
		flush()
		if bosWSSeen || text.Len() > 0 {
			bosWS = false
		}
		var surface string
		switch sp.typ(id) {
		case pieceControl:
			surface, bosWSSeen = "", false
		case pieceUnknown:
			if sp.proto.pieces[id].text == p {
				surface = sp.proto.unkSurface
			} else {
				surface = p
			}
			bosWSSeen = false
		default:
			piece := p
			has := false
			if bosWS && (ns.addDummyPrefix || ns.removeExtraWS) {
				if strings.HasPrefix(piece, spaceSymbol) {
					piece = piece[len(spaceSymbol):]
					has = true
				}
				if ns.removeExtraWS {
					has = false
				}
			}
			surface, bosWSSeen = strings.ReplaceAll(piece, spaceSymbol, " "), has
		}
		text.WriteString(surface)
	}
	flush()
	return text.String()
}
