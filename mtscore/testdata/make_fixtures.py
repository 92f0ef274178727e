"""Writes package mtscore's fixtures with sacreBLEU itself (not packaged by
Debian: pass the directory of a checkout of github.com/mjpost/sacrebleu; it
needs python3-portalocker, -regex, -tabulate, -colorama, -lxml):

    /usr/bin/python3 mtscore/testdata/make_fixtures.py SACREBLEU_CHECKOUT

Corpora (one line per segment):
  wmt17.ref, wmt17.SYSTEM  the first 400 segments of the WMT17 en-de
                           reference and of four systems, from the
                           checkout's test/wmt17_en_de_systems.pkl.bz2
  mixed.hyp, mixed.ref1, mixed.ref2
                           attnx's own: license texts, Chinese, other
                           scripts, numbers, punctuation, HTML entities
                           and empty lines (subword/testdata/corpus.txt),
                           hypotheses and a second reference made from the
                           reference by seeded edits
expected.json: for each case, sacreBLEU's score line, its JSON and the
unrounded score.
"""
import bz2
import json
import os
import pickle
import random
import sys

src = os.path.abspath(sys.argv[1])
sys.path.insert(0, src)
version_py = os.path.join(src, "sacrebleu", "version.py")
if not os.path.exists(version_py):  # a checkout has no generated version file
    with open(version_py, "w") as f:
        f.write('__version__ = "2.6.0"\n')
import sacrebleu  # noqa: E402
from sacrebleu.metrics import BLEU, CHRF  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, lines):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        for l in lines:
            f.write(l + "\n")


def read(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return [l.rstrip("\n") for l in f]


systems = pickle.load(bz2.open(os.path.join(src, "test", "wmt17_en_de_systems.pkl.bz2")))
_, refs = systems.pop()
write("wmt17.ref", refs[0][:400])
wmt = ["LIUM-NMT", "online-B", "PROMT-Rule-based", "uedin-nmt"]
for name, lines in systems:
    short = name.split(".")[1]
    if short in wmt:
        write("wmt17." + short, lines[:400])

rng = random.Random(20261203)


def edit(line):
    words = line.split()
    out = []
    for w in words:
        r = rng.random()
        if r < 0.08:
            continue
        if r < 0.14:
            w = w.upper()
        elif r < 0.2 and w[-1:] in ".,;:":
            w = w[:-1] + " " + w[-1]
        elif r < 0.24:
            w = w + " " + rng.choice(["&amp;", "&quot;", "3.14", "1,000", "-", "«", "»"])
        out.append(w)
    if rng.random() < 0.1:
        rng.shuffle(out)
    return " ".join(out)


corpus = read(os.path.join("..", "..", "subword", "testdata", "corpus.txt"))
ref1 = [l for i, l in enumerate(corpus) if i % 3 == 0][:600]
hyp = [edit(l) if rng.random() > 0.05 else "" for l in ref1]
ref2 = [edit(l) for l in ref1]
write("mixed.ref1", ref1)
write("mixed.ref2", ref2)
write("mixed.hyp", hyp)

cases = []
for s in wmt:
    cases.append({"hyp": "wmt17." + s, "refs": ["wmt17.ref"], "metric": "bleu", "opts": {}})
    cases.append({"hyp": "wmt17." + s, "refs": ["wmt17.ref"], "metric": "chrf", "opts": {}})
cases += [
    {"hyp": "wmt17.uedin-nmt", "refs": ["wmt17.ref"], "metric": "bleu", "opts": {"lowercase": True}},
    {"hyp": "wmt17.uedin-nmt", "refs": ["wmt17.ref"], "metric": "bleu", "opts": {"tokenize": "none"}},
    {"hyp": "wmt17.uedin-nmt", "refs": ["wmt17.ref"], "metric": "chrf", "opts": {"word_order": 2}},
    {"hyp": "mixed.hyp", "refs": ["mixed.ref1"], "metric": "bleu", "opts": {}},
    {"hyp": "mixed.hyp", "refs": ["mixed.ref1", "mixed.ref2"], "metric": "bleu", "opts": {}},
    {"hyp": "mixed.hyp", "refs": ["mixed.ref1", "mixed.ref2"], "metric": "bleu", "opts": {"smooth_method": "floor", "smooth_value": 0.1}},
    {"hyp": "mixed.hyp", "refs": ["mixed.ref1"], "metric": "bleu", "opts": {"smooth_method": "add-k", "smooth_value": 1}},
    {"hyp": "mixed.hyp", "refs": ["mixed.ref1"], "metric": "bleu", "opts": {"smooth_method": "none", "max_ngram_order": 6}},
    {"hyp": "mixed.hyp", "refs": ["mixed.ref1"], "metric": "bleu", "opts": {"effective_order": True, "max_ngram_order": 2}},
    {"hyp": "mixed.hyp", "refs": ["mixed.ref1"], "metric": "chrf", "opts": {}},
    {"hyp": "mixed.hyp", "refs": ["mixed.ref1", "mixed.ref2"], "metric": "chrf", "opts": {"word_order": 2}},
    {"hyp": "mixed.hyp", "refs": ["mixed.ref1"], "metric": "chrf", "opts": {"whitespace": True, "lowercase": True}},
    {"hyp": "mixed.hyp", "refs": ["mixed.ref1"], "metric": "chrf", "opts": {"eps_smoothing": True, "beta": 3}},
]
for c in cases:
    hyps = read(c["hyp"])
    refs = [read(r) for r in c["refs"]]
    m = BLEU(**c["opts"]) if c["metric"] == "bleu" else CHRF(**c["opts"])
    score = m.corpus_score(hyps, refs)
    sig = m.get_signature().format()
    c["line"] = score.format(signature=sig)
    c["json"] = json.loads(score.format(signature=sig, is_json=True))
    c["score"] = score.score
with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as f:
    json.dump({"sacrebleu": sacrebleu.__version__, "cases": cases}, f, indent=1, ensure_ascii=False)
    f.write("\n")
print("%d cases" % len(cases))
