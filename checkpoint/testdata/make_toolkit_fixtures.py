"""Writes the toolkit fixtures of checkpoint/testdata/toolkits: tiny models
saved the way OpenNMT-py 3 (with and without safetensors), OpenNMT-py 2,
JoeyNMT and PyTorch's chatbot tutorial save them, by the reference's own
writers (reference/toolkits.py via reference.py make-toolkit).

    /usr/bin/python3 checkpoint/testdata/make_toolkit_fixtures.py
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "toolkits")
REF = os.path.join(HERE, "..", "..", "reference", "reference.py")


def make(cfg, fmt, out, **kw):
    args = [sys.executable, REF, "make-toolkit", "--config", json.dumps(cfg), "--format", fmt, "--seed", "7", "--out", out]
    for k, v in kw.items():
        args += ["--" + k.replace("_", "-"), v]
    subprocess.run(args, check=True)
    for ext in (".json", ".safetensors"):
        p = os.path.splitext(out.rstrip("/"))[0] + "_reference" + ext
        if os.path.exists(p):
            os.remove(p)


def main():
    os.makedirs(OUT, exist_ok=True)
    onmt = {"arch": "onmt-general", "cell": "lstm", "hidden_size": 4, "embedding_size": 3, "num_layers": 1,
            "src_vocab_size": 8, "tgt_vocab_size": 7, "bidirectional": True, "encoder_hidden_size": 2, "input_feed": True}
    for fmt in ("onmt-v3", "onmt-v2"):
        make(onmt, fmt, os.path.join(OUT, fmt.replace("-", "_") + ".pt"), words='["a", "b"]')
    os.makedirs(os.path.join(OUT, "onmt_st"), exist_ok=True)
    make(onmt, "onmt-v3-safetensors", os.path.join(OUT, "onmt_st", "model.pt"))
    make({"arch": "joey-luong", "cell": "gru", "hidden_size": 4, "embedding_size": 3, "num_layers": 1, "src_vocab_size": 8,
          "tgt_vocab_size": 7, "bidirectional": True, "encoder_hidden_size": 2, "input_feed": True, "bridge": "bridge"},
         "joey", os.path.join(OUT, "joey"))
    make({"arch": "chatbot-dot", "cell": "gru", "hidden_size": 4, "embedding_size": 4, "num_layers": 1, "src_vocab_size": 8,
          "tgt_vocab_size": 8, "bidirectional": True}, "chatbot", os.path.join(OUT, "chatbot.tar"), words='["hello", "there", "how", "are", "you"]')


main()
