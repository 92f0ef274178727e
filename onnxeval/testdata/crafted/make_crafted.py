#!/usr/bin/python3
"""Writes the crafted models of issue 36 with onnx's own helpers (python3-onnx):
files that once crashed the native evaluator, kept as regression inputs and
fuzz seeds.

  expand_2g.onnx    Expand of float32 [1] to [2147483647]: its index map
                    was never counted against MaxRunBytes (fatal OOM).
  nbits_wrap.onnx   MatMulNBits with N=2^62, K=64, block 16, bits 4 and
                    empty B and scales: the size check wrapped to 0, then
                    an index out of range in Dequantize.
"""
import os
import onnx
from onnx import TensorProto, helper

here = os.path.dirname(os.path.abspath(__file__))


def save(model, name):
    path = os.path.join(here, name)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    print(name, os.path.getsize(path), "bytes")


shape = helper.make_tensor("s", TensorProto.INT64, [1], [2147483647])
g = helper.make_graph(
    [helper.make_node("Expand", ["x", "s"], ["y"])], "e",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [shape])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "expand_2g.onnx")

b = helper.make_tensor("B", TensorProto.UINT8, [0], [])
sc = helper.make_tensor("scales", TensorProto.FLOAT, [0], [])
node = helper.make_node("MatMulNBits", ["A", "B", "scales"], ["Y"], domain="com.microsoft",
                        K=64, N=1 << 62, block_size=16, bits=4)
g = helper.make_graph(
    [node], "n",
    [helper.make_tensor_value_info("A", TensorProto.FLOAT, [1, 64])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], [b, sc])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]), "nbits_wrap.onnx")
