"""Writes package moses' fixtures with sacremoses itself (not packaged by
Debian: pass the directory of a checkout of github.com/hplt-project/sacremoses;
it needs python3-joblib, -click, -tqdm):

    /usr/bin/python3 moses/testdata/make_fixtures.py SACREMOSES_CHECKOUT

input.txt holds a few lines (after every fifth line of
subword/testdata/corpus.txt, the input) of of contractions,
abbreviations, numbers, quotes and markup; for each case,
CASE.tok holds MosesTokenizer(lang).tokenize(line, return_str=True, ...)
and CASE.detok MosesDetokenizer(lang).detokenize(tok.split()).
"""
import os
import sys

sys.path.insert(0, os.path.abspath(sys.argv[1]))
from sacremoses import MosesDetokenizer, MosesTokenizer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
corpus = open(os.path.join(HERE, "..", "..", "subword", "testdata", "corpus.txt"), encoding="utf-8").read().split("\n")[:-1]
extra = [
    "I can't believe it's not butter, said Mr. Smith at 5 p.m. on Jan. 3rd.",
    "He said \"hello\" and 'goodbye' -- then left... (quickly!) [really] {maybe} <b>bold</b> & A|B",
    "The U.S.A. had 3,000,000 people; Dr. No. 5 costs $3.50 or 4,50 EUR.",
    "L'homme qu'il a vu aujourd'hui n'est pas là ; c'est ça !",
    "Das ist z.B. ein Satz, d.h. ein Beispiel: 1. Mai 2020 um 10 Uhr.",
    "well-known state-of-the-art e-mail 2-3 x-ray",
    "students' books and the 1990's, 'tis the season",
    "Ahoj „světe“ – 3 . 14 e-mailu",
    "EU:ssa USA:n 20:een",
    "日本語のテキスト and 中文 mixed",
    "",
]
lines = corpus[::5] + extra  # every fifth line of the corpus keeps the fixtures small
with open(os.path.join(HERE, "input.txt"), "w", encoding="utf-8") as f:
    for l in extra:
        f.write(l + "\n")
cases = [("en", {}), ("en-aggressive", {"aggressive_dash_splits": True}), ("en-noescape", {"escape": False}),
         ("de", {}), ("fr", {}), ("cs", {}), ("fi", {}), ("zh", {}), ("xx", {})]
for name, kw in cases:
    lang = name.split("-")[0]
    mt, md = MosesTokenizer(lang=lang), MosesDetokenizer(lang=lang)
    with open(os.path.join(HERE, name + ".tok"), "w", encoding="utf-8") as ft, \
            open(os.path.join(HERE, name + ".detok"), "w", encoding="utf-8") as fd:
        for l in lines:
            t = mt.tokenize(l, return_str=True, **kw)
            ft.write(t + "\n")
            fd.write(md.detokenize(t.split()) + "\n")
print(len(lines), "lines,", len(cases), "cases")
