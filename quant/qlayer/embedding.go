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
	q, err := quant.QuantizeInt8(table, rows, dim, 0)
	if err != nil {
		g.Fail(fmt.Errorf("qlayer: %s (int8 rows): %w", name, err))
		return Built{Y: ops.Identity(ids)}
	}
	qt, st := q.Tensor(), q.ScaleTensor()
	rowsQ := ops.Cast(ops.Gather(g.Init(name+".weight_q", qt), ids, 0), builder.Float)
	scales := ops.Gather(g.Init(name+".scale", st), ids, 0)
	last := g.Init(name+".last_axis", builder.Int64Tensor([]int64{1}, []int64{-1}))
	return Built{Y: ops.Mul(rowsQ, ops.Unsqueeze(scales, last)), Bytes: len(qt.Raw) + len(st.Raw) + 8}
}
