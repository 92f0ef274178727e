"""Writes multidots.jsonl, package moses' fixture of runs of dots, with
sacremoses itself (pass the directory of a checkout of
github.com/hplt-project/sacremoses; made with 0.1.1-1-g53ce2d9):

    /usr/bin/python3 moses/testdata/make_multidots.py SACREMOSES_CHECKOUT

Each line is a JSON object: "in", a text; "replaced", what
MosesTokenizer.replace_multidots makes of it; "restored", what
restore_multidots makes of that; "tok", MosesTokenizer("en").tokenize(in,
return_str=True). The texts are long runs of dots, and random strings of
dots, spaces, letters and the markers' own letters ("DOTMULTI" typed in
the text), where the markers of neighbouring runs meet.

sacremoses' package imports joblib, tqdm, click and regex for parts the
tokenizer does not use; when Debian lacks them they are left as empty
modules.
"""
import json
import os
import random
import sys
import types

for name in ["joblib", "tqdm", "click", "regex"]:
    try:
        __import__(name)
    except ImportError:
        stub = types.ModuleType(name)
        stub.Parallel = stub.delayed = stub.tqdm = lambda *a, **k: None
        sys.modules[name] = stub
sys.path.insert(0, os.path.abspath(sys.argv[1]))
from sacremoses import MosesTokenizer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
tok = MosesTokenizer(lang="en")
texts = ["." * n for n in (1, 2, 3, 4, 999, 3000)]
texts += ["x " + "." * 2000 + " y", "a" + "." * 1000 + "b" + "." * 1000, ". " * 500, ".. " * 500]
texts += ["DOTMULTI.DOTMULTI.DOTMULTI.x", "..DOTMULTI.x", "DOTDOTMULTI..", "Mr... Smith.. left....", "3...4 DOTMULTI"]
alphabet = ["DOT", "MULTI", "DOTMULTI", "DOTMULTI.", ".", "..", "...", " ", "x", "D", "'", ",", "5"]
rng = random.Random(7)
for _ in range(400):
    texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 14))))
with open(os.path.join(HERE, "multidots.jsonl"), "w", encoding="utf-8") as f:
    for t in texts:
        r = tok.replace_multidots(t)
        f.write(json.dumps({"in": t, "replaced": r, "restored": tok.restore_multidots(r),
                            "tok": tok.tokenize(t, return_str=True)}) + "\n")
print(len(texts), "texts")
