"""PyTorch's seq2seq translation tutorial, 2017-2023 version, as `attnx
verify --torch-module` takes it: the classes written for the reference's
test of the tutorial's way of running (reference/test_tutorial.py), whose
encoder takes one token at a time and whose decoder attends over a
max_length buffer, imported rather than copied."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "reference"))

import test_tutorial  # noqa: E402


def build(config):
    H = config["hidden"]
    return (test_tutorial.Encoder2017(config["src_vocab"], H),
            test_tutorial.AttnDecoder2017(H, config["tgt_vocab"], config["max_length"]))
