package qlayer

import (
	"fmt"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/ops"
	"github.com/attnx/attnx/quant"
)

// Embedding adds a lookup of the rows ids (int64 or int32, any shape) of
// the table [rows, dim]: float32 (Gather) when rowWise is false; otherwise
// the table is stored as int8 with one scale per row (quant.QuantizeInt8,
// axis 0), and the lookup gathers the int8 rows and their scales and
// dequantizes only those: Cast(Gather(q, ids)) * Unsqueeze(Gather(scales,
// ids), -1). The result is [ids..., dim] float32. Initializers go into g,
// named name.*; a table that cannot be quantized is recorded as g's error.
func Embedding(g *builder.Graph, name string, ids *builder.Value, table []float32, rows, dim int, rowWise bool) Built {
	if !rowWise {
		t := builder.FloatTensor([]int64{int64(rows), int64(dim)}, table)
		return Built{Y: ops.Gather(g.Init(name+".weight", t), ids, 0), Bytes: len(t.Raw)}
	}
	t, ok := NewInt8Table(g, name, table, rows, dim)
	if !ok {
		return Built{Y: ops.Identity(ids)}
	}
	return Built{Y: t.Lookup(ids), Bytes: t.Bytes}
}

// Int8Table is an embedding table stored as int8 rows with one scale per
// row, in a graph: what Embedding's row-wise form looks rows up in. A
// table used by several lookups of one graph (an embedding shared by
// encoder and decoder) is added once and looked up from each.
type Int8Table struct {
	q, scales, last *builder.Value
	// Bytes is the size of the stored table.
	Bytes int
}

// NewInt8Table adds the table [rows, dim] to g as int8 rows and scales,
// named name.*; ok is false (and g's error set) when it cannot be
// quantized.
func NewInt8Table(g *builder.Graph, name string, table []float32, rows, dim int) (Int8Table, bool) {
	q, err := quant.QuantizeInt8(table, rows, dim, 0)
	if err != nil {
		g.Fail(fmt.Errorf("qlayer: %s (int8 rows): %w", name, err))
		return Int8Table{}, false
	}
	qt, st := q.Tensor(), q.ScaleTensor()
	return Int8Table{
		q:      g.Init(name+".weight_q", qt),
		scales: g.Init(name+".scale", st),
		last:   g.Init(name+".last_axis", builder.Int64Tensor([]int64{1}, []int64{-1})),
		Bytes:  len(qt.Raw) + len(st.Raw) + 8,
	}, true
}

// Lookup gathers the rows ids (any shape) and dequantizes only those:
// Cast(Gather(q, ids)) * Unsqueeze(Gather(scales, ids), -1), [ids..., dim].
func (t Int8Table) Lookup(ids *builder.Value) *builder.Value {
	rowsQ := ops.Cast(ops.Gather(t.q, ids, 0), builder.Float)
	return ops.Mul(rowsQ, ops.Unsqueeze(ops.Gather(t.scales, ids, 0), t.last))
}
