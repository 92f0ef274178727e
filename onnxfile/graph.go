package onnxfile

import (
	"fmt"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxpb"
)

// Graph is a loaded graph in plain Go terms, for code that evaluates models
// without touching protobuf (package onnxeval): its declared inputs and
// outputs, its initializers decoded as TensorFromProto does, and its nodes
// in file order, a graph attribute (a Loop's body) as a nested Graph in
// Attr.Graph.
type Graph struct {
	// Name is the graph's name.
	Name string
	// Inputs are the declared inputs, initializers included (a subgraph's
	// inputs are its formal parameters).
	Inputs []ValueInfo
	// Outputs are the declared outputs.
	Outputs []ValueInfo
	// Initializers are the graph's constant tensors, by name in Name.
	Initializers []*builder.Tensor
	// Nodes are the graph's nodes in file order; Attrs["body"].Graph holds
	// a Loop's body.
	Nodes []GraphNode
	// Opset is the version of the default ONNX domain the model imports
	// (main graphs; 0 when the model names none, and in subgraphs).
	Opset int64
}

// GraphNode is a node of a Graph: a Node whose graph attributes are whole
// Graphs (Graph, besides the nodes in Body).
type GraphNode struct {
	// Name is the node's name ("" when the file gives none).
	Name string
	Node
	// Graphs holds the node's graph attributes by name.
	Graphs map[string]*Graph
}

// ReadGraph returns mp's main graph as a Graph. External data must have been
// loaded (LoadWith with LoadExternalData); a tensor still stored outside is
// an error naming it. The initializers share mp's raw bytes (weights are
// most of a model's memory): neither may be changed while the other is in
// use.
func ReadGraph(mp *onnxpb.ModelProto) (*Graph, error) {
	if mp.GetGraph() == nil {
		return nil, fmt.Errorf("onnxfile: the model has no graph")
	}
	g, err := graphFromProto(mp.GetGraph())
	if err != nil {
		return nil, err
	}
	for _, o := range mp.GetOpsetImport() {
		if o.GetDomain() == "" || o.GetDomain() == "ai.onnx" {
			g.Opset = o.GetVersion()
		}
	}
	return g, nil
}

func graphFromProto(gp *onnxpb.GraphProto) (*Graph, error) {
	g := &Graph{Name: gp.GetName()}
	for _, v := range gp.GetInput() {
		g.Inputs = append(g.Inputs, valueInfoFromProto(v))
	}
	for _, v := range gp.GetOutput() {
		g.Outputs = append(g.Outputs, valueInfoFromProto(v))
	}
	for _, tp := range gp.GetInitializer() {
		t, err := tensorFromProto(tp, true)
		if err != nil {
			return nil, fmt.Errorf("graph %q initializer %q: %w", g.Name, tp.GetName(), err)
		}
		t.Name = tp.GetName()
		g.Initializers = append(g.Initializers, t)
	}
	nodes, err := nodesFromProto(gp.GetNode())
	if err != nil {
		return nil, fmt.Errorf("graph %q: %w", g.Name, err)
	}
	for i, np := range gp.GetNode() {
		gn := GraphNode{Name: np.GetName(), Node: nodes[i]}
		for _, ap := range np.GetAttribute() {
			if ap.GetType() != onnxpb.AttributeProto_GRAPH {
				continue
			}
			sub, err := graphFromProto(ap.GetG())
			if err != nil {
				return nil, fmt.Errorf("graph %q node %d (%s) attribute %q: %w", g.Name, i, np.GetOpType(), ap.GetName(), err)
			}
			if gn.Graphs == nil {
				gn.Graphs = map[string]*Graph{}
			}
			gn.Graphs[ap.GetName()] = sub
		}
		g.Nodes = append(g.Nodes, gn)
	}
	return g, nil
}
