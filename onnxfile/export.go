// Package export converts between builder models and ONNX protobuf
// (onnxpb.ModelProto). It is the only package in attnx that touches
// protobuf: ToProto and Marshal turn a *builder.Model into an ONNX model,
// WriteFile writes one atomically (with external data for large tensors),
// Load and LoadBytes decode any .onnx file, ReadTensorProto decodes the
// TensorProto files of the ONNX backend tests, and Summarize describes a
// loaded model for `attnx inspect`.
package onnxfile

import (
	"errors"
	"fmt"
	"sort"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxpb"
	"google.golang.org/protobuf/proto"
)

// maxProtoSize is protobuf's limit on one serialized message (2 GiB - 1).
// It is a variable so that tests can exercise the automatic switch to
// external data without allocating gigabytes.
var maxProtoSize int64 = 1<<31 - 1

// ProtoOptions tunes ToProtoWith.
type ProtoOptions struct {
	// ValueInfo records the builder's inferred type of every intermediate
	// value (node outputs that are not graph outputs) in graph.value_info.
	ValueInfo bool
}

// ToProto converts m to an ONNX ModelProto after checking it with
// m.Check. Tensor data is shared with the builder's tensors, not copied:
// do not modify either while the other is in use.
func ToProto(m *builder.Model) (*onnxpb.ModelProto, error) {
	return ToProtoWith(m, ProtoOptions{})
}

// ToProtoWith is ToProto with options.
func ToProtoWith(m *builder.Model, opt ProtoOptions) (*onnxpb.ModelProto, error) {
	if err := m.Check(); err != nil {
		return nil, fmt.Errorf("onnxfile: model is not valid: %w", err)
	}
	opset := m.Opset
	if opset == 0 {
		opset = builder.DefaultOpset
	}
	mp := &onnxpb.ModelProto{
		IrVersion:   proto.Int64(builder.IRVersion(opset)),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(opset)}},
	}
	if m.ProducerName != "" {
		mp.ProducerName = proto.String(m.ProducerName)
	}
	if m.ProducerVersion != "" {
		mp.ProducerVersion = proto.String(m.ProducerVersion)
	}
	if m.Domain != "" {
		mp.Domain = proto.String(m.Domain)
	}
	if m.Version != 0 {
		mp.ModelVersion = proto.Int64(m.Version)
	}
	if m.Doc != "" {
		mp.DocString = proto.String(m.Doc)
	}
	for _, k := range m.MetadataKeys() {
		mp.MetadataProps = append(mp.MetadataProps, &onnxpb.StringStringEntryProto{Key: proto.String(k), Value: proto.String(m.Metadata[k])})
	}
	domains := map[string]bool{}
	gp, err := graphToProto(m.Graph, opt, domains)
	if err != nil {
		return nil, err
	}
	mp.Graph = gp
	// Operators from other domains (such as com.microsoft) need an opset
	// import of their own; builder models do not record a version, so 1.
	var extra []string
	for d := range domains {
		if d != "" && d != "ai.onnx" {
			extra = append(extra, d)
		}
	}
	sort.Strings(extra)
	for _, d := range extra {
		mp.OpsetImport = append(mp.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String(d), Version: proto.Int64(1)})
	}
	return mp, nil
}

func graphToProto(g *builder.Graph, opt ProtoOptions, domains map[string]bool) (*onnxpb.GraphProto, error) {
	gp := &onnxpb.GraphProto{Name: proto.String(g.Name)}
	if g.Doc != "" {
		gp.DocString = proto.String(g.Doc)
	}
	for _, v := range g.Inputs() {
		gp.Input = append(gp.Input, valueInfo(v.Name(), v.Type()))
	}
	for _, v := range g.Initializers() {
		t := v.Const()
		if t == nil {
			return nil, fmt.Errorf("onnxfile: graph %q: initializer %q has no tensor", g.Name, v.Name())
		}
		tp, err := TensorToProto(t)
		if err != nil {
			return nil, fmt.Errorf("onnxfile: graph %q: initializer %q: %w", g.Name, v.Name(), err)
		}
		tp.Name = proto.String(v.Name())
		gp.Initializer = append(gp.Initializer, tp)
	}
	isOutput := map[*builder.Value]bool{}
	for _, v := range g.Outputs() {
		isOutput[v] = true
		gp.Output = append(gp.Output, valueInfo(v.Name(), v.Type()))
	}
	for _, n := range g.Nodes() {
		np, err := nodeToProto(n, opt, domains)
		if err != nil {
			return nil, fmt.Errorf("onnxfile: graph %q: %w", g.Name, err)
		}
		gp.Node = append(gp.Node, np)
		if opt.ValueInfo {
			for _, o := range n.Outputs {
				if o != nil && !isOutput[o] && o.Elem() != builder.Undefined {
					gp.ValueInfo = append(gp.ValueInfo, valueInfo(o.Name(), o.Type()))
				}
			}
		}
	}
	return gp, nil
}

