"""pyonmttok's lines per second on a text under the option sets of
onmttok/testdata/expected.jsonl named below (internal/bench/onmttok.sh runs it).
"""
import json, os, sys, time
import pyonmttok
here = sys.argv[1]; text = sys.argv[2]
lines = open(text, encoding="utf-8").read().rstrip("\n").split("\n")
sets = {}
for l in open(os.path.join(here, "expected.jsonl"), encoding="utf-8"):
    d = json.loads(l)
    if "cases" in d: sets[d["set"]] = d["kwargs"]
for name in ["bpe_fixture_model", "sp_fixture_model", "onmt_docs"]:
    kw = dict(sets[name])
    for k in ("bpe_model_path", "sp_model_path"):
        if k in kw: kw[k] = os.path.join(here, kw[k])
    tok = pyonmttok.Tokenizer(**kw)
    best = None
    for rep in range(3):
        t = time.perf_counter(); toks = [tok(l) for l in lines]; dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    bd = None
    for rep in range(3):
        t = time.perf_counter(); [tok.detokenize(x) for x in toks]; dt = time.perf_counter() - t
        bd = dt if bd is None else min(bd, dt)
    print("%s tokenize %.0f lines/s, detokenize %.0f lines/s" % (name, len(lines)/best, len(lines)/bd))
