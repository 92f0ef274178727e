"""Writes beam.json: OpenNMT-py's own beam search (onmt.translate.beam_search
.BeamSearch with GNMTGlobalScorer, driven as Translator._translate_batch_with
_strategy drives it) on a deterministic table model, for decode's
TestOpenNMTBeamMatchesOpenNMT.

The model is a table: each prefix of target tokens gets a seeded row of
log-probabilities (torch.log_softmax of float32 logits). The file records,
for each case (beam size, n_best, length penalty and alpha, min and max
length, ban_unk), every row the search asked for, keyed by its prefix, and
the hypotheses it returned (tokens without BOS, scores as OpenNMT-py reports
them). The Go test replays the rows: it can only ask for prefixes OpenNMT-py
asked for, and must return the same hypotheses.

Run with OpenNMT-py's source tree (v3.5.1, commit in beam.json; or 2.3.0
with ONMT_VERSION=2.3.0, for beam2.json) on the path:

    ONMT_DIR=/path/to/OpenNMT-py /usr/bin/python3 decode/testdata/onmt/make_fixtures.py

(ONMT_COMMIT names the commit when the tree is not a git checkout.)

OpenNMT-py 3.5.1 needs modules Debian does not package (pyonmttok, spacy,
rapidfuzz, ahocorasick, fasttext, sacrebleu) only for tokenisation, vocab
building, transforms and scoring, none of which the beam search runs: they
are replaced by empty stand-ins at import. Debian's torch 1.13 lacks torch
2's scaled_dot_product_attention, used only by transformer attention; a
stand-in that raises takes its place. Also needed: python3-regex,
python3-configargparse (Debian).
"""
import json
import os
import subprocess
import sys

ONMT = os.environ["ONMT_DIR"]
# ONMT_VERSION=2.3.0 (with pytorch/text 0.5.0's torchtext on PYTHONPATH)
# writes beam2.json from OpenNMT-py 2.3.0's BeamSearch instead.
VERSION = os.environ.get("ONMT_VERSION", "3.5.1")
sys.path.insert(0, ONMT)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "testdata", "toolkits"))
import onmt_standins  # noqa: E402

onmt_standins.install()

import torch  # noqa: E402

from onmt.translate.beam_search import BeamSearch, GNMTGlobalScorer  # noqa: E402

V, PAD, BOS, EOS, UNK = 12, 1, 2, 3, 0


def row(prefix, seed, sticky=False):
    """The table model's log-probs after prefix (BOS first); sticky favours
    tokens 5, 6 and 7, so that n-grams repeat."""
    g = torch.Generator().manual_seed(seed * 1000003 + hash(tuple(prefix)) % 1000003)
    logits = torch.randn(V, generator=g, dtype=torch.float32) * 2.5
    if sticky:
        logits[5:8] += 4.0
    logits[PAD] = -1e9  # never output
    logits[EOS] += 0.4 * len(prefix) - 2.5  # EOS likelier as the prefix grows
    return torch.log_softmax(logits, dim=-1)


def attention(prefix, seed, S):
    """The table model's attention row over S positions after prefix."""
    g = torch.Generator().manual_seed(seed * 7919 + hash(tuple(prefix)) % 1000003)
    return torch.softmax(torch.randn(S, generator=g, dtype=torch.float32) * 1.5, dim=-1)


