"""Writes beam.json: JoeyNMT 2.3's own beam_search (joeynmt/search.py) run
on a table model, for decode's TestJoeyBeamMatchesJoeyNMT. The model is a
stand-in for an RNN decoder: each prefix of target tokens (carried in the
decoder state, which beam_search reorders as it reorders its beams) gets a
seeded row of logits; the file records every row of log-probs
beam_search computed from them, keyed by sentence and prefix (as float32
bit patterns), and the n-best lists it returned.

    JOEY_DIR=/path/to/joeynmt JOEY_COMMIT=... SUBWORD_NMT_DIR=... \\
    /usr/bin/python3 decode/testdata/joey/make_beam.py
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
import torch.nn.functional as F  # noqa: E402
import joeynmt.search as search  # noqa: E402

V, UNK, PAD, BOS, EOS = 12, 0, 1, 2, 3
H = 40  # decoder state: [sentence, prefix length, tokens...]


class TableDecoder:
    output_size = V

    def _init_hidden(self, encoder_hidden):
        h = torch.zeros(1, encoder_hidden.size(0), H)
        h[0, :, 0] = encoder_hidden[:, 0]  # the sentence
        return h


class TableModel:
    """What beam_search reads of a Joey Model, with a table for a decoder."""

    def __init__(self, seed):
        self.decoder = TableDecoder()
        self.bos_index, self.pad_index, self.eos_index, self.unk_index = BOS, PAD, EOS, UNK
        self.sep_index = None
        self.lang_tags = []
        self.specials = [UNK, PAD, BOS, EOS]
        self.seed = seed
        self.asked = []  # the prefixes of the last call, row by row

    def __call__(self, return_type, trg_input, decoder_hidden, **kw):
        rows = trg_input.size(0)
        h = decoder_hidden.clone()
        logits = torch.empty(rows, 1, V)
        self.asked = []
        for r in range(rows):
            sent, n = int(h[r, 0, 0]), int(h[r, 0, 1])
            prefix = [int(x) for x in h[r, 0, 2:2 + n]] + [int(trg_input[r, 0])]
            if n > 0 or int(trg_input[r, 0]) != BOS:
                h[r, 0, 2 + n] = trg_input[r, 0]
                h[r, 0, 1] = n + 1
            self.asked.append((sent, prefix if prefix[0] == BOS else [BOS] + prefix))
            g = torch.Generator().manual_seed(self.seed * 1000003 + sent * 7919 + hash(tuple(prefix)) % 1000003)
            x = torch.randn(V, generator=g) * 2.0
            x[EOS] += 0.35 * len(prefix) - 2.0
            logits[r, 0] = x
        att = torch.zeros(rows, 1, 4)
        return logits, h, att, torch.zeros(rows, 1, 8)


def bits(row):
    return [struct.unpack("<I", struct.pack("<f", float(x)))[0] for x in row]


def run(case):
    model = TableModel(case["seed"])
    B = case["batch"]
    rows = {}
    log_softmax = F.log_softmax

    class Recording:
        def __getattr__(self, name):
            return getattr(F, name)

        @staticmethod
        def log_softmax(x, dim):
            y = log_softmax(x, dim=dim)
            for (sent, prefix), row in zip(model.asked, y.tolist()):
                rows[json.dumps([sent] + prefix, separators=(",", ":"))] = bits(row)
            return y

    search.F = Recording()
    try:
        out, scores, _ = search.beam_search(
            model=model, beam_size=case["beam"], encoder_output=torch.zeros(B, 4, 8),
            encoder_hidden=torch.arange(B, dtype=torch.float).view(B, 1).expand(B, 8).contiguous(),
            src_mask=torch.ones(B, 1, 4, dtype=torch.bool), max_output_length=case["max_len"],
            alpha=case["alpha"], n_best=case["n_best"], return_attention=False, return_prob="hyp",  # scores out; the search is the same
            generate_unk=case.get("generate_unk", True), repetition_penalty=-1, no_repeat_ngram_size=-1)
    finally:
        search.F = F
    hyps = []
    for b in range(B):
        hyps.append([{"tokens": [int(t) for t in out[b * case["n_best"] + k] if int(t) != PAD],
                      "score": bits([scores[b * case["n_best"] + k]])[0] if scores is not None else None}
                     for k in range(case["n_best"])])
    return {"case": case, "rows": rows, "hypotheses": hyps}


CASES = [
    dict(name="beam 5, raw", beam=5, n_best=1, alpha=-1, max_len=15, batch=6, seed=1),
    dict(name="beam 4, n_best 3, raw", beam=4, n_best=3, alpha=-1, max_len=15, batch=5, seed=2),
    dict(name="beam 5, alpha 1", beam=5, n_best=2, alpha=1.0, max_len=15, batch=5, seed=3),
    dict(name="beam 3, alpha 0.6", beam=3, n_best=3, alpha=0.6, max_len=12, batch=5, seed=4),
    dict(name="beam 5, max_len 4", beam=5, n_best=5, alpha=-1, max_len=4, batch=4, seed=5),
    dict(name="beam 2, no unk", beam=2, n_best=2, alpha=1.0, max_len=15, batch=5, seed=6, generate_unk=False),
]

out = {"joeynmt": "2.3.0", "commit": os.environ.get("JOEY_COMMIT", ""), "torch": torch.__version__,
       "vocab": V, "unk": UNK, "pad": PAD, "bos": BOS, "eos": EOS, "cases": [run(c) for c in CASES]}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "beam.json")
with open(path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
    f.write("\n")
print("wrote", path, len(CASES), "cases")
