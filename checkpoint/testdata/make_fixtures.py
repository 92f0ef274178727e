#!/usr/bin/python3
"""Make the tiny checkpoint fixtures used by the Go tests of package checkpoint.

Run from anywhere with Debian's /usr/bin/python3 (torch 1.13):

    /usr/bin/python3 checkpoint/testdata/make_fixtures.py

Every value is fixed (no randomness), so the Go tests can assert it.
"""
import collections
import json
import os
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def path(name):
    return os.path.join(HERE, name)


def save(obj, name, **kw):
    torch.save(obj, path(name), **kw)


def dtypes():
    return collections.OrderedDict([
        ("f32", torch.tensor([[1.5, -2.25, 3.0], [4.0, 5.0, 0.125]], dtype=torch.float32)),
        ("f16", torch.tensor([1.0, -0.5, 65504.0, 2.0 ** -24], dtype=torch.float16)),
        ("bf16", torch.tensor([1.0, -2.5, 3.140625], dtype=torch.bfloat16)),
        ("f64", torch.tensor([0.1, -2.5], dtype=torch.float64)),
        ("i64", torch.tensor([1, -2, 1 << 40], dtype=torch.int64)),
        ("i32", torch.tensor([7, -8], dtype=torch.int32)),
        ("i16", torch.tensor([300, -300], dtype=torch.int16)),
        ("i8", torch.tensor([-128, 127], dtype=torch.int8)),
        ("u8", torch.tensor([0, 255], dtype=torch.uint8)),
        ("b", torch.tensor([True, False, True])),
        ("scalar", torch.tensor(3.5)),
        ("empty", torch.zeros(0, 3)),
    ])


def main():
    save(dtypes(), "dtypes.pt")

    # A transposed (non-contiguous) tensor: torch.save keeps its strides.
    save({"t": torch.arange(6.0).view(2, 3).t()}, "transposed.pt")

    # Views sharing one storage: offset, reshaped and strided.
    base = torch.arange(10.0)
    save(collections.OrderedDict([
        ("whole", base.view(2, 5)),
        ("slice", base[2:5]),
        ("every2", base[::2]),
    ]), "shared.pt")

    # A real module's state_dict (OrderedDict with _metadata).
    lin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
        lin.bias.copy_(torch.tensor([0.5, -0.5]))
    save(lin.state_dict(), "linear.pt")

    # Training-script checkpoints holding the state dict under a key.
    save({"epoch": 3, "state_dict": lin.state_dict(),
          "optimizer": {"lr": 0.1, "state": {}}}, "nested_state_dict.pt")
    save({"model": lin.state_dict(), "step": 10}, "nested_model.pt")

    # Not a dict of tensors.
    save([torch.ones(2)], "list.pt")
    save({"w": torch.ones(2), "n": 5}, "notensor.pt")

    # Legacy (pre-1.6) serialization.
    save({"w": torch.ones(2)}, "legacy.pt", _use_new_zipfile_serialization=False)

    # Safetensors written by hand: 8-byte little-endian header length, JSON
    # header, then the data.
    tensors = [
        ("a", "F32", [2, 2], struct.pack("<4f", 1.0, -2.0, 0.5, 8.0)),
        ("h", "F16", [2], torch.tensor([1.5, -3.0], dtype=torch.float16).numpy().tobytes()),
        ("bf", "BF16", [2], torch.tensor([1.0, -2.5], dtype=torch.bfloat16).view(torch.int16).numpy().tobytes()),
        ("n", "I64", [3], struct.pack("<3q", 1, -2, 3)),
        ("d", "F64", [], struct.pack("<d", 2.75)),
    ]
    header = {"__metadata__": {"format": "pt", "source": "make_fixtures.py"}}
    data = b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    hdr = json.dumps(header).encode()
    hdr += b" " * (-len(hdr) % 8)
    with open(path("hand.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hdr)))
        f.write(hdr)
        f.write(data)


if __name__ == "__main__":
    main()
