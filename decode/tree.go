package decode

// tree holds the tokens of a row's hypotheses, each node linked to its
// prefix, with the slot it was chosen from and, when kept, its attention
// row.
type tree struct {
	nodes  []treeNode
	attn   []float32
	srcLen int
	keep   bool
	// scored: the nodes carry their hypotheses' running scores (addScored).
	scored bool
}

type treeNode struct {
	tok                 int64
	parent, depth, slot int32
	// score is the running score of the hypothesis ending here, when the
	// search records it (addScored).
	score float32
}

// start readies the tree for a row of at most maxLen tokens in k slots:
// each step adds at most 2k-1 nodes (k live, k-1 finished).
func (t *tree) start(s Slots, keep bool, maxLen, k int) {
	t.nodes, t.attn, t.keep, t.srcLen, t.scored = t.nodes[:0], t.attn[:0], keep, s.SourceLength(), false
	if want := min(max(maxLen, 1), 256) * 2 * k; cap(t.nodes) < want {
		t.nodes = make([]treeNode, 0, want)
	}
	if want := cap(t.nodes) * t.srcLen; keep && cap(t.attn) < want {
		t.attn = make([]float32, 0, want)
	}
}

// depth is the length of the hypothesis ending at node (0 for none).
func (t *tree) depth(node int32) int {
	if node < 0 {
		return 0
	}
	return int(t.nodes[node].depth)
}

// add records token tok after node parent (-1: none), chosen from slot i,
// with slot i's attention row of this step.
func (t *tree) add(s Slots, parent int32, i int, tok int64) int32 {
	depth := int32(1)
	if parent >= 0 {
		depth = t.nodes[parent].depth + 1
	}
	t.nodes = append(t.nodes, treeNode{tok: tok, parent: parent, depth: depth, slot: int32(i)})
	if t.keep {
		t.attn = append(t.attn, s.Attention(i)...)
	}
	return int32(len(t.nodes) - 1)
}

// addScored is add with the running score of the hypothesis it makes,
// from which positional gives each token's score.
func (t *tree) addScored(s Slots, parent int32, i int, tok int64, score float32) int32 {
	n := t.add(s, parent, i, tok)
	t.nodes[n].score, t.scored = score, true
	return n
}

// positional returns each token's score of the hypothesis ending at node:
// the differences of the running scores, in float32, as fairseq computes
// its positional_scores; nil when the tree records no scores.
func (t *tree) positional(node int32) []float32 {
	if !t.scored || node < 0 {
		return nil
	}
	out := make([]float32, t.depth(node))
	for j := len(out) - 1; j >= 0; j, node = j-1, t.nodes[node].parent {
		prev := float32(0)
		if p := t.nodes[node].parent; p >= 0 {
			prev = t.nodes[p].score
		}
		out[j] = t.nodes[node].score - prev
	}
	return out
}

// tokens appends the tokens of the hypothesis ending at node to dst.
func (t *tree) tokens(dst []int64, node int32) []int64 {
	n := t.depth(node)
	start := len(dst)
	dst = append(dst, make([]int64, n)...)
	for j := n - 1; j >= 0; j, node = j-1, t.nodes[node].parent {
		dst[start+j] = t.nodes[node].tok
	}
	return dst
}

// attention returns the attention rows of the hypothesis ending at node
// (nil unless the tree keeps them).
func (t *tree) attention(node int32) [][]float32 {
	if node < 0 || !t.keep || t.srcLen == 0 {
		return nil
	}
	n := int(t.nodes[node].depth)
	flat := make([]float32, n*t.srcLen)
	out := make([][]float32, n)
	for j := n - 1; j >= 0; j, node = j-1, t.nodes[node].parent {
		row := flat[j*t.srcLen : (j+1)*t.srcLen : (j+1)*t.srcLen]
		copy(row, t.attn[int(node)*t.srcLen:])
		out[j] = row
	}
	return out
}

// next is what the hypothesis ending at node feeds the next step: its last
// token, and the slot of the hypothesis it extends (the step's parent).
func (t *tree) next(node int32) (tok int64, parent int) {
	return t.nodes[node].tok, int(t.nodes[node].slot)
}

func (t *tree) reset() { t.nodes, t.attn, t.srcLen, t.scored = t.nodes[:0], t.attn[:0], 0, false }
