package checkpoint

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/attnx/attnx/checkpoint/layout"
)

// KeyShape is a tensor's name and shape, as Diagnose sees it.
type KeyShape struct {
	Key   string
	Shape []int64
}

// KeyShapes lists the state dict's keys with their shapes, in file order.
func (s *StateDict) KeyShapes() []KeyShape {
	out := make([]KeyShape, 0, len(s.Keys))
	for _, k := range s.Keys {
		var dims []int64
		if t := s.Tensors[k]; t != nil {
			dims = append([]int64{}, t.Dims...)
		}
		out = append(out, KeyShape{Key: k, Shape: dims})
	}
	return out
}

// Layout and LayoutKey are the symbolic description of a family of
// checkpoints (package layout), which Diagnose compares keys with.
type (
	Layout    = layout.Layout
	LayoutKey = layout.Key
)

// Misnamed pairs a key found with the layout's key it would be under
// another name.
type Misnamed struct {
	Found KeyShape
	Want  string
}

// WrongShape is a key found under the layout's name with another shape.
type WrongShape struct {
	Found KeyShape
	Want  LayoutKey
	// Resolved is the expected shape with the layout's symbols replaced by
	// the sizes the other keys imply, where known ("[6 4]"), else "".
	Resolved string
}

// Diagnosis says how keys differ from the closest of the layouts given.
type Diagnosis struct {
	// Found is the input, in order.
	Found []KeyShape
	// Layouts names the layouts compared, in the order given.
	Layouts []string
	// Layout is the closest layout's name ("" when no layout was given).
	Layout string
	// Close is false when even the closest layout accounts for less than
	// half of the keys: the checkpoint is of some other kind of model.
	Close bool
	// Fit counts the keys found that fit the layout as named; Misnamed
	// those that would fit under another name.
	Fit      int
	Misnamed []Misnamed
	// Missing are the layout's required keys not found (under any name),
	// Extra the keys found that fit nothing, WrongShapes keys of the right
	// name and the wrong shape.
	Missing     []LayoutKey
	Extra       []KeyShape
	WrongShapes []WrongShape
	// Maps are prefix renames (apply them in order with Rename) that turn
	// the misnamed keys into the layout's names; Fixes says whether the
	// renamed keys then fit the layout exactly.
	Maps  []Rename
	Fixes bool
	// Ambiguous explains pairings that names and order decided among
	// keys of identical shapes, which the user should check.
	Ambiguous []string
}

type pattern struct {
	LayoutKey
	order int
	re    *regexp.Regexp // nil for a literal name
	dims  []layout.Dim
}

func compile(l Layout) ([]pattern, error) {
	out := make([]pattern, 0, len(l.Keys))
	for i, k := range l.Keys {
		p := pattern{LayoutKey: k, order: i}
		if strings.Contains(k.Name, "{n}") {
			parts := strings.Split(k.Name, "{n}")
			for j := range parts {
				parts[j] = regexp.QuoteMeta(parts[j])
			}
			p.re = regexp.MustCompile("^" + strings.Join(parts, "(?:0|[1-9][0-9]*)") + "$")
		}
		dims, err := layout.ParseShape(k.Shape)
		if err != nil {
			return nil, fmt.Errorf("layout %s: key %s: %w", l.Name, k.Name, err)
		}
		p.dims = dims
		out = append(out, p)
	}
	return out, nil
}

func (p *pattern) matchName(key string) bool {
	if p.re == nil {
		return p.Name == key
	}
	return p.re.MatchString(key)
}

// binding maps a layout's symbols to sizes.
type binding = layout.Sizes

// unify checks shape against the pattern's dimensions under b and returns
// b extended with the symbols it fixes (b itself is not changed).
func unify(shape []int64, dims []layout.Dim, b binding) (binding, bool) {
	if len(shape) != len(dims) {
		return nil, false
	}
	out := b
	for i, d := range dims {
		sym, v, ok := d.Unify(shape[i], out)
		if !ok {
			return nil, false
		}
		if sym != "" {
			if len(out) == len(b) { // copy on the first addition
				out = make(binding, len(b)+1)
				for k, x := range b {
					out[k] = x
				}
			}
			out[sym] = v
		}
	}
	return out, true
}

