"""Writes beam.json: fairseq 0.12.2's own SequenceGenerator
(fairseq/sequence_generator.py with fairseq/search.py's BeamSearch) run on
a table model, for decode's TestFairseqBeamMatchesFairseq. The model stands
in for a decoder: the generator hands it each hypothesis' whole prefix
(</s> first, as fairseq starts), and each (sentence, prefix) gets a seeded
row of logits, </s> growing likelier with the prefix's length. The file
records every row of log-probs the generator received, keyed by sentence
and prefix (float32 bit patterns), and the finished hypotheses it returned
(tokens and normalised scores), best first.

    FAIRSEQ_DIR=... HYDRA_DIR=... OMEGACONF_DIR=... \\
    /usr/bin/python3 decode/testdata/fairseq/make_beam.py

testdata/toolkits/fairseq_run.py's adjustments for Debian's Python 3.11
(hashable dataclass defaults, hydra and omegaconf from their sources, a
sacrebleu stand-in) apply here too: it is imported for them. The
generator is fairseq's, unchanged; the model is the stand-in above.
"""
import json
import os
import struct
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "testdata", "toolkits"))
import fairseq_run  # noqa: E402,F401  (makes fairseq importable)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from fairseq import search  # noqa: E402
from fairseq.data import Dictionary  # noqa: E402
from fairseq.sequence_generator import SequenceGenerator  # noqa: E402


def bits(row):
    return [struct.unpack("<I", struct.pack("<f", float(x)))[0] for x in row]


class Encoder(nn.Module):
    """Carries each row's sentence number, reordered as the generator
    reorders its beams."""

    def forward_torchscript(self, net_input):
        return {"sent": net_input["src_tokens"][:, 0].clone()}

    def reorder_encoder_out(self, out, new_order):
        return {"sent": out["sent"].index_select(0, new_order)}


class Decoder(nn.Module):
    def __init__(self, vocab, eos, seed, rows):
        super().__init__()
        self.V, self.eos, self.seed, self.rows = vocab, eos, seed, rows

    def forward(self, tokens, encoder_out=None):
        B, T = tokens.shape
        logits = torch.empty(B, T, self.V)
        for r in range(B):
            sent = int(encoder_out["sent"][r])
            prefix = [int(x) for x in tokens[r]]
            g = torch.Generator().manual_seed(self.seed * 1000003 + sent * 7919 + hash(tuple(prefix)) % 1000003)
            x = torch.randn(self.V, generator=g) * 2.0
            x[self.eos] += 0.4 * len(prefix) - 2.5
            logits[r, :] = x
            key = json.dumps([sent] + prefix, separators=(",", ":"))
            self.rows[key] = bits(F.log_softmax(x.float(), dim=-1))
        return logits, {"attn": None}


class TableModel(nn.Module):
    def __init__(self, vocab, eos, seed, rows):
        super().__init__()
        self.encoder = Encoder()
        self.decoder = Decoder(vocab, eos, seed, rows)

    def max_decoder_positions(self):
        return 1024

    def get_normalized_probs(self, net_output, log_probs, sample=None):
        return F.log_softmax(net_output[0].float(), dim=-1)


