package builder

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// AttrKind is the kind of an attribute's value.
type AttrKind int

// The attribute kinds that attnx writes. The values match
// onnx.AttributeProto.AttributeType.
const (
	AttrFloat   AttrKind = 1
	AttrInt     AttrKind = 2
	AttrString  AttrKind = 3
	AttrTensor  AttrKind = 4
	AttrGraph   AttrKind = 5
	AttrFloats  AttrKind = 6
	AttrInts    AttrKind = 7
	AttrStrings AttrKind = 8
)

// Attr is a node attribute.
type Attr struct {
	Name    string
	Kind    AttrKind
	Float   float32
	Int     int64
	Str     string
	Tensor  *Tensor
	Graph   *Graph
	Floats  []float32
	Ints    []int64
	Strings []string
}

// IntAttr returns an int attribute.
func IntAttr(name string, v int64) Attr { return Attr{Name: name, Kind: AttrInt, Int: v} }

// FloatAttr returns a float attribute.
func FloatAttr(name string, v float32) Attr { return Attr{Name: name, Kind: AttrFloat, Float: v} }

// StringAttr returns a string attribute.
func StringAttr(name, v string) Attr { return Attr{Name: name, Kind: AttrString, Str: v} }

// IntsAttr returns an ints attribute.
func IntsAttr(name string, v []int64) Attr {
	return Attr{Name: name, Kind: AttrInts, Ints: append([]int64{}, v...)}
}

// FloatsAttr returns a floats attribute.
func FloatsAttr(name string, v []float32) Attr {
	return Attr{Name: name, Kind: AttrFloats, Floats: append([]float32{}, v...)}
}

// StringsAttr returns a strings attribute.
func StringsAttr(name string, v []string) Attr {
	return Attr{Name: name, Kind: AttrStrings, Strings: append([]string{}, v...)}
}

// TensorAttr returns a tensor attribute.
func TensorAttr(name string, t *Tensor) Attr { return Attr{Name: name, Kind: AttrTensor, Tensor: t} }

// GraphAttr returns a graph attribute (a Loop or If body).
func GraphAttr(name string, g *Graph) Attr { return Attr{Name: name, Kind: AttrGraph, Graph: g} }

// String formats the attribute as name=value.
func (a Attr) String() string {
	var v string
	switch a.Kind {
	case AttrFloat:
		v = strconv.FormatFloat(float64(a.Float), 'g', -1, 32)
	case AttrInt:
		v = strconv.FormatInt(a.Int, 10)
	case AttrString:
		v = strconv.Quote(a.Str)
	case AttrTensor:
		if a.Tensor != nil {
			v = "tensor " + a.Tensor.Type().String()
		}
	case AttrGraph:
		if a.Graph != nil {
			v = "graph " + a.Graph.Name
		}
	case AttrFloats:
		v = fmt.Sprint(a.Floats)
	case AttrInts:
		v = fmt.Sprint(a.Ints)
	case AttrStrings:
		v = "[" + strings.Join(a.Strings, " ") + "]"
	}
	return a.Name + "=" + v
}

func sortAttrs(attrs []Attr) []Attr {
	out := append([]Attr(nil), attrs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