// resolve prints a pattern's shape with the known symbols replaced.
func resolve(dims []layout.Dim, b binding) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		v, ok := d.Eval(b)
		if !ok {
			return ""
		}
		parts[i] = strconv.FormatInt(v, 10)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// exact is phase one: keys matched by name.
type exact struct {
	bind    binding
	fit     []int // indexes into found
	wrong   []WrongShape
	missing []*pattern // required or optional, unmatched
	used    []bool
}

func matchExact(found []KeyShape, pats []pattern) exact {
	e := exact{bind: binding{}, used: make([]bool, len(found))}
	byName := map[string]int{}
	for i, f := range found {
		byName[f.Key] = i
	}
	try := func(p *pattern, i int) {
		e.used[i] = true
		if b, ok := unify(found[i].Shape, p.dims, e.bind); ok {
			e.bind = b
			e.fit = append(e.fit, i)
			return
		}
		e.wrong = append(e.wrong, WrongShape{Found: found[i], Want: p.LayoutKey})
	}
	for pi := range pats { // literal names first: they fix the symbols
		p := &pats[pi]
		if p.re != nil {
			continue
		}
		if i, ok := byName[p.Name]; ok && !e.used[i] {
			try(p, i)
		} else {
			e.missing = append(e.missing, p)
		}
	}
	for pi := range pats {
		p := &pats[pi]
		if p.re == nil {
			continue
		}
		n := 0
		for i, f := range found {
			if !e.used[i] && p.matchName(f.Key) {
				try(p, i)
				n++
			}
		}
		if n == 0 {
			e.missing = append(e.missing, p)
		}
	}
	for i := range e.wrong {
		e.wrong[i].Resolved = resolve(mustDims(e.wrong[i].Want, pats), e.bind)
	}
	return e
}

func mustDims(k LayoutKey, pats []pattern) []layout.Dim {
	for _, p := range pats {
		if p.Name == k.Name {
			return p.dims
		}
	}
	return nil
}

func stem(key string) (string, string) {
	i := strings.LastIndexByte(key, '.')
	if i < 0 {
		return "", key
	}
	return key[:i], key[i+1:]
}

type stemGroup[T any] struct {
	stem  string
	items []T
}

// groupByStem groups items by the stem of their names, in the order the
// stems first appear.
func groupByStem[T any](items []T, name func(T) string) []*stemGroup[T] {
	var out []*stemGroup[T]
	byStem := map[string]*stemGroup[T]{}
	for _, it := range items {
		s, _ := stem(name(it))
		g := byStem[s]
		if g == nil {
			g = &stemGroup[T]{stem: s}
			byStem[s] = g
			out = append(out, g)
		}
		g.items = append(g.items, it)
	}
	return out
}

// unused lists the indexes i with !used[i].
func unused(found []KeyShape, used []bool) []int {
	var out []int
	for i := range found {
		if !used[i] {
			out = append(out, i)
		}
	}
	return out
}

// foundGroup holds the indexes of found keys sharing a stem.
type foundGroup = stemGroup[int]

type wantGroup struct {
	stem     string
	pats     []*pattern
	assigned bool
}

