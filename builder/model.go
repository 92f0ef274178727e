package builder

import (
	"errors"
	"fmt"
	"sort"
)

// DefaultOpset is the ONNX opset attnx builds for.
const DefaultOpset = 17

// Model is a graph with the model-level fields of an ONNX file.
type Model struct {
	// Graph is the main graph.
	Graph *Graph
	// Opset is the default-domain opset version (DefaultOpset when 0).
	Opset int64
	// ProducerName and ProducerVersion identify the tool that built it.
	ProducerName, ProducerVersion string
	// Domain and Version describe the model itself.
	Domain  string
	Version int64
	// Doc is the model's doc string.
	Doc string
	// Metadata holds metadata_props; written sorted by key.
	Metadata map[string]string
}

// NewModel returns a model for g at DefaultOpset, produced by attnx.
func NewModel(g *Graph) *Model {
	return &Model{Graph: g, Opset: DefaultOpset, ProducerName: "attnx", Metadata: map[string]string{}}
}

// MetadataKeys returns the metadata keys in sorted order.
func (m *Model) MetadataKeys() []string {
	keys := make([]string, 0, len(m.Metadata))
	for k := range m.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Check returns the first build error, or a structural problem: a graph
// without outputs, a subgraph output that is not defined.
func (m *Model) Check() error {
	if m == nil || m.Graph == nil {
		return errors.New("model has no graph")
	}
	if err := m.Graph.Err(); err != nil {
		return err
	}
	return checkGraph(m.Graph)
}

func checkGraph(g *Graph) error {
	if len(g.outputs) == 0 {
		return fmt.Errorf("graph %q has no outputs", g.Name)
	}
	for _, n := range g.nodes {
		for _, a := range n.Attrs {
			if a.Kind == AttrGraph && a.Graph != nil {
				if err := checkGraph(a.Graph); err != nil {
					return fmt.Errorf("%s %s: %w", n.OpType, n.Name, err)
				}
			}
		}
	}
	return nil
}

// IRVersion returns the ONNX IR version that goes with an opset of the
// default domain, as in onnx.helper.VERSION_TABLE.
func IRVersion(opset int64) int64 {
	switch {
	case opset <= 0:
		return 8
	case opset <= 6:
		return 3
	case opset <= 8:
		return 4
	case opset <= 10:
		return 5
	case opset <= 11:
		return 6
	case opset <= 14:
		return 7
	case opset <= 18:
		return 8
	case opset <= 20:
		return 9
	}
	return 10
}
