"""Writes batching.json: how OpenNMT-py 3.5.1's onmt_translate and JoeyNMT
2.3's translate/test cut a test set into batches, computed by their own
batching code on test sets of given source lengths, for translate's
TestBatchLongestMatchesToolkits. Each case records the source lengths (as
attnx counts a row: OpenNMT-py's src_ids; JoeyNMT's tokens with </s>) and
the batches (lists of line indices) the toolkit made.

OpenNMT-py: onmt.inputters.dynamic_iterator.DynamicDatasetIter at
inference: its bucket sorted with text_sort_key, then batch_iter, as
__iter__ does (CorpusTask.INFER, batch_size_multiple 1).
JoeyNMT: joeynmt.datasets.SentenceBatchSampler / TokenBatchSampler over
joeynmt.helpers_for_ddp.RandomSubsetSampler with shuffle False, as
make_iter builds them for a test set.

    ONMT_DIR=/path/to/OpenNMT-py JOEY_DIR=/path/to/joeynmt \\
    SUBWORD_NMT_DIR=/path/to/subword-nmt \\
    ONMT_COMMIT=... JOEY_COMMIT=... /usr/bin/python3 translate/testdata/batching/make_fixtures.py

Stand-ins: OpenNMT-py imports pyonmttok, spacy, rapidfuzz, ahocorasick,
fasttext and sacrebleu at module level and JoeyNMT tensorboard and
sacrebleu; batching calls none of them (Debian packages none of them).
"""
import json
import os
import random
import subprocess
import sys
import types

sys.path.insert(0, os.environ["ONMT_DIR"])
sys.path.insert(0, os.environ["JOEY_DIR"])
sys.path.insert(0, os.environ["SUBWORD_NMT_DIR"])
for name in ("pyonmttok", "spacy", "ahocorasick", "fasttext", "sacrebleu", "sacrebleu.metrics"):
    sys.modules.setdefault(name, types.ModuleType(name))
rapidfuzz = types.ModuleType("rapidfuzz")
rapidfuzz.fuzz = rapidfuzz.process = rapidfuzz.utils = None
sys.modules.setdefault("rapidfuzz", rapidfuzz)
sys.modules["sacrebleu"].corpus_ter = sys.modules["sacrebleu"].corpus_bleu = None
sys.modules["sacrebleu.metrics"].BLEU = sys.modules["sacrebleu.metrics"].CHRF = object
tb = types.ModuleType("torch.utils.tensorboard")
tb.SummaryWriter = object
sys.modules["torch.utils.tensorboard"] = tb

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

if not hasattr(F, "scaled_dot_product_attention"):
    F.scaled_dot_product_attention = None  # transformer attention: not on this path

from onmt.constants import CorpusTask  # noqa: E402
from onmt.inputters.dynamic_iterator import DynamicDatasetIter  # noqa: E402
from onmt.inputters.text_utils import text_sort_key  # noqa: E402
from joeynmt.datasets import SentenceBatchSampler, TokenBatchSampler  # noqa: E402
from joeynmt.helpers_for_ddp import RandomSubsetSampler  # noqa: E402


def onmt_batches(lengths, size, tokens):
    it = DynamicDatasetIter.__new__(DynamicDatasetIter)
    it.task = CorpusTask.INFER
    it.sort_key = text_sort_key
    bucket = [({"src": {"src": "line %d" % i, "src_ids": [7] * n}, "tgt": None}, i) for i, n in enumerate(lengths)]
    bucket = sorted(bucket, key=lambda x: it.sort_key(x[0]))  # as __iter__
    batches = it.batch_iter(bucket, size, batch_type="tokens" if tokens else "sents", batch_size_multiple=1)
    return [[i for _, i in b] for b in batches]


class JoeyTestSet(torch.utils.data.Dataset):
    """What the samplers read of a test set: indices, and (src, trg) items
    whose src is the tokenised sentence without </s>."""

    def __init__(self, lengths):
        self.lengths = lengths
        self.indices = list(range(len(lengths)))

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, idx):
        return idx, ["x"] * (self.lengths[idx] - 1), None


def joey_batches(lengths, size, tokens):
    ds = JoeyTestSet(lengths)
    sampler = RandomSubsetSampler(ds, shuffle=False, generator=torch.Generator().manual_seed(42))
    cls = TokenBatchSampler if tokens else SentenceBatchSampler
    return [list(b) for b in cls(sampler, batch_size=size, drop_last=False, seed=42)]


def commit(d, env):
    """The tree's commit: git's, else $env (the trees may be exports)."""
    try:
        return subprocess.check_output(["git", "-C", d, "rev-parse", "HEAD"], text=True, stderr=subprocess.DEVNULL).strip()
    except Exception:
        return os.environ[env]


rng = random.Random(7)
sets = {
    "short": [3, 9, 4, 4, 12, 1, 7, 9, 2, 5],
    "long_outlier": [5, 6, 40, 5, 7, 6, 5, 8, 6, 5, 6, 7],
    "corpus": [rng.randint(1, 60) for _ in range(97)],
}
cases = []
for name, lengths in sets.items():
    for size, tokens in ((30, False), (4, False), (1, False), (24, True), (64, True), (10, True)):
        for style, fn in (("opennmt", onmt_batches), ("joeynmt", joey_batches)):
            lens = lengths
            if style == "joeynmt":
                lens = [n + 1 for n in lengths]  # JoeyNMT's rows end in </s>
            cases.append({"name": "%s/%s/%d/%s" % (name, style, size, "tokens" if tokens else "sents"),
                          "style": style, "size": size, "tokens": tokens, "lengths": lens,
                          "batches": fn(lens, size, tokens)})

head = {"opennmt_commit": commit(os.environ["ONMT_DIR"], "ONMT_COMMIT"), "joeynmt_commit": commit(os.environ["JOEY_DIR"], "JOEY_COMMIT"),
        "opennmt_version": "3.5.1", "joeynmt_version": "2.3.0"}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "batching.json")
with open(path, "w") as f:
    f.write(json.dumps(head)[:-1] + ', "cases": [\n')
    f.write(",\n".join(json.dumps(c) for c in cases))
    f.write("\n]}\n")
print("wrote", path, len(cases), "cases")