func (g *wantGroup) signature() string {
	var s []string
	for _, p := range g.pats {
		_, leaf := stem(p.Name)
		s = append(s, leaf+"["+strings.Join(p.Shape, " ")+"]")
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

// compatible tells whether a group of found keys is the wanted group under
// another stem: every found leaf is one of its leaves with a fitting shape,
// and every required literal leaf is there.
func compatible(found []KeyShape, fg *foundGroup, wg *wantGroup, b binding) (binding, bool) {
	have := map[string]bool{}
	for _, i := range fg.items {
		_, leaf := stem(found[i].Key)
		ok := false
		for _, p := range wg.pats {
			if p.matchName(join(wg.stem, leaf)) {
				nb, fits := unify(found[i].Shape, p.dims, b)
				if !fits {
					return nil, false
				}
				b, ok = nb, true
				have[p.Name] = true
				break
			}
		}
		if !ok {
			return nil, false
		}
	}
	for _, p := range wg.pats {
		if p.re == nil && !p.Optional && !have[p.Name] {
			return nil, false
		}
	}
	return b, true
}

// nameScore ranks how alike two stems are: shared trailing components,
// then shared leading components, then the shared leading characters of
// the components just before the shared tail ("enc" and "encoder" in
// "net.enc.lstm" and "encoder.lstm").
func nameScore(a, b string) [3]int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	suf := 0
	for suf < len(pa) && suf < len(pb) && pa[len(pa)-1-suf] == pb[len(pb)-1-suf] {
		suf++
	}
	pre := 0
	for pre < len(pa)-suf && pre < len(pb)-suf && pa[pre] == pb[pre] {
		pre++
	}
	chars := 0
	if suf < len(pa) && suf < len(pb) {
		x, y := pa[len(pa)-1-suf], pb[len(pb)-1-suf]
		for chars < len(x) && chars < len(y) && x[chars] == y[chars] {
			chars++
		}
	}
	return [3]int{suf, pre, chars}
}

func better(a, b [3]int) bool { return slices.Compare(a[:], b[:]) > 0 }

type layoutMatch struct {
	name      string
	ex        exact
	misnamed  []Misnamed
	missing   []LayoutKey
	extra     []KeyShape
	stemMaps  []Rename
	ambiguous []string
	size      int
}

func (m *layoutMatch) fit() int      { return len(m.ex.fit) + len(m.misnamed) }
func (m *layoutMatch) problems() int { return len(m.missing) + len(m.extra) + len(m.ex.wrong) }

func matchLayout(found []KeyShape, name string, pats []pattern) *layoutMatch {
	ex := matchExact(found, pats)
	m := &layoutMatch{name: name, ex: ex}
	// Phase two: the keys left over, grouped by stem, against the groups
	// of missing keys.
	fgs := groupByStem(unused(found, ex.used), func(i int) string { return found[i].Key })
	var wgs []*wantGroup
	for _, g := range groupByStem(ex.missing, func(p *pattern) string { return p.Name }) {
		wgs = append(wgs, &wantGroup{stem: g.stem, pats: g.items})
	}
	bind := ex.bind
	renamed := map[*pattern]bool{}
	var amb []*ambiguity
	for _, fg := range fgs {
		var best *wantGroup
		var bestBind binding
		var bestScore [3]int
		var cands []*wantGroup
		for _, wg := range wgs {
			if wg.assigned {
				continue
			}
			nb, ok := compatible(found, fg, wg, bind)
			if !ok {
				continue
			}
			cands = append(cands, wg)
			if sc := nameScore(fg.stem, wg.stem); best == nil || better(sc, bestScore) {
				best, bestBind, bestScore = wg, nb, sc
			}
		}
		if best == nil {
			continue
		}
		best.assigned = true
		bind = bestBind
		// Candidates with the same keys and shapes, whose names agree with
		// the found stem's as much as the chosen one's do at the end,
		// could be the right one as well: the user must check.
		joined := false
		for _, a := range amb {
			if a.targets[best.stem] {
				a.sources = append(a.sources, fg.stem)
				joined = true
			}
		}
		if !joined {
			a := &ambiguity{targets: map[string]bool{best.stem: true}, order: []string{best.stem}, sources: []string{fg.stem}}
			for _, c := range cands {
				if c != best && c.signature() == best.signature() && nameScore(fg.stem, c.stem)[0] == bestScore[0] {
					a.targets[c.stem] = true
					a.order = append(a.order, c.stem)
				}
			}
			if len(a.order) > 1 {
				amb = append(amb, a)
			}
		}
		for _, i := range fg.items {
			_, leaf := stem(found[i].Key)
			want := join(best.stem, leaf)
			m.misnamed = append(m.misnamed, Misnamed{Found: found[i], Want: want})
			for _, p := range best.pats {
				if p.matchName(want) {
					renamed[p] = true
				}
			}
		}
		m.stemMaps = append(m.stemMaps, Rename{From: fg.stem, To: best.stem})
	}
	for _, a := range amb {
		m.ambiguous = append(m.ambiguous, a.String())
	}
	m.ex.bind = bind
	for i := range m.ex.wrong {
		m.ex.wrong[i].Resolved = resolve(mustDims(m.ex.wrong[i].Want, pats), bind)
	}
	for _, p := range ex.missing {
		if !p.Optional && !renamed[p] {
			m.missing = append(m.missing, p.LayoutKey)
		}
	}
	inMisnamed := map[string]bool{}
	for _, mn := range m.misnamed {
		inMisnamed[mn.Found.Key] = true
	}
	for i, f := range found {
		if !ex.used[i] && !inMisnamed[f.Key] {
			m.extra = append(m.extra, f)
		}
	}
	for _, p := range pats {
		if !p.Optional {
			m.size++
		}
	}
	return m
}

// ambiguity is a set of layout stems with the same keys and shapes, and
// the found stems paired with them by name and order.
type ambiguity struct {
	targets map[string]bool
	order   []string
	sources []string
}

func (a *ambiguity) String() string {
	quote := func(ss []string) string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = orRoot(s)
		}
		if len(out) == 1 {
			return out[0]
		}
		return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
	}
	return fmt.Sprintf("%s paired with %s by name and order only: they have the same keys and shapes; if your model uses them the other way round, swap the --map targets", quote(a.sources), quote(a.order))
}

