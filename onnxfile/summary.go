package onnxfile

import (
	"sort"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxpb"
)

// Summary describes a model for `attnx inspect`.
type Summary struct {
	IRVersion       int64             `json:"ir_version"`
	Opsets          []Opset           `json:"opset_imports"`
	ProducerName    string            `json:"producer_name,omitempty"`
	ProducerVersion string            `json:"producer_version,omitempty"`
	Domain          string            `json:"domain,omitempty"`
	ModelVersion    int64             `json:"model_version,omitempty"`
	Doc             string            `json:"doc,omitempty"`
	GraphName       string            `json:"graph_name"`
	Inputs          []ValueSummary    `json:"inputs"`
	Outputs         []ValueSummary    `json:"outputs"`
	Nodes           int               `json:"nodes"`
	Ops             []OpCount         `json:"ops"`
	Initializers    int               `json:"initializers"`
	Parameters      int64             `json:"parameters"`
	ParameterBytes  int64             `json:"parameter_bytes"`
	Metadata        map[string]string `json:"metadata,omitempty"`
}

// Opset is one opset import.
type Opset struct {
	// Domain is the operator set domain; "" is the default ONNX domain.
	Domain  string `json:"domain"`
	Version int64  `json:"version"`
}

// ValueSummary describes a graph input or output.
type ValueSummary struct {
	Name string `json:"name"`
	// Type is the element type ("float32") or, for non-tensor values, a
	// description such as "sequence(float32)".
	Type string `json:"type"`
	// Shape formats the shape as [batch,7,?], or "[*]" for an unknown rank.
	Shape string `json:"shape"`
}

// OpCount is the number of nodes of one operator, subgraphs included.
type OpCount struct {
	// Op is the operator, prefixed with its domain outside the default one
	// ("com.microsoft.Attention").
	Op    string `json:"op"`
	Count int    `json:"count"`
}

// Summarize describes a loaded model: versions, inputs and outputs (graph
// inputs that are initializers are left out), operators counted over all
// subgraphs, and the number and size of initializer parameters.
func Summarize(mp *onnxpb.ModelProto) Summary {
	s := Summary{
		IRVersion:       mp.GetIrVersion(),
		ProducerName:    mp.GetProducerName(),
		ProducerVersion: mp.GetProducerVersion(),
		Domain:          mp.GetDomain(),
		ModelVersion:    mp.GetModelVersion(),
		Doc:             mp.GetDocString(),
		Inputs:          []ValueSummary{},
		Outputs:         []ValueSummary{},
		Ops:             []OpCount{},
		Opsets:          []Opset{},
	}
	for _, o := range mp.OpsetImport {
		s.Opsets = append(s.Opsets, Opset{Domain: o.GetDomain(), Version: o.GetVersion()})
	}
	for _, p := range mp.MetadataProps {
		if s.Metadata == nil {
			s.Metadata = map[string]string{}
		}
		s.Metadata[p.GetKey()] = p.GetValue()
	}
	g := mp.GetGraph()
	s.GraphName = g.GetName()
	inputs, outputs := GraphIO(mp)
	for _, v := range inputs {
		s.Inputs = append(s.Inputs, summarizeValue(v))
	}
	for _, v := range outputs {
		s.Outputs = append(s.Outputs, summarizeValue(v))
	}
	counts := map[string]int{}
	var walk func(*onnxpb.GraphProto)
	walk = func(g *onnxpb.GraphProto) {
		for _, n := range g.GetNode() {
			op := n.GetOpType()
			if d := n.GetDomain(); d != "" && d != "ai.onnx" {
				op = d + "." + op
			}
			counts[op]++
			s.Nodes++
			for _, a := range n.Attribute {
				if a.G != nil {
					walk(a.G)
				}
				for _, sg := range a.Graphs {
					walk(sg)
				}
			}
		}
	}
	walk(g)
	for op, c := range counts {
		s.Ops = append(s.Ops, OpCount{Op: op, Count: c})
	}
	sort.Slice(s.Ops, func(i, j int) bool {
		if s.Ops[i].Count != s.Ops[j].Count {
			return s.Ops[i].Count > s.Ops[j].Count
		}
		return s.Ops[i].Op < s.Ops[j].Op
	})
	for _, t := range g.GetInitializer() {
		s.Initializers++
		// LoadBytes refuses shapes that ElementCount or ByteSize refuse; a
		// model built in memory with one counts it as empty.
		n, _ := builder.ElementCount(t.GetDims())
		s.Parameters += n
		s.ParameterBytes += tensorBytes(t)
	}
	return s
}

// tensorBytes returns the size of a tensor's data.
func tensorBytes(t *onnxpb.TensorProto) int64 {
	dt := builder.DataType(t.GetDataType())
	if dt == builder.String {
		var b int64
		for _, s := range t.StringData {
			b += int64(len(s))
		}
		return b
	}
	if t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		if ref, err := parseExternal(t); err == nil && ref.hasLength {
			return ref.length
		}
	}
	n, _ := builder.ByteSize(dt, t.GetDims()) // 0 for what it refuses
	return n
}

func summarizeValue(v ValueInfo) ValueSummary {
	typ, shape := v.Type.describe()
	return ValueSummary{Name: v.Name, Type: typ, Shape: shape}
}
