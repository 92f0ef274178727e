"""Runs an OpenNMT-py 3.5.1 (or 2.3.0) entry point (build_vocab, train,
translate, release_model: onmt/bin/NAME.py's main) from the tree at
$ONMT_DIR, as the console scripts
onmt_build_vocab, onmt_train and onmt_translate do, with stand-ins for the
modules Debian does not package and these runs never call: spacy,
rapidfuzz, ahocorasick, fasttext and sacrebleu (imported at module level
by transforms and scorers these runs do not use) and torch 2's
scaled_dot_product_attention (transformer attention only; Debian's torch
is 1.13). pyonmttok, safetensors and subword_nmt are the real ones, on
PYTHONPATH (see make_onmt.sh).

    /usr/bin/python3 onmt_run.py train -config sp.yaml

With ONMT_GAPS=FILE, translate also writes FILE: for each source line (0
based) the smallest score gap on which the search's result hung, as the
toolkit computed it, over max(1, |score|): at each step of beam search, between the K-th and the
(K+1)-th best candidates of live paths (which ones go on) and, when one of
the best two ends the sentence, between those (whether it stops); at the
end, between neighbours among the n_best + 1 best finished hypotheses
(their order); in greedy search, between the best two tokens. A line whose
gap is below float32's noise on these scores is a near tie: another
implementation may rightly take the other side of it.
"""
import importlib
import os
import sys

sys.path.insert(0, os.environ["ONMT_DIR"])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onmt_standins  # noqa: E402

onmt_standins.install()

def record_gaps(path):
    """Wraps the searches' _pick to record each line's smallest gap."""
    import atexit
    import json

    import torch
    from onmt.translate.beam_search import BeamSearchBase
    from onmt.translate.greedy_search import GreedySearch
    from onmt.translate.translator import Translator

    gaps, current = {}, {"indices": []}

    def note(row_line, values):
        vals = sorted((v for v in values if v > -1e19), reverse=True)  # not blocked
        for a, b in zip(vals, vals[1:]):  # relative to the scores' size
            gaps[row_line] = min(gaps.get(row_line, float("inf")), (a - b) / max(1.0, abs(a)))

    translate_batch = Translator.translate_batch

    def tb(self, batch, *args):
        if isinstance(batch, dict):  # 3.x: the lines, counted in the bucket (the file, up to 16384 lines)
            ind = batch["ind_in_bucket"]
        else:  # 2.x: a torchtext Batch, whose indices are the lines of the shard
            ind = batch.indices
        current["indices"] = ind.tolist() if hasattr(ind, "tolist") else list(ind)
        return translate_batch(self, batch, *args)

    Translator.translate_batch = tb

    beam_pick = BeamSearchBase._pick

    def bp(self, log_probs, *args, **kwargs):
        K, V = self.beam_size, log_probs.size(-1)
        scores = log_probs.reshape(-1, K * V)
        # finished paths: -65504 in 3.x, -1e10 in 2.x
        finished = (self.topk_log_probs.reshape(-1, K) <= -65504).repeat_interleave(V, dim=1)
        for i in range(scores.size(0)):
            row = scores[i].masked_fill(finished[i], float("-inf"))
            top = torch.topk(row, K + 1)
            vals, ids = top.values.tolist(), (top.indices % V).tolist()
            line = current["indices"][int(self._batch_offset[i])]
            note(line, vals[K - 1:K + 1])
            if (ids[0] == self.eos) != (ids[1] == self.eos):
                note(line, vals[:2])
        return beam_pick(self, log_probs, *args, **kwargs)

    BeamSearchBase._pick = bp

    update_finished = BeamSearchBase.update_finished

    def uf(self):
        offsets = [int(b) for b in self._batch_offset]
        update_finished(self)
        for b in offsets:
            if self.scores[b] and ("done", b, id(self)) not in gaps:
                gaps[("done", b, id(self))] = 0
                note(current["indices"][b], [float(x[0]) for x in self.hypotheses[b][: self.n_best + 1]])

    BeamSearchBase.update_finished = uf

    greedy_pick = GreedySearch._pick

    def gp(self, log_probs):
        for r in range(log_probs.size(0)):
            note(current["indices"][int(self.original_batch_idx[r])], torch.topk(log_probs[r], 2).values.tolist())
        return greedy_pick(self, log_probs)

    GreedySearch._pick = gp

    def write():
        with open(path, "w") as f:
            json.dump({str(k): v for k, v in sorted(x for x in gaps.items() if isinstance(x[0], int))}, f, separators=(",", ":"))
            f.write("\n")

    atexit.register(write)


entry = sys.argv.pop(1)
if entry == "translate" and os.environ.get("ONMT_GAPS"):
    record_gaps(os.environ["ONMT_GAPS"])
sys.argv[0] = "onmt_" + entry
importlib.import_module("onmt.bin." + entry).main()