def run(case):
    if case.get("alone"):
        # One sentence per batch: OpenNMT-py 3.5.1 does not reindex its
        # n-gram blocks (forbidden_tokens) when a batch's finished
        # sentences are removed (beam_search.py remove_finished_batches),
        # so in a batch of several the remaining sentences' blocks belong
        # to other paths from then on. Alone, a sentence is blocked as
        # block_ngram_repeat describes: what onmt_translate -batch_size 1
        # does.
        parts = [run(dict(case, alone=False, batch=1, seed=case["seed"] + b)) for b in range(case["batch"])]
        rows = {}
        for b, p in enumerate(parts):
            for k, v in p["rows"].items():
                key = json.loads(k)
                key[0] = b
                rows[json.dumps(key, separators=(",", ":"))] = v
        return {"case": case, "rows": rows, "hypotheses": [p["hypotheses"][0] for p in parts]}
    torch.manual_seed(0)
    B = case["batch"]
    cov = case.get("coverage", "none")
    scorer = GNMTGlobalScorer(case["alpha"], case.get("beta", 0.0), case["length_penalty"], cov)
    kw = dict(batch_size=B, pad=PAD, bos=BOS, eos=EOS, unk=UNK,
              n_best=case["n_best"], global_scorer=scorer, min_length=case["min_length"],
              max_length=case["max_length"], return_attention=False, block_ngram_repeat=case.get("block", 0),
              exclusion_tokens=set(case.get("exclusion", [])), stepwise_penalty=case.get("stepwise", False), ratio=case.get("ratio", 0.0), ban_unk_token=case["ban_unk"])
    S = case.get("src_len", 4)
    src_len = torch.full((B,), S, dtype=torch.long)
    if VERSION.startswith("2."):
        beam = BeamSearch(case["beam"], **kw)
        beam.initialize(torch.zeros(S, B, 2), src_len)  # 2.x: memory bank time-first
    else:
        beam = BeamSearch(case["beam"], start=BOS, **kw)
        beam.initialize(torch.zeros(B, S, 2), src_len)
    rows, attns = {}, {}
    for step in range(beam.max_length):
        offsets = beam.batch_offset.tolist()  # which sentence each group is
        seqs = beam.alive_seq.tolist()
        K = beam.beam_size
        lp, at = [], []
        for r, seq in enumerate(seqs):
            sent = offsets[r // K]
            key = json.dumps([sent] + seq, separators=(",", ":"))
            x = row(seq, case["seed"] + sent, case.get("sticky", False))
            rows[key] = [float(v) for v in x.tolist()]
            lp.append(x)
            if cov != "none":
                a = attention(seq, case["seed"] + sent, S)
                attns[key] = [float(v) for v in a.tolist()]
                at.append(a)
        attn = None
        if at:  # [1, rows, S]: 2.x's RNN attention comes time-first
            attn = torch.stack(at).unsqueeze(0)
        beam.advance(torch.stack(lp), attn)
        finished = beam.is_finished.any() if VERSION.startswith("2.") else any(any(s) for s in beam.is_finished_list)
        if finished:
            beam.update_finished()
            if beam.done:
                break
    out = []
    for b in range(B):
        out.append([{"tokens": [int(t) for t in p.tolist()], "score": float(s)}
                    for s, p in zip(beam.scores[b], beam.predictions[b])])
    res = {"case": case, "rows": rows, "hypotheses": out}
    if attns:
        res["attention"] = attns
    return res


CASES = [
    dict(name="defaults", beam=5, n_best=1, length_penalty="avg", alpha=1.0, min_length=0, max_length=20, ban_unk=False, batch=6, seed=1),
    dict(name="n_best 3", beam=5, n_best=3, length_penalty="avg", alpha=1.0, min_length=0, max_length=20, ban_unk=False, batch=4, seed=2),
    dict(name="none", beam=4, n_best=2, length_penalty="none", alpha=0.0, min_length=0, max_length=20, ban_unk=False, batch=4, seed=3),
    dict(name="wu 0.6", beam=5, n_best=2, length_penalty="wu", alpha=0.6, min_length=0, max_length=20, ban_unk=False, batch=4, seed=4),
    dict(name="min_length 6, ban_unk", beam=3, n_best=1, length_penalty="avg", alpha=1.0, min_length=6, max_length=20, ban_unk=True, batch=4, seed=5),
    dict(name="max_length 4", beam=5, n_best=2, length_penalty="avg", alpha=1.0, min_length=0, max_length=4, ban_unk=False, batch=3, seed=6),
    dict(name="beam 2", beam=2, n_best=2, length_penalty="avg", alpha=1.0, min_length=0, max_length=20, ban_unk=False, batch=6, seed=7),
    dict(name="block_ngram_repeat 2", beam=5, n_best=2, length_penalty="avg", alpha=1.0, min_length=8, max_length=20, ban_unk=False, batch=4, seed=8, block=2, alone=True),
    dict(name="block_ngram_repeat 3, ignore 5 and 6", beam=4, n_best=2, length_penalty="avg", alpha=1.0, min_length=10, max_length=20, ban_unk=False, batch=4, seed=9, block=3, exclusion=[5, 6], alone=True, sticky=True),
    dict(name="block_ngram_repeat 2, sticky", beam=4, n_best=2, length_penalty="avg", alpha=1.0, min_length=10, max_length=20, ban_unk=False, batch=4, seed=11, block=2, alone=True, sticky=True),
    # -ratio: OpenNMT-py 3.5.1 reads src_len per beam row by sentence
    # index, right for a batch's first sentence only: one per batch.
    dict(name="ratio 0.5", beam=5, n_best=1, length_penalty="avg", alpha=1.0, min_length=0, max_length=20, ban_unk=False, batch=4, seed=12, ratio=0.5, src_len=6, alone=True),
    dict(name="ratio 1.5, n_best 2, none", beam=4, n_best=2, length_penalty="none", alpha=0.0, min_length=0, max_length=20, ban_unk=False, batch=4, seed=13, ratio=1.5, src_len=5, alone=True),
    dict(name="ratio 0.3, wu", beam=5, n_best=1, length_penalty="wu", alpha=0.6, min_length=0, max_length=20, ban_unk=False, batch=4, seed=14, ratio=0.3, src_len=9, alone=True),
    dict(name="block_ngram_repeat 1", beam=3, n_best=1, length_penalty="avg", alpha=1.0, min_length=6, max_length=20, ban_unk=False, batch=3, seed=10, block=1, alone=True),
    # -length_penalty avg with other alphas: 3.x divides by len ** alpha,
    # 2.x by len whatever -alpha is (its default is 0).
    dict(name="avg, alpha 0", beam=5, n_best=2, length_penalty="avg", alpha=0.0, min_length=0, max_length=20, ban_unk=False, batch=4, seed=31),
    dict(name="avg, alpha 0.5", beam=5, n_best=2, length_penalty="avg", alpha=0.5, min_length=0, max_length=20, ban_unk=False, batch=4, seed=41),
    dict(name="avg, alpha 2", beam=4, n_best=2, length_penalty="avg", alpha=2.0, min_length=0, max_length=20, ban_unk=False, batch=4, seed=51),
]

# -coverage_penalty (2.x: 3.5.1's beam search fails on an RNN decoder's
# time-first attention).
COVERAGE_CASES = [
    dict(name="coverage summary 5", beam=5, n_best=2, length_penalty="wu", alpha=0.9, min_length=0, max_length=20, ban_unk=False, batch=4, seed=21, coverage="summary", beta=5.0, src_len=6),
    dict(name="coverage wu 0.2", beam=4, n_best=1, length_penalty="none", alpha=0.0, min_length=0, max_length=20, ban_unk=False, batch=4, seed=22, coverage="wu", beta=0.2, src_len=5),
    dict(name="stepwise summary 5", beam=5, n_best=1, length_penalty="wu", alpha=0.9, min_length=4, max_length=20, ban_unk=False, batch=4, seed=23, coverage="summary", beta=5.0, stepwise=True, src_len=6),
    dict(name="stepwise wu 0.5", beam=3, n_best=2, length_penalty="avg", alpha=1.0, min_length=0, max_length=20, ban_unk=False, batch=4, seed=24, coverage="wu", beta=0.5, stepwise=True, src_len=4),
]


def main():
    commit = os.environ.get("ONMT_COMMIT") or subprocess.run(["git", "-C", ONMT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {"opennmt_py": VERSION, "commit": commit, "torch": torch.__version__,
           "vocab": V, "pad": PAD, "bos": BOS, "eos": EOS, "unk": UNK,
           "cases": [run(c) for c in CASES + (COVERAGE_CASES if VERSION.startswith("2.") else [])]}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "beam2.json" if VERSION.startswith("2.") else "beam.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print("wrote %s: %d cases" % (path, len(out["cases"])))


main()
