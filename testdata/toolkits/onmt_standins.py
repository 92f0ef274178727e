"""Stand-ins for what OpenNMT-py 3.5.1 imports at module level and Debian
does not package, none of which the runs of this project's fixture scripts
call: spacy, rapidfuzz, ahocorasick and fasttext (transforms), sacrebleu
(scoring), pyonmttok when it is not on the path (tokenisation and
vocabulary building: make_onmt.sh puts the real one there), and torch 2's
scaled_dot_product_attention (transformer attention; Debian's torch is
1.13)."""
import importlib.util
import sys
import types


def install():
    names = ["spacy", "ahocorasick", "fasttext", "sacrebleu"]
    if importlib.util.find_spec("pyonmttok") is None:
        names.append("pyonmttok")
    for name in names:
        sys.modules.setdefault(name, types.ModuleType(name))
    rapidfuzz = types.ModuleType("rapidfuzz")
    rapidfuzz.fuzz = rapidfuzz.process = rapidfuzz.utils = None
    sys.modules.setdefault("rapidfuzz", rapidfuzz)
    sys.modules["sacrebleu"].corpus_ter = sys.modules["sacrebleu"].corpus_bleu = None

    import torch.nn.functional as F

    if not hasattr(F, "scaled_dot_product_attention"):
        def _sdpa(*a, **k):
            raise NotImplementedError("stand-in: transformer attention is not on this path")
        F.scaled_dot_product_attention = _sdpa