func orRoot(s string) string {
	if s == "" {
		return "(top level)"
	}
	return s
}

// prefixRenames turns stem renames into prefix renames for Rename. With
// collapse, trailing components both sides share are dropped
// ("enc.embedding" -> "encoder.embedding" becomes "enc" -> "encoder").
// Duplicates are removed and the longest FROM comes first, so that a
// specific rename runs before a general one that would hide it.
func prefixRenames(stemMaps []Rename, collapse bool) []Rename {
	var out []Rename
	seen := map[Rename]bool{}
	for _, r := range stemMaps {
		g := r
		if collapse && r.From != "" && r.To != "" {
			pf, pt := strings.Split(r.From, "."), strings.Split(r.To, ".")
			n := 0
			for n < len(pf)-1 && n < len(pt)-1 && pf[len(pf)-1-n] == pt[len(pt)-1-n] {
				n++
			}
			g = Rename{From: strings.Join(pf[:len(pf)-n], "."), To: strings.Join(pt[:len(pt)-n], ".")}
		}
		g = asPrefixRename(g)
		if !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].From) > len(out[j].From) })
	return out
}

// asPrefixRename writes a stem rename so that Rename gives the right key:
// a stem "" (keys at the top level) becomes a plain prefix.
func asPrefixRename(r Rename) Rename {
	switch {
	case r.From == "":
		return Rename{From: "", To: r.To + "."}
	case r.To == "":
		return Rename{From: r.From + ".", To: ""}
	}
	return r
}

// simulate applies renames to the keys as Rename does (skipping those that
// match nothing) and matches the result against the layout again.
func simulate(found []KeyShape, renames []Rename, pats []pattern) (problems int, ok bool) {
	keys := make([]KeyShape, len(found))
	copy(keys, found)
	for _, r := range renames {
		seen := map[string]bool{}
		for i := range keys {
			if r.matches(keys[i].Key) {
				keys[i].Key = r.apply(keys[i].Key)
			}
		}
		for _, k := range keys {
			if seen[k.Key] {
				return 0, false
			}
			seen[k.Key] = true
		}
	}
	m := matchLayout(keys, "", pats)
	return m.problems() + len(m.misnamed), true
}

