"""Writes expected.json: ROUGE of every NAME.hyp against NAME.ref here, as
ROUGE-1.5.5 reports it through files2rouge (and pyrouge), and as Google's
rouge-score computes it, for mtscore's TestRougeMatchesTools.

    FILES2ROUGE_DIR=... PYROUGE_DIR=... ROUGE_SCORE_DIR=... \\
        /usr/bin/python3 mtscore/testdata/rouge/make_rouge.py

  FILES2ROUGE_DIR  pltrdy/files2rouge (d3d09c8), its files2rouge package
                   and RELEASE-1.5.5 (ROUGE-1.5.5.pl, its data and
                   XML::DOM); Debian's perl, libxml-parser-perl (DB_File
                   is perl's own).
  PYROUGE_DIR      pltrdy/pyrouge (dfdff03), which files2rouge calls.
  ROUGE_SCORE_DIR  a directory holding google-research's rouge package
                   (rouge/rouge_scorer.py, scoring.py, tokenize.py of
                   google-research/google-research); Debian's python3-nltk,
                   python3-six, python3-numpy. Unset, rouge-score's scores
                   already in expected.json are kept as they are (and a
                   file without them gets none).

sum-cut.hyp is written first, from sum-greedy.hyp (the greedy summaries of
the summarization recipe's model) as summaries that the length limit cut
off or that lack full stops come out: of every three lines, the first
ends inside its last sentence (no " ." and no </t>), in the second every
sentence but the last has no " .", the third tells its first sentence's
second half first, the two halves as two sentences without " .";
sum-cut.ref is sum-greedy.ref.

Both get the text as their users give it for OpenNMT-py's summaries:
files2rouge the files with <t> and </t> removed by the sed commands of
OpenNMT-py's summarization guide (files2rouge then splits sentences after
" ."), and for rouge155-tags (mtscore's TagSentences) with " ." written
before each </t> that lacks one first, so that the tags end sentences; rouge-score each line with <t> and </t> removed and a newline where each
stood between words (rougeLsum's sentences), a line without tags as it
is. The scores are
files2rouge's printed averages and rouge-score's mean over the lines.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
f2r, pyrouge, rs = os.environ["FILES2ROUGE_DIR"], os.environ["PYROUGE_DIR"], os.environ.get("ROUGE_SCORE_DIR")


def cut_summaries():
    """sum-cut.hyp and sum-cut.ref from sum-greedy's (see above)."""
    out = []
    for i, line in enumerate(open(os.path.join(here, "sum-greedy.hyp")).read().split("\n")[:-1]):
        sents = [s.strip().split() for s in line.replace("<t>", "").split("</t>") if s.strip()]
        if i % 3 == 0:
            last = sents[-1]
            sents[-1] = last[:max(1, (2 * len(last)) // 3)]
            if sents[-1][-1] == ".":
                sents[-1] = sents[-1][:-1]
            out.append(" ".join("<t> " + " ".join(s) + " </t>" for s in sents[:-1]) + (" " if len(sents) > 1 else "") + "<t> " + " ".join(sents[-1]))
            continue
        if i % 3 == 2:
            first = sents[0][:-1] if sents[0][-1] == "." else sents[0]
            half = len(first) // 2
            sents[:1] = [first[half:], first[:half]] if half > 0 else [first]
        else:
            for s in sents[:-1]:
                if s[-1] == ".":
                    s.pop()
        out.append(" ".join("<t> " + " ".join(s) + " </t>" for s in sents))
    with open(os.path.join(here, "sum-cut.hyp"), "w") as f:
        f.write("\n".join(out) + "\n")
    with open(os.path.join(here, "sum-greedy.ref")) as src, open(os.path.join(here, "sum-cut.ref"), "w") as f:
        f.write(src.read())


def files2rouge(hyp, ref, stem, tag_ends=False):
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, src in (("hyp", hyp), ("ref", ref)):
            paths[name] = os.path.join(tmp, name)
            with open(src) as f, open(paths[name], "w") as out:
                for line in f:
                    if tag_ends:
                        # Each tagged sentence ends with " ." (the "."
                        # is no token to ROUGE): its sentences are the tags'.
                        line = re.sub(r"(?<! \.) </t>", " . </t>", line)
                    out.write(line.replace("<t> ", "").replace(" </t>", ""))
        pkg = os.path.join(tmp, "pkg")
        subprocess.run(["cp", "-r", os.path.join(f2r, "files2rouge"), pkg], check=True)
        release = os.path.join(f2r, "files2rouge", "RELEASE-1.5.5")
        with open(os.path.join(pkg, "settings.json"), "w") as f:
            json.dump({"ROUGE_path": os.path.join(release, "ROUGE-1.5.5.pl"), "ROUGE_data": os.path.join(release, "data")}, f)
        os.makedirs(os.path.join(tmp, "lib", "files2rouge"))
        for fn in os.listdir(pkg):
            os.rename(os.path.join(pkg, fn), os.path.join(tmp, "lib", "files2rouge", fn))
        args = [sys.executable, "-c", "import sys; from files2rouge import files2rouge; sys.argv = sys.argv[1:]; files2rouge.main()",
                "files2rouge", paths["ref"], paths["hyp"]]
        if not stem:
            args.append("--no_stemming")
        env = dict(os.environ, PYTHONPATH=os.path.join(tmp, "lib") + ":" + pyrouge)
        out = subprocess.run(args, capture_output=True, text=True, env=env, check=True).stdout
    res = {}
    for m in re.finditer(r"ROUGE-(1|2|L) Average_(R|P|F): ([0-9.]+)", out):
        res.setdefault("ROUGE-" + m.group(1), {})[m.group(2)] = float(m.group(3))
    if len(res) != 3:
        raise SystemExit("files2rouge printed:\n" + out)
    return res


def rouge_score(hyp, ref):
    sys.path.insert(0, rs)
    from rouge import rouge_scorer

    def prep(line):
        # <t> and </t> removed, each ending a sentence (none left empty).
        if "<t>" not in line and "</t>" not in line:
            return line
        sents, cur = [], []
        for tok in line.split():
            if tok in ("<t>", "</t>"):
                if cur:
                    sents.append(" ".join(cur))
                cur = []
            else:
                cur.append(tok)
        if cur:
            sents.append(" ".join(cur))
        return "\n".join(sents)

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"])
    hyps = [prep(l.rstrip("\n")) for l in open(hyp)]
    refs = [prep(l.rstrip("\n")) for l in open(ref)]
    names = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L", "rougeLsum": "ROUGE-Lsum"}
    tot = {}
    for h, r in zip(hyps, refs):
        for k, s in scorer.score(r, h).items():
            t = tot.setdefault(names[k], {"R": 0.0, "P": 0.0, "F": 0.0})
            t["R"] += s.recall
            t["P"] += s.precision
            t["F"] += s.fmeasure
    return {k: {m: v / len(hyps) for m, v in t.items()} for k, t in tot.items()}


def porter(words):
    """ROUGE-1.5.5's own stem() (its Porter stemmer, copied out of the
    script at run time) on each word."""
    script = open(os.path.join(f2r, "files2rouge", "RELEASE-1.5.5", "ROUGE-1.5.5.pl")).read()
    code = script[script.index("local %step2list;"):] + '\n&initialise(); while(<STDIN>){chomp; print stem($_),"\\n";}\n'
    out = subprocess.run(["perl", "-e", code], input="\n".join(words) + "\n", capture_output=True, text=True, check=True).stdout
    return out.split("\n")[:len(words)]


def main():
    cut_summaries()
    # porter.tsv: the words of the summarization corpus and of the
    # references here (over 3 letters), with ROUGE-1.5.5's stems.
    corpus = os.environ.get("CORPUS", os.path.join(here, "..", "..", "..", "testdata", "toolkits", "summary_corpus.py"))
    text = ""
    if corpus.endswith(".py"):
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, corpus, tmp], check=True)
            text = open(os.path.join(tmp, "train.src")).read()
    for ref in glob.glob(os.path.join(here, "*.ref")):
        text += open(ref).read()
    words = sorted(set(w for w in re.split(r"[^a-z]+", text.lower()) if len(w) > 3))
    with open(os.path.join(here, "porter.tsv"), "w") as f:
        for w, s in zip(words, porter(words)):
            f.write("%s\t%s\n" % (w, s))

    old = json.load(open(os.path.join(here, "expected.json")))
    out = {"files2rouge": "pltrdy/files2rouge d3d09c8 (ROUGE-1.5.5 -c 95 -r 1000 -n 2 -a [-m]), pyrouge pltrdy dfdff03",
           "rouge_score": "google-research/google-research rouge (rouge_scorer.py 0c1bbe5)", "files": {}}
    for hyp in sorted(glob.glob(os.path.join(here, "*.hyp"))):
        name = os.path.basename(hyp)[:-4]
        ref = hyp[:-4] + ".ref"
        out["files"][name] = {"rouge155": files2rouge(hyp, ref, True), "rouge155-nostem": files2rouge(hyp, ref, False),
                              "rouge155-tags": files2rouge(hyp, ref, True, tag_ends=True)}
        if rs:
            out["files"][name]["rouge-score"] = rouge_score(hyp, ref)
        elif "rouge-score" in old["files"].get(name, {}):
            out["files"][name]["rouge-score"] = old["files"][name]["rouge-score"]
    with open(os.path.join(here, "expected.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote expected.json for", ", ".join(out["files"]))


main()
