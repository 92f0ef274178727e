"""Writes lang_casing.jsonl with pyonmttok's own code (the OpenNMT
Tokenizer 1.37.1, built from OpenNMT/Tokenizer v1.37.1 by
testdata/toolkits/build_toolkit_deps.sh against Debian's ICU 72.1): the
case markup of the Tokenizer with `lang` set to each language whose case
mappings ICU treats specially (tr, az: dotted and dotless i; lt: the dot
above kept on i and j before accents; el: Greek uppercasing; nl: IJ
titlecasing; hy: ech-yiwn), and en for the root's, in the format of
expected.jsonl (versions in lang_casing.VERSION): for each option set, for each text, pyonmttok's tokens and
its detokenization of them; then token lists given to detokenize alone
(a capitalized and an upper-case word of each text's words, lowercased by
the same Tokenizer).

The texts are the strings of issue 58 (Lithuanian lowercasing of I with
accents, uppercasing of i with a dot above, Dutch ij), words of each
language, and random mixes of the letters and combining marks the
conditional mappings look at.

    PYTHONPATH=$PYONMTTOK_DIR LD_LIBRARY_PATH=$TOKENIZER_LIB \\
      /usr/bin/python3 make_lang_fixtures.py
"""
import json
import os
import random
import subprocess

import pyonmttok

here = os.path.dirname(os.path.abspath(__file__))

texts = [
    # issue 58
    "Î Ï Ī Ĵ Ȋ Ḯ Ì Í Ĩ İ",
    "ÎLE Ïa ĪKI ĴONAS Ȋx Ḯo",
    "İSTANBUL ŞİŞLİ İzmir",
    "i\u0307s i\u0307stanbul şi\u0307şli\u0307",
    "I\u0301 J\u0301 Į\u0301 I\u0323\u0301 J\u0323 I\u0307",
    "ij ijs IJsselmeer Ijmuiden íj\u0301s ÍJ\u0301S ij\u0308",
    # words of the languages
    "Diyarbakır IĞDIR ılık Işık iyi DİŞ diş",
    "Azərbaycan İLHAM Əli",
    "Lietuva JĮ ĮĖJIMAS Į\u0303 Ì",
    "ΑΘΗΝΑ Αθήνα ή Ή ΟΔΟΣ οδός Πατάτα άι ᾳ ΐ ΰ ῥ ἀΐ",
    "Հայաստան ԵՒ և Եւ",
    "STRAßE ﬀ ŉ ǰ Ǆ ǅ ǆ",
    "1ABC 'ABC -IJ x",
]
alphabet = list("IiİıJjĮįÌÍĨìíĩÎÏĪĴȊḮîïīĵȋḯaAsSeEoO1'·ΣσςΑαΆάΕΗΉήΙΊίΪϊΐΟΥΎύΫϋΰΩΏώᾳᾼῳἀἈὐὨᾷΰßŉǰĳĲև") + [
    "\u0300", "\u0301", "\u0303", "\u0307", "\u0308", "\u0323", "\u0328", "\u0342", "\u0344", "\u0345",
    "\u0313", "\u0314", "\u0302", "\u0311", "\u0304", "\u00ad", " ", " ", " "]
rng = random.Random(58)
for _ in range(200):
    texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 16))).strip() or "I")

langs = ["tr", "az", "lt", "el", "nl", "hy", "en"]
option_sets = [
    ("case_markup", {"mode": "conservative", "case_markup": True, "joiner_annotate": True}),
    ("soft_case_regions", {"mode": "aggressive", "case_markup": True, "soft_case_regions": True,
                           "segment_case": True, "joiner_annotate": True}),
]

with open(os.path.join(here, "lang_casing.jsonl"), "w", encoding="utf-8") as f:
    for lang in langs:
        for name, kw in option_sets:
            kw = dict(kw, lang=lang)
            tok = pyonmttok.Tokenizer(**kw)
            cases = []
            for text in texts:
                tokens, _ = tok.tokenize(text)
                cases.append({"text": text, "tokens": tokens, "detok": tok.detokenize(tokens)})
            f.write(json.dumps({"set": "%s_%s" % (name, lang), "kwargs": kw, "cases": cases},
                               ensure_ascii=False) + "\n")
        # Detokenize alone: each word of the texts, lowercased by this
        # Tokenizer, as a capitalized and as an upper-case token.
        kw = dict(option_sets[0][1], lang=lang)
        tok = pyonmttok.Tokenizer(**kw)
        words = sorted({w for text in texts for w in text.split()})
        for w in words:
            low = [t for t in tok.tokenize(w)[0] if not t.startswith("｟mrk_")]
            if len(low) != 1:
                continue
            for tokens in (["｟mrk_case_modifier_C｠", low[0]],
                           ["｟mrk_begin_case_region_U｠", low[0], "｟mrk_end_case_region_U｠"]):
                f.write(json.dumps({"set": "detokenize_" + lang, "kwargs": kw, "detokenize": tokens,
                                    "detok": tok.detokenize(tokens)}, ensure_ascii=False) + "\n")
icu = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libicu72"], capture_output=True, text=True).stdout
with open(os.path.join(here, "lang_casing.VERSION"), "w") as f:
    f.write("pyonmttok %s (OpenNMT/Tokenizer v1.37.1, ICU 72.1: Debian's libicu72 %s), made by "
            "onmttok/testdata/make_lang_fixtures.py\n" % (pyonmttok.__version__, icu))
print(len(langs) * len(option_sets), "sets of", len(texts), "texts")
