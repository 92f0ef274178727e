package onnxfile

import (
	"errors"
	"fmt"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// ValueKind is what a declared value is: a tensor, a sequence, ...
type ValueKind string

// The kinds of ONNX values (TypeProto's oneof). KindUndeclared is a value
// whose ValueInfoProto has no type.
const (
	KindUndeclared   ValueKind = ""
	KindTensor       ValueKind = "tensor"
	KindSparseTensor ValueKind = "sparse_tensor"
	KindSequence     ValueKind = "sequence"
	KindMap          ValueKind = "map"
	KindOptional     ValueKind = "optional"
)

// ValueType is the type a model file declares for a value.
type ValueType struct {
	// Kind is what the value is.
	Kind ValueKind
	// Elem is the element type of a tensor or sparse tensor (Undefined when
	// not declared), and the key type of a map.
	Elem builder.DataType
	// Shape is the declared shape of a tensor or sparse tensor: nil when the
	// file declares none (unknown rank); a dimension with neither a value
	// nor a name is unknown (builder.UnknownDim).
	Shape builder.Shape
	// Inner is the type of the elements of a sequence or optional, or of
	// the values of a map; nil when not declared.
	Inner *ValueType
}

// TensorElem returns the element type of a tensor, or of the tensors of a
// sequence of tensors; ok is false for any other kind of value.
func (t ValueType) TensorElem() (elem builder.DataType, ok bool) {
	switch {
	case t.Kind == KindTensor:
		return t.Elem, true
	case t.Kind == KindSequence && t.Inner != nil && t.Inner.Kind == KindTensor:
		return t.Inner.Elem, true
	}
	return builder.Undefined, false
}

// ValueInfo is a graph input or output as the model file declares it.
type ValueInfo struct {
	Name string
	Type ValueType
}

// GraphIO returns the inputs and outputs of mp's main graph, in order; graph
// inputs that are initializers (ONNX Runtime does not ask for them) are left
// out.
func GraphIO(mp *onnxpb.ModelProto) (inputs, outputs []ValueInfo) {
	g := mp.GetGraph()
	inits := map[string]bool{}
	for _, t := range g.GetInitializer() {
		inits[t.GetName()] = true
	}
	inputs, outputs = []ValueInfo{}, []ValueInfo{}
	for _, v := range g.GetInput() {
		if !inits[v.GetName()] {
			inputs = append(inputs, valueInfoFromProto(v))
		}
	}
	for _, v := range g.GetOutput() {
		outputs = append(outputs, valueInfoFromProto(v))
	}
	return inputs, outputs
}

// ReadGraphIO is GraphIO for a serialized model. It decodes only the main
// graph's inputs, outputs and initializer names, skipping nodes and tensor
// data in place, so it costs little even for a model of gigabytes.
func ReadGraphIO(data []byte) (inputs, outputs []ValueInfo, err error) {
	model := (&onnxpb.ModelProto{}).ProtoReflect().Descriptor().Fields()
	graph := (&onnxpb.GraphProto{}).ProtoReflect().Descriptor().Fields()
	tensor := (&onnxpb.TensorProto{}).ProtoReflect().Descriptor().Fields()
	fieldGraph := model.ByName("graph").Number()
	fieldInput, fieldOutput := graph.ByName("input").Number(), graph.ByName("output").Number()
	fieldInit, fieldName := graph.ByName("initializer").Number(), tensor.ByName("name").Number()

	// A message field that occurs more than once is the merge of its
	// occurrences: every one adds to the repeated fields.
	g := &onnxpb.GraphProto{}
	err = eachBytesField(data, func(num protowire.Number, b []byte) error {
		if num != fieldGraph {
			return nil
		}
		return eachBytesField(b, func(num protowire.Number, b []byte) error {
			switch num {
			case fieldInput, fieldOutput:
				v := &onnxpb.ValueInfoProto{}
				if err := proto.Unmarshal(b, v); err != nil {
					return fmt.Errorf("graph input or output: %w", err)
				}
				if num == fieldInput {
					g.Input = append(g.Input, v)
				} else {
					g.Output = append(g.Output, v)
				}
			case fieldInit:
				t := &onnxpb.TensorProto{}
				g.Initializer = append(g.Initializer, t)
				return eachBytesField(b, func(num protowire.Number, b []byte) error {
					if num == fieldName {
						t.Name = proto.String(string(b))
					}
					return nil
				})
			}
			return nil
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading the graph's inputs and outputs: %w", err)
	}
	inputs, outputs = GraphIO(&onnxpb.ModelProto{Graph: g})
	return inputs, outputs, nil
}

var errMalformed = errors.New("malformed protobuf")

// eachBytesField calls f with the number and contents of every
// length-delimited field of the message in b, in order, and skips the
// fields of other wire types.
func eachBytesField(b []byte, f func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
		if typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errMalformed
			}
			if err := f(num, v); err != nil {
				return err
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
	}
	return nil
}

func valueInfoFromProto(v *onnxpb.ValueInfoProto) ValueInfo {
	return ValueInfo{Name: v.GetName(), Type: valueTypeFromProto(v.GetType())}
}

// valueTypeFromProto reads a TypeProto; nil is an undeclared type.
func valueTypeFromProto(t *onnxpb.TypeProto) ValueType {
	inner := func(t *onnxpb.TypeProto) *ValueType {
		if t == nil {
			return nil
		}
		vt := valueTypeFromProto(t)
		return &vt
	}
	switch v := t.GetValue().(type) {
	case *onnxpb.TypeProto_TensorType:
		return ValueType{Kind: KindTensor, Elem: builder.DataType(v.TensorType.GetElemType()), Shape: shapeFromProto(v.TensorType.GetShape())}
	case *onnxpb.TypeProto_SparseTensorType:
		return ValueType{Kind: KindSparseTensor, Elem: builder.DataType(v.SparseTensorType.GetElemType()), Shape: shapeFromProto(v.SparseTensorType.GetShape())}
	case *onnxpb.TypeProto_SequenceType:
		return ValueType{Kind: KindSequence, Inner: inner(v.SequenceType.GetElemType())}
	case *onnxpb.TypeProto_OptionalType:
		return ValueType{Kind: KindOptional, Inner: inner(v.OptionalType.GetElemType())}
	case *onnxpb.TypeProto_MapType:
		return ValueType{Kind: KindMap, Elem: builder.DataType(v.MapType.GetKeyType()), Inner: inner(v.MapType.GetValueType())}
	}
	return ValueType{Kind: KindUndeclared}
}

// shapeFromProto reads a TensorShapeProto; nil is an unknown rank.
func shapeFromProto(sp *onnxpb.TensorShapeProto) builder.Shape {
	if sp == nil {
		return nil
	}
	s := make(builder.Shape, len(sp.Dim))
	for i, d := range sp.Dim {
		switch v := d.GetValue().(type) {
		case *onnxpb.TensorShapeProto_Dimension_DimValue:
			if v.DimValue >= 0 {
				s[i] = builder.D(v.DimValue)
				continue
			}
		case *onnxpb.TensorShapeProto_Dimension_DimParam:
			if v.DimParam != "" {
				s[i] = builder.Sym(v.DimParam)
				continue
			}
		}
		s[i] = builder.UnknownDim()
	}
	return s
}

// describe formats the type for Summary: an element type ("float32") or a
// description ("sequence(float32[n])"), and a shape for tensors ("[*]"
// for an unknown rank, "" for other kinds).
func (t ValueType) describe() (typ, shape string) {
	sub := func(t *ValueType) string {
		if t == nil {
			return "unknown[*]"
		}
		typ, shape := t.describe()
		return typ + shape
	}
	switch t.Kind {
	case KindTensor:
		return t.Elem.String(), t.Shape.String()
	case KindSparseTensor:
		return "sparse(" + t.Elem.String() + ")", t.Shape.String()
	case KindSequence, KindOptional:
		return string(t.Kind) + "(" + sub(t.Inner) + ")", ""
	case KindMap:
		return fmt.Sprintf("map(%v,%s)", t.Elem, sub(t.Inner)), ""
	}
	return "unknown", "[*]"
}

// Node is a node of a loaded model in builder's terms.
type Node struct {
	// Op and Domain name the operator ("" is the default ONNX domain).
	Op, Domain string
	// Inputs and Outputs name the node's values; "" is an omitted one.
	Inputs, Outputs []string
	// Attrs holds the attributes by name.
	Attrs map[string]Attr
}

// Attr is a node attribute of a loaded model: its value in the field of
// builder.Attr that its kind uses, except a graph attribute, whose nodes are
// in Body (builder.Attr.Graph stays nil). Kinds builder.Attr has no field for
// (sparse tensors, lists of tensors or graphs, type protos) carry their ONNX
// AttributeType number in Kind and no value.
type Attr struct {
	builder.Attr
	Body []Node
}

// GraphNodes returns the nodes of mp's main graph in order, with tensor
// attributes decoded as TensorFromProto does and graph attributes as the
// nodes of their graphs. A tensor attribute it cannot decode (external
// data, say) is an error naming the node and attribute.
func GraphNodes(mp *onnxpb.ModelProto) ([]Node, error) {
	return nodesFromProto(mp.GetGraph().GetNode())
}

func nodesFromProto(nps []*onnxpb.NodeProto) ([]Node, error) {
	nodes := make([]Node, len(nps))
	for i, np := range nps {
		n := Node{Op: np.GetOpType(), Domain: np.GetDomain(), Inputs: np.GetInput(), Outputs: np.GetOutput(), Attrs: map[string]Attr{}}
		for _, ap := range np.GetAttribute() {
			a := Attr{Attr: builder.Attr{Name: ap.GetName(), Kind: builder.AttrKind(ap.GetType())}}
			switch a.Kind {
			case builder.AttrFloat:
				a.Float = ap.GetF()
			case builder.AttrInt:
				a.Int = ap.GetI()
			case builder.AttrString:
				a.Str = string(ap.GetS())
			case builder.AttrFloats:
				a.Floats = ap.GetFloats()
			case builder.AttrInts:
				a.Ints = ap.GetInts()
			case builder.AttrStrings:
				for _, s := range ap.GetStrings() {
					a.Strings = append(a.Strings, string(s))
				}
			case builder.AttrTensor:
				t, err := TensorFromProto(ap.GetT())
				if err != nil {
					return nil, fmt.Errorf("node %d (%s) attribute %q: %w", i, n.Op, a.Name, err)
				}
				a.Tensor = t
			case builder.AttrGraph:
				body, err := nodesFromProto(ap.GetG().GetNode())
				if err != nil {
					return nil, fmt.Errorf("node %d (%s) attribute %q: %w", i, n.Op, a.Name, err)
				}
				a.Body = body
			}
			n.Attrs[a.Name] = a
		}
		nodes[i] = n
	}
	return nodes, nil
}
