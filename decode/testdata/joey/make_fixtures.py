"""Writes repeats.json: JoeyNMT 2.3's own block_repeat_ngrams and
penalize_repetition (joeynmt/search.py), called as its beam_search calls
them, on seeded hypotheses, sources and log-probs, for decode's
TestRepeatsMatchJoeyNMT. Each case holds the inputs and the log-probs
before and after the two rules, as float32 bit patterns.

    JOEY_DIR=/path/to/joeynmt JOEY_COMMIT=... SUBWORD_NMT_DIR=... \\
    /usr/bin/python3 decode/testdata/joey/make_fixtures.py

Stand-ins for tensorboard and sacrebleu, which search.py's imports pull in
and these functions never call (Debian packages neither).
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.environ["JOEY_DIR"])
sys.path.insert(0, os.environ["SUBWORD_NMT_DIR"])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "testdata", "toolkits"))
import joey_standins  # noqa: E402

joey_standins.install()

import torch  # noqa: E402
from joeynmt.search import block_repeat_ngrams, penalize_repetition  # noqa: E402

def bits(t):
    """float32 values as their bit patterns (exact, -inf included)."""
    return [[struct.unpack("<I", struct.pack("<f", x))[0] for x in r] for r in t.tolist()]


V = 12
SPECIALS = [0, 1, 2, 3]  # unk, pad, bos, eos
cases = []
for seed, (n, penalty, steps, src_len) in enumerate([(2, -1, 6, 5), (3, -1, 9, 7), (2, 1.5, 7, 6), (-1, 1.2, 5, 4),
                                                     (3, 2.0, 10, 8), (4, 1.3, 12, 3), (2, -1, 1, 5), (1, -1, 6, 4)]):
    g = torch.Generator().manual_seed(100 + seed)
    H = 4
    # hypotheses: BOS then tokens from a small alphabet, so n-grams repeat
    seq = torch.cat([torch.full((H, 1), 2, dtype=torch.long), torch.randint(4, 8, (H, steps), generator=g)], 1)
    src = torch.cat([torch.randint(4, 9, (H, src_len - 1), generator=g), torch.full((H, 1), 3, dtype=torch.long)], 1)
    logits = torch.randn(H, V, generator=g) * 2
    logits[0, 5] = 0.75  # a positive score, divided by the penalty
    scores = torch.log_softmax(logits, dim=-1)
    scores[0, 5] = 0.75
    before = scores.clone()
    step = seq.size(1) - 1  # beam_search's step: tokens so far
    if n > 0:
        scores = block_repeat_ngrams(seq, scores, n, step, src_tokens=src, exclude_tokens=SPECIALS)
    if penalty > 1.0:
        scores = penalize_repetition(seq, scores, penalty, exclude_tokens=SPECIALS)
        scores = penalize_repetition(src, scores, penalty, exclude_tokens=SPECIALS)
    cases.append({"n": n, "penalty": penalty, "seq": seq.tolist(), "src": src.tolist(),
                  "before": bits(before), "after": bits(scores)})

out = {"joeynmt": "2.3.0", "commit": os.environ.get("JOEY_COMMIT", ""), "torch": torch.__version__, "specials": SPECIALS, "cases": cases}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "repeats.json")
with open(path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
    f.write("\n")
print("wrote", path, len(cases), "cases")