def run(case):
    d = Dictionary()
    for i in range(case["vocab"] - len(d)):
        d.add_symbol("w%d" % i)
    rows = {}
    model = TableModel(len(d), d.eos(), case["seed"], rows).eval()
    # The searches fairseq's build_generator picks for --match-source-len,
    # --diverse-beam-groups/--diverse-beam-strength and --diversity-rate.
    strategy, match = None, case.get("match_source_len", False)
    if match:
        strategy = search.LengthConstrainedBeamSearch(d, min_len_a=1, min_len_b=0, max_len_a=1, max_len_b=0)
    elif "groups" in case:
        strategy = search.DiverseBeamSearch(d, case["groups"], case.get("strength", 0.5))
    elif "diversity_rate" in case:
        strategy = search.DiverseSiblingsSearch(d, case["diversity_rate"])
    gen = SequenceGenerator([model], d, beam_size=case["beam"], max_len_a=0, max_len_b=case.get("max_len_b", 200),
                            min_len=case.get("min_len", 1), len_penalty=case.get("lenpen", 1.0),
                            unk_penalty=case.get("unkpen", 0.0), search_strategy=strategy, match_source_len=match)
    B = case["batch"]
    # Sentence s's source: s, then 5 6 (and, with "src_extra", that many
    # more 7s for s), </s>, right-padded; the generator's src_lengths count
    # what is neither </s> nor <pad> (the sentence number included).
    extra = case.get("src_extra", [0] * B)
    srcs = [[s, 5, 6] + [7] * extra[s] + [d.eos()] for s in range(B)]
    width = max(len(x) for x in srcs)
    src = torch.tensor([x + [d.pad()] * (width - len(x)) for x in srcs])
    sample = {"net_input": {"src_tokens": src, "src_lengths": torch.tensor([len(x) for x in srcs])}}
    with torch.no_grad():
        out = gen.generate([model], sample)
    hyps = [[{"tokens": [int(t) for t in h["tokens"]], "score": bits([h["score"]])[0]} for h in sent] for sent in out]
    src_len = [sum(1 for t in x if t not in (d.eos(), d.pad())) for x in srcs]
    return {"case": case, "rows": rows, "hypotheses": hyps, "src_len": src_len}


CASES = [
    {"name": "beam5", "beam": 5, "vocab": 40, "seed": 1, "batch": 4},
    {"name": "greedy", "beam": 1, "vocab": 40, "seed": 2, "batch": 4},
    {"name": "beam2-lenpen0", "beam": 2, "vocab": 40, "seed": 3, "batch": 3, "lenpen": 0.0},
    {"name": "beam4-lenpen2", "beam": 4, "vocab": 40, "seed": 4, "batch": 3, "lenpen": 2.0},
    {"name": "unkpen", "beam": 3, "vocab": 40, "seed": 5, "batch": 3, "unkpen": -3.0},
    {"name": "maxlen", "beam": 4, "vocab": 40, "seed": 6, "batch": 3, "max_len_b": 3},
    {"name": "minlen", "beam": 3, "vocab": 40, "seed": 7, "batch": 3, "min_len": 6},
    {"name": "small-vocab", "beam": 3, "vocab": 6, "seed": 8, "batch": 3},
    {"name": "beam-over-vocab", "beam": 8, "vocab": 6, "seed": 9, "batch": 2, "min_len": 0},
    {"name": "match-source-len", "beam": 4, "vocab": 40, "seed": 10, "batch": 5, "match_source_len": True,
     "src_extra": [0, 3, 1, 6, 2]},
    {"name": "match-source-len-beam1", "beam": 1, "vocab": 40, "seed": 11, "batch": 4, "match_source_len": True,
     "src_extra": [4, 0, 2, 1]},
    {"name": "diverse-groups2", "beam": 4, "vocab": 40, "seed": 12, "batch": 4, "groups": 2},
    {"name": "diverse-groups3-strength2", "beam": 6, "vocab": 40, "seed": 13, "batch": 3, "groups": 3, "strength": 2.0,
     "lenpen": 0.5},
    {"name": "diverse-groups-small-vocab", "beam": 4, "vocab": 8, "seed": 14, "batch": 3, "groups": 4, "strength": 0.75},
    {"name": "siblings", "beam": 4, "vocab": 40, "seed": 15, "batch": 4, "diversity_rate": 0.5},
    {"name": "siblings-rate0", "beam": 3, "vocab": 40, "seed": 16, "batch": 3, "diversity_rate": 0.0},
    {"name": "siblings-rate2", "beam": 5, "vocab": 40, "seed": 17, "batch": 3, "diversity_rate": 2.0, "lenpen": 1.5},
]

if __name__ == "__main__":
    out = {"fairseq": os.environ.get("FAIRSEQ_COMMIT", "4a388e64cd646ed7d7ad8de8fae55df2b8eea91d (v0.12.2)"),
           "pad": 1, "eos": 2, "unk": 3, "cases": [run(c) for c in CASES]}
    with open(os.path.join(here, "beam.json"), "w") as f:
        json.dump(out, f, separators=(",", ":"))
    print("wrote", os.path.join(here, "beam.json"))