// Diagnose compares keys found in a checkpoint with the layouts a caller
// knows and describes the closest: which keys fit as named, which fit under
// another name (and the prefix renames, for Rename or --map, that fix
// them), which are missing, extra or of the wrong shape. An error means a
// layout is malformed (a bad Shape).
func Diagnose(found []KeyShape, layouts []Layout) (*Diagnosis, error) {
	d := &Diagnosis{Found: found}
	var best *layoutMatch
	var bestPats []pattern
	for _, l := range layouts {
		pats, err := compile(l)
		if err != nil {
			return nil, err
		}
		d.Layouts = append(d.Layouts, l.Name)
		m := matchLayout(found, l.Name, pats)
		if best == nil || m.fit() > best.fit() || m.fit() == best.fit() && m.problems() < best.problems() {
			best, bestPats = m, pats
		}
	}
	if best == nil {
		return d, nil
	}
	d.Layout = best.name
	d.Fit = len(best.ex.fit)
	d.Misnamed = best.misnamed
	d.Missing = best.missing
	d.Extra = best.extra
	d.WrongShapes = best.ex.wrong
	d.Ambiguous = best.ambiguous
	d.Close = 2*best.fit() >= max(best.size, len(found))
	if len(best.stemMaps) > 0 && d.Close {
		gen := prefixRenames(best.stemMaps, true)
		plain := prefixRenames(best.stemMaps, false)
		pg, okg := simulate(found, gen, bestPats)
		pp, okp := simulate(found, plain, bestPats)
		switch {
		case okg && (!okp || pg <= pp):
			d.Maps, d.Fixes = gen, pg == 0
		case okp:
			d.Maps, d.Fixes = plain, pp == 0
		}
	}
	return d, nil
}

// String is the diagnosis as a message for the user: the keys found (the
// first 20, with shapes), the closest layout and how the keys differ from
// it, and the --map flags that would fix them.
func (d *Diagnosis) String() string {
	var b strings.Builder
	n := len(d.Found)
	head := fmt.Sprintf("the checkpoint has %d keys", n)
	if n > 20 {
		head += " (the first 20)"
	}
	b.WriteString(head + ":\n")
	for _, f := range d.Found[:min(n, 20)] {
		fmt.Fprintf(&b, "  %s %v\n", f.Key, f.Shape)
	}
	if d.Layout == "" {
		return strings.TrimRight(b.String(), "\n")
	}
	if !d.Close {
		fmt.Fprintf(&b, "no known layout is close (%s): this looks like another kind of model.\n", strings.Join(d.Layouts, ", "))
		fmt.Fprintf(&b, "The nearest, %s, would use %d of these keys", d.Layout, d.Fit+len(d.Misnamed))
		if len(d.Misnamed) > 0 {
			fmt.Fprintf(&b, " (%d of them under other names)", len(d.Misnamed))
		}
		if len(d.Missing) > 0 {
			fmt.Fprintf(&b, " and lacks %d of its own: %s", len(d.Missing), listPatterns(d.Missing, 6))
		}
		return b.String()
	}
	fmt.Fprintf(&b, "closest known layout: %s (%d keys fit as named", d.Layout, d.Fit)
	if len(d.Misnamed) > 0 {
		fmt.Fprintf(&b, ", %d under other names", len(d.Misnamed))
	}
	b.WriteString(")\n")
	for _, m := range d.Misnamed {
		fmt.Fprintf(&b, "  misnamed: %s %v would be %s\n", m.Found.Key, m.Found.Shape, m.Want)
	}
	for _, w := range d.WrongShapes {
		want := "[" + strings.Join(w.Want.Shape, " ") + "]"
		if w.Resolved != "" && w.Resolved != want {
			want += " = " + w.Resolved
		}
		fmt.Fprintf(&b, "  wrong shape: %s %v, want %s\n", w.Found.Key, w.Found.Shape, want)
	}
	if len(d.Missing) > 0 {
		fmt.Fprintf(&b, "  missing: %s\n", listPatterns(d.Missing, 10))
	}
	if len(d.Extra) > 0 {
		var ks []string
		for _, e := range d.Extra {
			ks = append(ks, fmt.Sprintf("%s %v", e.Key, e.Shape))
		}
		fmt.Fprintf(&b, "  extra: %s\n", listKeys(ks, 10))
	}
	if len(d.Maps) > 0 {
		flags := make([]string, len(d.Maps))
		for i, r := range d.Maps {
			flags[i] = "--map " + r.String()
		}
		if d.Fixes {
			b.WriteString("renaming fixes it: ")
		} else {
			b.WriteString("renaming fixes the misnamed keys (not the rest): ")
		}
		b.WriteString(strings.Join(flags, " ") + "\n")
	}
	for _, a := range d.Ambiguous {
		b.WriteString("  check: " + a + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func listPatterns(ks []LayoutKey, max int) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = k.String()
	}
	return listKeys(s, max)
}
