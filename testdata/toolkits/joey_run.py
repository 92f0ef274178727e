"""Runs JoeyNMT 2.3's command line (python -m joeynmt train|test|translate)
from the tree at $JOEY_DIR, with stand-ins for what Debian does not package
and these runs never call (joey_standins.py: tensorboard logging,
sacrebleu scoring). subword_nmt (v0.3.8) comes from PYTHONPATH.

    JOEY_DIR=... /usr/bin/python3 joey_run.py translate cfg.yaml < test.en > out.txt

With JOEY_GAPS=FILE it also writes FILE: for each sentence (0 based, in
the order the search sees them: run it with batch_size 1) the smallest
gap between neighbours among the K+1 best candidates of a beam search
step, or the best two logits of a greedy step, as JoeyNMT computed them,
over max(1, |score|).
"""
import os
import runpy
import sys

sys.path.insert(0, os.environ["JOEY_DIR"])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import joey_standins  # noqa: E402

joey_standins.install()
if os.environ.get("JOEY_GAPS"):
    import atexit
    import json

    import torch
    import joeynmt.search as search

    gaps, calls = {}, {"n": -1, "k": 0}
    topk = torch.Tensor.topk

    def recording_topk(self, k, *a, **kw):
        if calls["k"] == k and self.dim() == 2:
            vals = topk(self, min(k + 1, self.size(-1)), *a, **kw).values
            for row in vals.tolist():
                real = [v for v in row if v != float("-inf")]
                for x, y in zip(real, real[1:]):
                    gaps[calls["n"]] = min(gaps.get(calls["n"], float("inf")), (x - y) / max(1.0, abs(x)))
        return topk(self, k, *a, **kw)

    beam_search = search.beam_search

    def recording_beam_search(*a, **kw):
        calls["n"] += 1
        calls["k"] = kw["beam_size"]
        torch.Tensor.topk = recording_topk
        try:
            return beam_search(*a, **kw)
        finally:
            torch.Tensor.topk = topk

    search.beam_search = recording_beam_search

    # Greedy search takes torch.max over each step's logits: its gap is
    # the best two's.
    torch_max = torch.max

    def recording_max(x, *a, **kw):
        if isinstance(x, torch.Tensor) and x.dim() == 3 and a == () and kw.get("dim") == -1:
            for row in topk(x.reshape(-1, x.size(-1)), 2).values.tolist():
                real = [v for v in row if v != float("-inf")]
                for p, q in zip(real, real[1:]):
                    gaps[calls["n"]] = min(gaps.get(calls["n"], float("inf")), (p - q) / max(1.0, abs(p)))
        return torch_max(x, *a, **kw)

    greedy = search.greedy

    def recording_greedy(*a, **kw):
        calls["n"] += 1
        torch.max = recording_max
        try:
            return greedy(*a, **kw)
        finally:
            torch.max = torch_max

    search.greedy = recording_greedy

    def write():
        with open(os.environ["JOEY_GAPS"], "w") as f:
            json.dump({str(k): v for k, v in sorted(gaps.items())}, f, separators=(",", ":"))
            f.write("\n")

    atexit.register(write)

sys.argv[0] = "joeynmt"
runpy.run_module("joeynmt", run_name="__main__")