func nodeToProto(n *builder.Node, opt ProtoOptions, domains map[string]bool) (*onnxpb.NodeProto, error) {
	np := &onnxpb.NodeProto{Name: proto.String(n.Name), OpType: proto.String(n.OpType)}
	if n.Domain != "" {
		np.Domain = proto.String(n.Domain)
	}
	domains[n.Domain] = true
	if n.Doc != "" {
		np.DocString = proto.String(n.Doc)
	}
	// Omitted optional inputs stay in place as "" (even at the end, which
	// ONNX also allows); omitted trailing outputs are dropped.
	for _, in := range n.Inputs {
		if in == nil {
			np.Input = append(np.Input, "")
		} else {
			np.Input = append(np.Input, in.Name())
		}
	}
	for _, out := range n.Outputs {
		if out == nil {
			np.Output = append(np.Output, "")
		} else {
			np.Output = append(np.Output, out.Name())
		}
	}
	for len(np.Output) > 0 && np.Output[len(np.Output)-1] == "" {
		np.Output = np.Output[:len(np.Output)-1]
	}
	for _, a := range n.Attrs {
		ap, err := attrToProto(a, opt, domains)
		if err != nil {
			return nil, fmt.Errorf("node %s (%s): attribute %q: %w", n.Name, n.OpType, a.Name, err)
		}
		np.Attribute = append(np.Attribute, ap)
	}
	return np, nil
}

func attrToProto(a builder.Attr, opt ProtoOptions, domains map[string]bool) (*onnxpb.AttributeProto, error) {
	ap := &onnxpb.AttributeProto{Name: proto.String(a.Name)}
	typ := onnxpb.AttributeProto_AttributeType(a.Kind)
	switch a.Kind {
	case builder.AttrFloat:
		ap.F = proto.Float32(a.Float)
	case builder.AttrInt:
		ap.I = proto.Int64(a.Int)
	case builder.AttrString:
		ap.S = []byte(a.Str)
	case builder.AttrTensor:
		if a.Tensor == nil {
			return nil, errors.New("tensor attribute without a tensor")
		}
		tp, err := TensorToProto(a.Tensor)
		if err != nil {
			return nil, err
		}
		ap.T = tp
	case builder.AttrGraph:
		if a.Graph == nil {
			return nil, errors.New("graph attribute without a graph")
		}
		gp, err := graphToProto(a.Graph, opt, domains)
		if err != nil {
			return nil, err
		}
		ap.G = gp
	case builder.AttrFloats:
		ap.Floats = append([]float32{}, a.Floats...)
	case builder.AttrInts:
		ap.Ints = append([]int64{}, a.Ints...)
	case builder.AttrStrings:
		for _, s := range a.Strings {
			ap.Strings = append(ap.Strings, []byte(s))
		}
	default:
		return nil, fmt.Errorf("unsupported attribute kind %d (want 1..8)", a.Kind)
	}
	ap.Type = typ.Enum()
	return ap, nil
}

// valueInfo describes a tensor value: symbolic dimensions become dim_param,
// unknown ones an empty Dimension, and an unknown rank no shape at all.
func valueInfo(name string, t builder.Type) *onnxpb.ValueInfoProto {
	tt := &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(t.Elem))}
	if t.Shape != nil {
		sp := &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{}}
		for _, d := range t.Shape {
			dim := &onnxpb.TensorShapeProto_Dimension{}
			switch {
			case d.Param != "":
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d.Param}
			case d.Value >= 0:
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d.Value}
			}
			sp.Dim = append(sp.Dim, dim)
		}
		tt.Shape = sp
	}
	return &onnxpb.ValueInfoProto{
		Name: proto.String(name),
		Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: tt}},
	}
}

// Marshal converts m with ToProto and serializes it deterministically: the
// same model built twice gives byte-identical output. Models over
// protobuf's 2 GiB limit are refused; write them with WriteFile, which
// moves large tensors to external data.
func Marshal(m *builder.Model) ([]byte, error) {
	mp, err := ToProto(m)
	if err != nil {
		return nil, err
	}
	return MarshalProto(mp)
}

// MarshalProto serializes a ModelProto deterministically, for example to
// re-serialize a model returned by Load.
func MarshalProto(mp *onnxpb.ModelProto) ([]byte, error) {
	if mp == nil {
		return nil, errors.New("onnxfile: nil model")
	}
	if n := int64(proto.Size(mp)); n > maxProtoSize {
		return nil, fmt.Errorf("onnxfile: model is %d bytes, over protobuf's 2 GiB limit; write it with WriteFile and external data", n)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(mp)
	if err != nil {
		return nil, fmt.Errorf("onnxfile: serializing model: %w", err)
	}
	return b, nil
}
