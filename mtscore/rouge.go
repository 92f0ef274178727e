package mtscore

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ROUGE implementations (RougeOptions.Impl).
const (
	// Rouge155 is ROUGE-1.5.5 (the Perl script) as files2rouge calls it,
	// which is how most summarization papers report ROUGE:
	// ROUGE-1.5.5.pl -c 95 -r 1000 -n 2 -a -m, one summary per line,
	// sentences split after " ." (files2rouge's --eos) and written as
	// pyrouge writes them.
	Rouge155 = "rouge155"
	// RougeScore is Google's rouge-score package (rouge_scorer with
	// rouge1, rouge2, rougeL and rougeLsum) at its defaults: no stemming,
	// rougeLsum over sentences separated by newlines.
	RougeScore = "rouge-score"
)

// RougeOptions choose how ROUGE is computed.
type RougeOptions struct {
	// Impl is Rouge155 (the default, "") or RougeScore.
	Impl string
	// Stem, when set, says whether words of more than 3 letters are
	// stemmed (Porter's stemmer); nil takes the implementation's default:
	// stemmed for Rouge155 (files2rouge passes -m), not for RougeScore
	// (whose stemmer, NLTK's Porter with its extensions, attnx does not
	// implement: Stem true is refused there).
	Stem *bool
	// KeepSentenceTags keeps <t> and </t> in the text. By default they
	// are removed first, as OpenNMT-py's summarization guide has its
	// output cleaned before ROUGE (sed 's/<t> //g; s/ <\/t>//g'), and
	// for rouge-score's ROUGE-Lsum the sentences they delimit are its
	// sentences (its lines).
	KeepSentenceTags bool
	// TagSentences has ROUGE-1.5.5 end a sentence at each <t> and </t>
	// as well as after " .". By default its sentences are those of the
	// guide's pipeline: files2rouge on the text the sed leaves splits
	// after " ." only, so a sentence without a full stop runs on into the
	// next (which changes ROUGE-L alone). rouge-score's ROUGE-Lsum takes
	// the tags' sentences either way.
	TagSentences bool
}

// RougeResult is one ROUGE measure averaged over the documents, as a
// percentage: recall, precision and F1.
type RougeResult struct {
	Name      string  `json:"name"`
	Recall    float64 `json:"recall"`
	Precision float64 `json:"precision"`
	F         float64 `json:"f"`
}

// Rouge scores hyps against refs (one reference per hypothesis):
// ROUGE-1, ROUGE-2 and ROUGE-L, and for RougeScore ROUGE-Lsum too. Each is
// the mean over documents of the document's scores (ROUGE-1.5.5 reports
// the mean of 1000 bootstrap resamples' means, rouge-score's
// BootstrapAggregator their median: both within about 1e-4 of it).
func Rouge(hyps, refs []string, o RougeOptions) ([]RougeResult, error) {
	if len(hyps) != len(refs) {
		return nil, fmt.Errorf("rouge: %d hypotheses and %d references", len(hyps), len(refs))
	}
	if len(hyps) == 0 {
		return nil, fmt.Errorf("rouge: nothing to score")
	}
	stem := o.Impl != RougeScore
	if o.Stem != nil {
		stem = *o.Stem
	}
	var names []string
	var doc func(hyp, ref string) ([][3]float64, error)
	switch o.Impl {
	case "", Rouge155:
		names = []string{"ROUGE-1", "ROUGE-2", "ROUGE-L"}
		doc = func(hyp, ref string) ([][3]float64, error) { return rouge155Doc(hyp, ref, stem) }
	case RougeScore:
		if stem {
			return nil, fmt.Errorf("rouge: rouge-score's stemmer is NLTK's Porter stemmer with its extensions, which attnx does not implement; score rouge-score unstemmed, or use ROUGE-1.5.5 (rouge155) for stemming")
		}
		names = []string{"ROUGE-1", "ROUGE-2", "ROUGE-L", "ROUGE-Lsum"}
		doc = rougeScoreDoc
	default:
		return nil, fmt.Errorf("rouge: implementation %q: want %s or %s", o.Impl, Rouge155, RougeScore)
	}
	if o.KeepSentenceTags && o.TagSentences {
		return nil, fmt.Errorf("rouge: sentences end at the tags only when the tags are removed: keep them or split at them, not both")
	}
	// The tags end sentences for rouge-score's ROUGE-Lsum, and for
	// ROUGE-1.5.5 when asked; else they go as the guide's sed removes
	// them.
	tagLines := o.Impl == RougeScore || o.TagSentences
	docs := make([][][3]float64, len(hyps))
	for i := range hyps {
		h, r := hyps[i], refs[i]
		switch {
		case o.KeepSentenceTags:
		case tagLines:
			h, r = stripSentenceTags(h), stripSentenceTags(r)
		default:
			h, r = sedSentenceTags(h), sedSentenceTags(r)
		}
		d, err := doc(h, r)
		if err != nil {
			return nil, fmt.Errorf("rouge: line %d: %w", i+1, err)
		}
		docs[i] = d
	}
	avg := mean
	if o.Impl != RougeScore {
		avg = rouge155Average
	}
	out := make([]RougeResult, len(names))
	for k, name := range names {
		col := make([][3]float64, len(docs))
		for i := range docs {
			col[i] = docs[i][k]
		}
		a := avg(col)
		out[k] = RougeResult{Name: name, Recall: 100 * a[0], Precision: 100 * a[1], F: 100 * a[2]}
	}
	return out, nil
}

