// Package layout describes families of checkpoints symbolically: the keys a
// model's state_dict has and their shapes in terms of the model's sizes
// ("4H", "Vt", "E+H"). It is the one description of a layout that both sides
// use: package attention writes each architecture's keys in this form and
// resolves them to concrete shapes for a given configuration; package
// checkpoint's Diagnose compares a checkpoint that fits nothing with them.
//
// The package is a leaf (it imports nothing of attnx), so that the packages
// that read checkpoints and those that know architectures can both depend on
// it without depending on each other.
package layout

import (
	"fmt"
	"strconv"
	"strings"
)

// Layout is a family of checkpoints a caller knows: a name and the keys it
// expects, such as one architecture's state_dict.
type Layout struct {
	Name string
	Keys []Key
}

// Key is one key a Layout expects.
type Key struct {
	// Name is the key. "{n}" stands for a decimal number (a layer index):
	// "encoder.lstm.weight_hh_l{n}" matches every layer's key.
	Name string
	// Shape lists the dimensions, each a number ("1"), a symbol ("H",
	// "Vs"), a multiple of a symbol ("4H"), a sum of those ("E+H") or "*"
	// (any size). A symbol stands for the same size in every key of the
	// layout.
	Shape []string
	// Optional keys may be absent.
	Optional bool
	// Note says what the tensor is, for messages ("the score vector w");
	// it plays no part in matching.
	Note string
}

// String is the key and its symbolic shape, as in "decoder.weight [1 H]".
func (k Key) String() string { return k.Name + " [" + strings.Join(k.Shape, " ") + "]" }

// What is the shape in the spec's terms with the note, as in
// "4H x (E+H): [embedding; context]": dimensions joined with " x ", a sum
// in parentheses when there are several dimensions.
func (k Key) What() string {
	dims := make([]string, len(k.Shape))
	for i, s := range k.Shape {
		if len(k.Shape) > 1 && strings.Contains(s, "+") {
			s = "(" + s + ")"
		}
		dims[i] = s
	}
	w := strings.Join(dims, " x ")
	if k.Note != "" {
		w += ": " + k.Note
	}
	return w
}

// Term is one summand of a Dim: Mul times the size Sym stands for, or the
// constant Mul when Sym is "".
type Term struct {
	Mul int64
	Sym string
}

// Dim is one parsed dimension of a Key's Shape: the sum of its terms, or
// any size.
type Dim struct {
	Terms []Term
	Any   bool
}

// ParseDim parses one dimension of a Key's Shape.
func ParseDim(s string) (Dim, error) {
	if s == "*" {
		return Dim{Any: true}, nil
	}
	var d Dim
	for _, part := range strings.Split(s, "+") {
		t, err := parseTerm(part)
		if err != nil {
			return Dim{}, fmt.Errorf("bad dimension %q: %w", s, err)
		}
		d.Terms = append(d.Terms, t)
	}
	return d, nil
}

func parseTerm(s string) (Term, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	mul := int64(1)
	if i > 0 {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n <= 0 {
			return Term{}, fmt.Errorf("%q is not a positive number", s[:i])
		}
		mul = n
	}
	sym := s[i:]
	if sym == "" && i == 0 {
		return Term{}, fmt.Errorf("empty term")
	}
	for _, r := range sym {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return Term{}, fmt.Errorf("want a number, a symbol, a number times a symbol (4H), a sum of those (E+H) or *")
		}
	}
	return Term{Mul: mul, Sym: sym}, nil
}

// ParseShape parses every dimension of a shape.
func ParseShape(shape []string) ([]Dim, error) {
	out := make([]Dim, len(shape))
	for i, s := range shape {
		d, err := ParseDim(s)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// Sizes maps symbols to the sizes they stand for.
type Sizes map[string]int64

// Eval is the dimension's size under sizes; false when it is Any or a
// symbol is unknown.
func (d Dim) Eval(sizes Sizes) (int64, bool) {
	if d.Any {
		return 0, false
	}
	var n int64
	for _, t := range d.Terms {
		if t.Sym == "" {
			n += t.Mul
			continue
		}
		v, ok := sizes[t.Sym]
		if !ok {
			return 0, false
		}
		n += t.Mul * v
	}
	return n, true
}

// Unify checks that a dimension of size n fits d under sizes and returns
// the symbol it fixes, if any: when exactly one symbol of d is unknown, it
// must take a positive whole value, which is returned with its name. With
// two or more unknown symbols nothing can be decided and n is accepted.
func (d Dim) Unify(n int64, sizes Sizes) (sym string, v int64, ok bool) {
	if d.Any {
		return "", 0, true
	}
	var known int64
	var unknown []Term
	for _, t := range d.Terms {
		switch val, ok := sizes[t.Sym]; {
		case t.Sym == "":
			known += t.Mul
		case ok:
			known += t.Mul * val
		default:
			unknown = append(unknown, t)
		}
	}
	switch len(unknown) {
	case 0:
		return "", 0, n == known
	case 1:
		rest := n - known
		if rest <= 0 || rest%unknown[0].Mul != 0 {
			return "", 0, false
		}
		return unknown[0].Sym, rest / unknown[0].Mul, true
	}
	return "", 0, n > known
}

// Resolve is the concrete shape of a symbolic one under sizes; an error
// names a malformed dimension or one that sizes do not determine.
func Resolve(shape []string, sizes Sizes) ([]int64, error) {
	dims, err := ParseShape(shape)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(dims))
	for i, d := range dims {
		v, ok := d.Eval(sizes)
		if !ok {
			return nil, fmt.Errorf("dimension %q of shape [%s]: size not known", shape[i], strings.Join(shape, " "))
		}
		out[i] = v
	}
	return out, nil
}
