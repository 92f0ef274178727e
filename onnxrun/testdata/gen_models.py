#!/usr/bin/python3
"""Writes the tiny ONNX models the runtime tests use.

Run from anywhere with Debian's python (it has onnx 1.12):
    /usr/bin/python3 runtime/testdata/gen_models.py
The .onnx files are committed; rerun this only when changing a model.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = [helper.make_opsetid("", 17)]


def save(name, nodes, inputs, outputs, initializers=(), check=True):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=OPSET, producer_name="attnx-runtime-tests")
    model.ir_version = 8
    if check:
        onnx.checker.check_model(model)
    with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


F, I64 = TensorProto.FLOAT, TensorProto.INT64
vi = helper.make_tensor_value_info

# add: Z = X + Y, fixed shape 2x3.
save("add", [helper.make_node("Add", ["X", "Y"], ["Z"])],
     [vi("X", F, [2, 3]), vi("Y", F, [2, 3])], [vi("Z", F, [2, 3])])

# batch: symbolic dims. out[b, s] = float(source_ids[b, s]) * scale[0] + bias,
# bias an initializer (must not show up as an input).
save("batch",
     [helper.make_node("Cast", ["source_ids"], ["ids_f"], to=F),
      helper.make_node("Mul", ["ids_f", "scale"], ["scaled"]),
      helper.make_node("Add", ["scaled", "bias"], ["out"])],
     [vi("source_ids", I64, ["batch", "src_len"]), vi("scale", F, [1])],
     [vi("out", F, ["batch", "src_len"])],
     [helper.make_tensor("bias", F, [1], [0.5])])

# scalar_out: total = ReduceSum(X) with keepdims=0 (rank 0), plus doubled = X*2.
save("scalar_out",
     [helper.make_node("ReduceSum", ["X"], ["total"], keepdims=0),
      helper.make_node("Add", ["X", "X"], ["doubled"])],
     [vi("X", F, ["n"])], [vi("total", F, []), vi("doubled", F, ["n"])])

# scalar_in: y = x * 3 with x and y rank 0.
save("scalar_in",
     [helper.make_node("Constant", [], ["three"], value=helper.make_tensor("three", F, [], [3.0])),
      helper.make_node("Mul", ["x", "three"], ["y"])],
     [vi("x", F, [])], [vi("y", F, [])])

# constant: no inputs; a 2x2 float matrix and an int64 scalar.
save("constant",
     [helper.make_node("Constant", [], ["matrix"],
                       value=helper.make_tensor("m", F, [2, 2], [1.0, 2.0, 3.0, 4.0])),
      helper.make_node("Constant", [], ["count"], value=helper.make_tensor("c", I64, [], [7]))],
     [], [vi("matrix", F, [2, 2]), vi("count", I64, [])])

# identity: one Identity per element type, shapes symbolic.
types = [("f64", TensorProto.DOUBLE), ("i32", TensorProto.INT32), ("i8", TensorProto.INT8),
         ("u8", TensorProto.UINT8), ("b", TensorProto.BOOL), ("s", TensorProto.STRING),
         ("i16", TensorProto.INT16), ("u64", TensorProto.UINT64)]
save("identity",
     [helper.make_node("Identity", ["in_" + n], ["out_" + n]) for n, _ in types],
     [vi("in_" + n, t, ["d"]) for n, t in types],
     [vi("out_" + n, t, ["d"]) for n, t in types])

# float16: a float16 Identity with a fixed shape.
save("float16", [helper.make_node("Identity", ["h"], ["h_out"])],
     [vi("h", TensorProto.FLOAT16, [2])], [vi("h_out", TensorProto.FLOAT16, [2])])

# free_const: no inputs and an output whose size depends on data (NonZero),
# which the runtime cannot preallocate (a clear error, not a crash). (A plain
# Constant would not do: ORT infers its shape over the declared symbol.)
save("free_const",
     [helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c", F, [3], [1.0, 0.0, 3.0])),
      helper.make_node("NonZero", ["c"], ["v"])],
     [], [vi("v", I64, [1, "n"])])

# noshape: the output declares an element type but no shape at all.
save("noshape", [helper.make_node("Identity", ["X"], ["Y"])],
     [vi("X", F, [2])], [vi("Y", F, None)], check=False)  # the checker insists on a shape; ORT does not

# half: float16 and bfloat16 in and out, shapes known from the inputs' symbol
# n; the Casts check the conversions against ORT's.
H, BF = TensorProto.FLOAT16, TensorProto.BFLOAT16
save("half",
     [helper.make_node("Identity", ["h"], ["h_id"]),
      helper.make_node("Identity", ["b"], ["b_id"]),
      helper.make_node("Cast", ["h"], ["h_f32"], to=F),
      helper.make_node("Cast", ["b"], ["b_f32"], to=F),
      helper.make_node("Cast", ["x"], ["x_h"], to=H),
      helper.make_node("Cast", ["x"], ["x_b"], to=BF)],
     [vi("h", H, ["n"]), vi("b", BF, ["n"]), vi("x", F, ["n"])],
     [vi("h_id", H, ["n"]), vi("b_id", BF, ["n"]), vi("h_f32", F, ["n"]), vi("b_f32", F, ["n"]),
      vi("x_h", H, ["n"]), vi("x_b", BF, ["n"])])

# half_free: hh's symbol m is not an input's, so its shape is unknown before
# running, which the runtime cannot handle for float16 (a clear error).
save("half_free", [helper.make_node("Concat", ["h", "h"], ["hh"], axis=0)],
     [vi("h", H, ["n"])], [vi("hh", H, ["m"])])

# half_misdeclared: hh is declared [n] but is [2n]: the shape the runtime
# preallocates from the symbol is wrong (a clear error).
save("half_misdeclared", [helper.make_node("Concat", ["h", "h"], ["hh"], axis=0)],
     [vi("h", H, ["n"])], [vi("hh", H, ["n"])])

# sequence: xs is a seq(tensor(float)); ys = xs with y appended, count =
# len(xs) (rank 0), first = xs[0] (free shape), empty = an empty seq(float).
seq_f = helper.make_tensor_sequence_value_info("xs", F, None)
save("sequence",
     [helper.make_node("SequenceInsert", ["xs", "y"], ["ys"]),
      helper.make_node("SequenceLength", ["xs"], ["count"]),
      helper.make_node("SequenceAt", ["xs", "zero"], ["first"]),
      helper.make_node("SequenceEmpty", [], ["empty"], dtype=F)],
     [seq_f, vi("y", F, ["n"])],
     [helper.make_tensor_sequence_value_info("ys", F, None), vi("count", I64, []),
      vi("first", F, ["m"]), helper.make_tensor_sequence_value_info("empty", F, None)],
     [helper.make_tensor("zero", I64, [], [0])])
