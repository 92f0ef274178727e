package builder

// UniqueName returns a fresh name "prefix_N" that nothing else in g's model
// uses, and reserves it. Code that builds subgraphs (package ops, for Loop and
// If bodies) derives the names of body inputs and outputs from it, so that
// they are unique and deterministic.
func (g *Graph) UniqueName(prefix string) string { return g.uniqueName(prefix) }