// mean is the documents' mean recall, precision and F.
func mean(docs [][3]float64) [3]float64 {
	var s [3]float64
	for _, d := range docs {
		for j := range 3 {
			s[j] += d[j]
		}
	}
	for j := range 3 {
		s[j] /= float64(len(docs))
	}
	return s
}

// rouge155Average is the average ROUGE-1.5.5 reports (computeAverages
// with -r 1000): the mean of 1000 bootstrap resamples' means, resample i
// drawn with Perl's rand after srand(i), over the documents in the order
// ROUGE sorts their evaluation ids, rounded to 5 decimals. files2rouge
// writes document d as s.d.txt; pyrouge numbers the files 1, 2, ... in
// the order their names sort as strings; ROUGE sorts those numbers as
// strings again.
func rouge155Average(docs [][3]float64) [3]float64 {
	n := len(docs)
	byName := make([]int, n) // pyrouge's task k+1 is document byName[k]
	for i := range byName {
		byName[i] = i
	}
	slices.SortFunc(byName, func(a, b int) int { return strings.Compare(strconv.Itoa(a), strconv.Itoa(b)) })
	tasks := make([]int, n) // task ids 1..n, in ROUGE's order
	for i := range tasks {
		tasks[i] = i + 1
	}
	slices.SortFunc(tasks, func(a, b int) int { return strings.Compare(strconv.Itoa(a), strconv.Itoa(b)) })
	order := make([]int, n)
	for i, task := range tasks {
		order[i] = byName[task-1]
	}
	const resamples = 1000
	var total [3]float64
	for r := range resamples {
		rng := newPerlRand(uint64(r))
		var sample [3]float64
		for range n {
			d := docs[order[int(float64(n)*rng.next())]]
			for j := range 3 {
				sample[j] += d[j]
			}
		}
		for j := range 3 {
			total[j] += sample[j] / float64(n)
		}
	}
	for j := range 3 {
		total[j] = round5(total[j] / resamples)
	}
	return total
}

// perlRand is Perl's rand (its own drand48, the same on every platform
// since Perl 5.20) after srand(seed).
type perlRand struct{ x uint64 }

func newPerlRand(seed uint64) *perlRand { return &perlRand{x: (seed<<16 | 0x330E) & (1<<48 - 1)} }

func (p *perlRand) next() float64 {
	p.x = (p.x*0x5DEECE66D + 0xB) & (1<<48 - 1)
	return math.Ldexp(float64(p.x), -48)
}

// RougeLines formats results as one line each: "ROUGE-1 R 45.12 P 40.10
// F 42.46" with width decimals.
func RougeLines(rs []RougeResult, width int) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%-10s R %.*f  P %.*f  F %.*f\n", r.Name, width, r.Recall, width, r.Precision, width, r.F)
	}
	return b.String()
}

// sedSentenceTags removes the tags as OpenNMT-py's summarization guide
// does before files2rouge: sed 's/<t> //g; s/ <\/t>//g'.
func sedSentenceTags(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "<t> ", ""), " </t>", "")
}

// stripSentenceTags removes the <t> and </t> tokens, and marks the end of
// each sentence they delimited with a newline (ROUGE-Lsum's sentences,
// and ROUGE-1.5.5's with RougeOptions.TagSentences).
func stripSentenceTags(s string) string {
	if !strings.Contains(s, "<t>") && !strings.Contains(s, "</t>") {
		return s
	}
	var sents []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			sents = append(sents, strings.Join(cur, " "))
			cur = cur[:0]
		}
	}
	for _, tok := range strings.Fields(s) {
		switch tok {
		case "<t>", "</t>":
			flush()
		default:
			cur = append(cur, tok)
		}
	}
	flush()
	return strings.Join(sents, "\n")
}

