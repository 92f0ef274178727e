"""Runs GNMT's own SequenceGenerator.beam_search (NVIDIA
DeepLearningExamples' seq2seq/inference/beam_search.py) over a scripted
model, and writes every step's log-probs and attention with the
translations it chose, so that decode.GNMTBeam can be checked against it
apart from any network:

    /usr/bin/python3 gnmt_beam_cases.py DLE_DIR ../../decode/testdata/gnmt_beam_cases.json

DLE_DIR is NVIDIA/DeepLearningExamples 729963dd's PyTorch/Translation/GNMT
(the commit gnmt-dle/VERSION names; beam_search.py is MLPerf's but for the
device handling); the committed file was made with Debian's torch 1.13.

The greedy cases run greedy_search, the --beam-size 1 path, instead.

The scripted model's generate() keeps each slot's history (its row, BOS
and the tokens fed since) in the hidden-state slot of the context, which
beam_search reorders along the beams as it reorders a real decoder's
state; its log-probs and attention are drawn from a generator seeded by
that history, so the same hypothesis always sees the same values. The
"ties" cases round the logits to halves, so that equal log-probs and equal
scores occur and torch.topk's order among them is what is recorded.
"""
import json
import sys

import torch

sys.path.insert(0, sys.argv[1])
from seq2seq.inference.beam_search import SequenceGenerator  # noqa: E402

V = 11


class Scripted:
    batch_first = False

    def __init__(self, lengths, seq, ties):
        self.lengths, self.seq, self.ties = lengths, seq, ties
        self.table = {}

    def values(self, key):
        if key not in self.table:
            g = torch.Generator().manual_seed(hash(key) & 0x7FFFFFFF)
            logits = torch.randn(V, generator=g) * 2
            if self.ties:
                logits = torch.round(logits * 2) / 2
            lp = torch.log_softmax(logits, dim=-1)
            n = self.lengths[key[0]]
            s = torch.randn(self.seq, generator=g)
            s[n:] = float("-inf")
            a = torch.softmax(s * 3, dim=-1)
            self.table[key] = (lp, a)
        return self.table[key]

    def generate(self, words, context, beam_size):
        hist = torch.cat([context[2], words.view(1, -1)], dim=0)
        lps, atts = [], []
        for n in range(hist.shape[1]):
            lp, a = self.values(tuple(hist[:, n].tolist()))
            lps.append(lp)
            atts.append(a)
        lp = torch.stack(lps)
        logprobs, top = lp.topk(beam_size, dim=-1)
        attn = torch.stack(atts).unsqueeze(0)
        return top, logprobs, attn, [context[0], context[1], hist]


def case(name, lengths, k, max_seq_len, factor, const, cov, ties, greedy=False):
    B, seq = len(lengths), max(lengths)
    model = Scripted(lengths, seq, ties)
    gen = SequenceGenerator(model, beam_size=k, max_seq_len=max_seq_len,
                            len_norm_factor=factor, len_norm_const=const,
                            cov_penalty_factor=cov)
    words = torch.full((1, B * k), 2, dtype=torch.int64)
    enc = torch.zeros(seq, B, 1)
    rows = torch.tensor([[r for r in range(B) for _ in range(k)]])
    context = [enc, torch.tensor(lengths), rows]
    search = gen.greedy_search if greedy else gen.beam_search
    translation, out_lengths, _ = search(B, words, context)
    return {
        "name": name, "k": k, "max_seq_len": max_seq_len,
        "len_norm_factor": factor, "len_norm_const": const,
        "cov_penalty_factor": cov, "source_lengths": lengths,
        "steps": [{"key": list(key), "log_probs": lp.tolist(),
                   "attention": a[:lengths[key[0]]].tolist()}
                  for key, (lp, a) in sorted(model.table.items())],
        "translations": translation.tolist(),
        "lengths": out_lengths.tolist(),
    }


torch.manual_seed(0)
cases = [
    case("defaults", [5, 3, 7, 1], 5, 12, 0.6, 5.0, 0.1, False),
    case("k3-short", [4, 6, 2], 3, 5, 0.6, 5.0, 0.1, False),
    case("lennorm1", [5, 3, 7], 4, 10, 1.0, 0.0, 0.0, False),
    case("cov05", [6, 2, 5], 5, 9, 0.2, 5.0, 0.5, False),
    case("ties", [5, 3, 4, 6], 5, 10, 0.6, 5.0, 0.1, True),
    case("ties-k2", [3, 5], 2, 8, 0.6, 5.0, 0.1, True),
    # greedy_search (--beam-size 1), which GNMTBeam of width 1 stands for.
    case("greedy-ties", [5, 3, 4, 6, 2], 1, 10, 0.6, 5.0, 0.1, True, greedy=True),
    case("greedy-short", [5, 3, 4], 1, 4, 0.6, 5.0, 0.1, False, greedy=True),
]
# torch.topk itself on rows full of ties (and a few NaNs), at the sizes
# beam_search gives it (K*K) and generate (the vocabulary, where k * 64 <=
# n takes std::partial_sort).
topk = []
g = torch.Generator().manual_seed(7)
for n in [1, 2, 4, 5, 9, 11, 16, 25, 33, 64, 100, 320, 700, 1000]:
    for k in [1, 2, 3, 5, 10, 17]:
        if k > n:
            continue
        for levels in [3, 50]:
            row = torch.randint(0, levels, (n,), generator=g).float() / 4
            if n > 8 and levels == 3:
                row[n // 3] = float("nan")
            top = row.topk(k).indices.tolist()
            topk.append({"row": [None if v != v else v for v in row.tolist()], "k": k, "indices": top})
json.dump({"vocab": V, "bos": 2, "eos": 3, "cases": cases, "topk": topk}, open(sys.argv[2], "w"))