// --- ROUGE-1.5.5 as files2rouge runs it -----------------------------

// rouge155Sentences are a summary's sentences as ROUGE-1.5.5 reads them
// from the files files2rouge and pyrouge write: the line (white space
// around it trimmed) split after each " ." (files2rouge's --eos), each
// sentence taken up to its first '<' (the SEE format's pattern
// [^<]+ ends there) and dropped when nothing comes before it, then
// lower-cased (ASCII, Perl's tr/A-Z/a-z/). Newlines (the tags' sentence
// ends, with RougeOptions.TagSentences) end sentences too.
func rouge155Sentences(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		for _, s := range strings.Split(strings.ReplaceAll(line, " .", " .\n"), "\n") {
			if i := strings.IndexByte(s, '<'); i >= 0 {
				s = s[:i]
			}
			if s == "" {
				continue
			}
			out = append(out, asciiLower(s))
		}
	}
	return out
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

var (
	rouge155NonWord = regexp.MustCompile(`[^A-Za-z0-9\-]`)
	rouge155Spaces  = regexp.MustCompile(`\s+`)
)

// rouge155Tokens is readText's cleaning and createNGram's tokens of the
// sentences joined: "-" split off, other characters but letters, digits
// and "-" blanked (bytewise), tokens that start with a letter or a digit
// (or $), stemmed when longer than 3 bytes.
func rouge155Tokens(sents []string, stem bool) []string {
	return rouge155Clean(strings.Join(sents, " "), stem)
}

// rouge155Clean is readText's (and readText_LCS's, per sentence)
// cleaning of text and the tokens kept of it.
func rouge155Clean(text string, stem bool) []string {
	text = strings.ReplaceAll(text, "-", " - ")
	text = rouge155NonWord.ReplaceAllStringFunc(text, func(m string) string { return strings.Repeat(" ", len(m)) })
	return rouge155Keep(rouge155Spaces.Split(strings.TrimSpace(text), -1), stem)
}

// rouge155Keep keeps the tokens ROUGE-1.5.5 counts, stemmed as it stems
// them.
func rouge155Keep(toks []string, stem bool) []string {
	out := toks[:0:0]
	for _, t := range toks {
		if t == "" {
			continue
		}
		if c := t[0]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '$') {
			continue
		}
		if stem && len(t) > 3 {
			// MorphStem: files2rouge ships WordNet-2.0.exc.db empty, so
			// no exception applies before Porter's stemmer.
			t = porterStem(t)
		}
		out = append(out, t)
	}
	return out
}

// round5 is sprintf("%7.5f"), the precision ROUGE-1.5.5 keeps of every
// score.
func round5(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 5, 64), 64)
	return v
}

// rouge155Scores are the recall, precision and F (alpha 0.5) of hit
// matches out of model (reference) and peer (hypothesis) counts, rounded
// as ROUGE-1.5.5 rounds them.
func rouge155Scores(hit, model, peer int) [3]float64 {
	var r, p, f float64
	if model > 0 {
		r = round5(float64(hit) / float64(model))
	}
	if peer > 0 {
		p = round5(float64(hit) / float64(peer))
	}
	if d := 0.5*p + 0.5*r; d > 0 {
		f = round5(p * r / d)
	}
	return [3]float64{r, p, f}
}

func wordGrams(toks []string, n int) map[string]int {
	m := map[string]int{}
	for i := 0; i+n <= len(toks); i++ {
		m[strings.Join(toks[i:i+n], " ")]++
	}
	return m
}

// ngramMatches counts the n-grams of hyp that match ref's, each of ref's
// matched as often as it occurs at most, and the n-grams of each.
func ngramMatches(hyp, ref []string, n int) (hit, refs, hyps int) {
	hg, rg := wordGrams(hyp, n), wordGrams(ref, n)
	for g, c := range rg {
		hit += min(c, hg[g])
	}
	return hit, countNgrams(rg), countNgrams(hg)
}

func countNgrams(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// rouge155Doc is one document's ROUGE-1, ROUGE-2 and ROUGE-L as
// ROUGE-1.5.5 computes them for one peer and one model.
func rouge155Doc(hyp, ref string, stem bool) ([][3]float64, error) {
	hs, rs := rouge155Sentences(hyp), rouge155Sentences(ref)
	ht, rt := rouge155Tokens(hs, stem), rouge155Tokens(rs, stem)
	var out [][3]float64
	for n := 1; n <= 2; n++ {
		hit, refs, hyps := ngramMatches(ht, rt, n)
		out = append(out, rouge155Scores(hit, refs, hyps))
	}
	// ROUGE-L: summary-level LCS of the model's sentences against the
	// peer's (each sentence cleaned alone), hits clipped by the unigram
	// counts.
	split := func(sents []string) [][]string {
		out := make([][]string, len(sents))
		for i, s := range sents {
			out[i] = rouge155Clean(s, stem)
		}
		return out
	}
	peer, model := split(hs), split(rs)
	if len(peer) == 1 && len(model) == 1 {
		// One sentence each: the union is the one LCS, each of whose
		// words the unigram counts hold; its length needs no table.
		return append(out, rouge155Scores(lcsLength(model[0], peer[0]), len(model[0]), len(ht))), nil
	}
	p1, m1 := wordGrams(ht, 1), wordGrams(rt, 1)
	hit, base := 0, 0
	for _, m := range model {
		mask := make([]bool, len(m))
		base += len(m)
		for _, p := range peer {
			if err := markLCS(m, p, mask); err != nil {
				return nil, err
			}
		}
		for j, hitHere := range mask {
			if hitHere && m1[m[j]] > 0 && p1[m[j]] > 0 {
				hit++
				m1[m[j]]--
				p1[m[j]]--
			}
		}
	}
	return append(out, rouge155Scores(hit, base, len(ht))), nil
}

// markLCS marks in mask the positions of model on one longest common
// subsequence with peer, taking ROUGE-1.5.5's path back through the
// table (diagonal on a match, else up when c[i-1][j] >= c[i][j-1]).
func markLCS(model, peer []string, mask []bool) error {
	m, n := len(model), len(peer)
	if m == 0 {
		return nil
	}
	c, err := lcsTable(model, peer)
	if err != nil {
		return err
	}
	for i, j := m, n; i > 0 && j > 0; {
		switch {
		case model[i-1] == peer[j-1]:
			i, j = i-1, j-1
			mask[i] = true
		case c[(i-1)*(n+1)+j] >= c[i*(n+1)+j-1]:
			i--
		default:
			j--
		}
	}
	return nil
}

// MaxLCSCells bounds the table of LCS lengths that ROUGE-L's
// summary-level LCS traces its paths through, for one reference sentence
// and one summary sentence (4 bytes a cell: 64 MiB). Sentences are short;
// a line of thousands of words without a sentence end is refused.
const MaxLCSCells = 1 << 24

// lcsTable is the LCS lengths of every pair of prefixes of two sentences,
// (m+1) x (n+1) row-major, refused past MaxLCSCells.
func lcsTable(a, b []string) ([]int32, error) {
	m, n := len(a), len(b)
	if cells := (m + 1) * (n + 1); cells > MaxLCSCells {
		return nil, fmt.Errorf("ROUGE-L: a reference sentence of %d words and a summary sentence of %d words: an LCS table of %d cells, more than the limit of %d (end sentences with \" .\")",
			m, n, cells, MaxLCSCells)
	}
	c := make([]int32, (m+1)*(n+1))
	for i := 1; i <= m; i++ {
		for j := 1; j <= n; j++ {
			switch {
			case a[i-1] == b[j-1]:
				c[i*(n+1)+j] = c[(i-1)*(n+1)+j-1] + 1
			default:
				c[i*(n+1)+j] = max(c[(i-1)*(n+1)+j], c[i*(n+1)+j-1])
			}
		}
	}
	return c, nil
}

// lcsLength is the length of the longest common subsequence of a and b,
// in two rows of the table (the words as numbers, compared as such).
func lcsLength(a, b []string) int {
	ids := map[string]int32{}
	id := func(toks []string) []int32 {
		out := make([]int32, len(toks))
		for i, t := range toks {
			v, ok := ids[t]
			if !ok {
				v = int32(len(ids))
				ids[t] = v
			}
			out[i] = v
		}
		return out
	}
	x, y := id(a), id(b)
	if len(y) > len(x) {
		x, y = y, x
	}
	prev, cur := make([]int32, len(y)+1), make([]int32, len(y)+1)
	for i := range x {
		for j := range y {
			if x[i] == y[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return int(prev[len(y)])
}

// --- rouge-score --------------------------------------------------------

var (
	rougeScoreNonWord = regexp.MustCompile(`[^a-z0-9]+`)
	rougeScoreToken   = regexp.MustCompile(`^[a-z0-9]+$`)
)

// rougeScoreTokens is rouge-score's tokenize: lower case, every run of
// other characters than a-z and 0-9 a space, the tokens left.
func rougeScoreTokens(text string) []string {
	text = rougeScoreNonWord.ReplaceAllString(strings.ToLower(text), " ")
	var out []string
	for _, t := range strings.Fields(text) {
		if rougeScoreToken.MatchString(t) {
			out = append(out, t)
		}
	}
	return out
}

func f1(p, r float64) float64 {
	if p+r > 0 {
		return 2 * p * r / (p + r)
	}
	return 0
}

// rougeScoreDoc is one pair's rouge1, rouge2, rougeL and rougeLsum as
// rouge_scorer computes them (recall, precision, F).
func rougeScoreDoc(hyp, ref string) ([][3]float64, error) {
	ht, rt := rougeScoreTokens(hyp), rougeScoreTokens(ref)
	var out [][3]float64
	for n := 1; n <= 2; n++ {
		hit, refs, hyps := ngramMatches(ht, rt, n)
		p := float64(hit) / float64(max(hyps, 1))
		r := float64(hit) / float64(max(refs, 1))
		out = append(out, [3]float64{r, p, f1(p, r)})
	}
	if len(ht) == 0 || len(rt) == 0 {
		out = append(out, [3]float64{})
	} else {
		l := float64(lcsLength(rt, ht))
		p, r := l/float64(len(ht)), l/float64(len(rt))
		out = append(out, [3]float64{r, p, f1(p, r)})
	}
	lsum, err := rougeLsum(hyp, ref)
	if err != nil {
		return nil, err
	}
	return append(out, lsum), nil
}

// rougeLsum is rouge_scorer's summary-level LCS over the sentences (lines)
// of ref and hyp, each reference token counted once at most.
func rougeLsum(hyp, ref string) ([3]float64, error) {
	sents := func(text string) [][]string {
		var out [][]string
		for _, s := range strings.Split(text, "\n") {
			if s != "" {
				out = append(out, rougeScoreTokens(s))
			}
		}
		return out
	}
	hs, rs := sents(hyp), sents(ref)
	m, n := 0, 0
	cr, ch := map[string]int{}, map[string]int{}
	for _, s := range rs {
		m += len(s)
		for _, t := range s {
			cr[t]++
		}
	}
	for _, s := range hs {
		n += len(s)
		for _, t := range s {
			ch[t]++
		}
	}
	if len(rs) == 0 || len(hs) == 0 || m == 0 || n == 0 {
		return [3]float64{}, nil
	}
	hits := 0
	if len(rs) == 1 && len(hs) == 1 {
		// One sentence each: the union is the one LCS, within the
		// counts; its length needs no table.
		hits = lcsLength(rs[0], hs[0])
		rs = nil
	}
	for _, r := range rs {
		// The union of one LCS (rouge_scorer's backtrack) with each
		// hypothesis sentence, in reference order.
		union := map[int]bool{}
		for _, h := range hs {
			idx, err := lcsIndices(r, h)
			if err != nil {
				return [3]float64{}, err
			}
			for _, i := range idx {
				union[i] = true
			}
		}
		idx := make([]int, 0, len(union))
		for i := range union {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		for _, i := range idx {
			if t := r[i]; ch[t] > 0 && cr[t] > 0 {
				hits++
				ch[t]--
				cr[t]--
			}
		}
	}
	p, r := float64(hits)/float64(n), float64(hits)/float64(m)
	return [3]float64{r, p, f1(p, r)}, nil
}

// lcsIndices are the positions in ref of rouge_scorer's LCS of ref and
// can (_backtrack_norec: diagonal on a match, else left when
// t[i][j-1] > t[i-1][j], else up).
func lcsIndices(ref, can []string) ([]int, error) {
	n := len(can)
	t, err := lcsTable(ref, can)
	if err != nil {
		return nil, err
	}
	var out []int
	for i, j := len(ref), n; i > 0 && j > 0; {
		switch {
		case ref[i-1] == can[j-1]:
			out = append(out, i-1)
			i, j = i-1, j-1
		case t[i*(n+1)+j-1] > t[(i-1)*(n+1)+j]:
			j--
		default:
			i--
		}
	}
	slices.Reverse(out)
	return out, nil
}
