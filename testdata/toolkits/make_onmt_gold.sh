#!/bin/bash
# Makes testdata/toolkits/onmt-gold with OpenNMT-py's own onmt_translate
# -tgt -verbose: the scores of given translations (its GOLD lines, one
# forced pass of each reference through the decoder, and the summary
# lines PRED SCORE / GOLD SCORE it logs at the end). attnx's tests
# (translate TestScoreMatchesOpenNMT, cmd/attnx TestTranslateTgtOpenNMT)
# export the checkpoints with no flags and score the same pairs.
#
#   - sp-351.log: OpenNMT-py 3.5.1 on make_onmt.sh's onmt-sp (its
#     sentencepiece transform) with test.src and sp.tgt, the German
#     references of those 48 lines of OpenNMT-py's toy corpus (the pairs
#     make_onmt.sh keeps, lines 3101-3148), at its defaults.
#   - copy-230-b1.log: OpenNMT-py 2.3.0 on make_onmt_summary.sh's
#     onmt-sum-copy (copy attention) with its test.src and test.tgt, with
#     -batch_size 1.
#   - copy-230.log: the same at 2.3.0's default batch size (30), whose
#     gold scores of a copy model are not the sentences' own:
#     Translator._decode_and_generate transposes the copy generator's
#     scores to [batch, time, vocab] for collapse_copy_scores and then
#     views them as [time, batch, vocab], so with more than one sentence
#     in a batch each position gathers another sentence's or another
#     step's distribution (GOLD SCORE -inf on some lines). Kept to show
#     why the fixture of record is -batch_size 1's, where the view is
#     right; attnx scores each pair on its own distribution.
#
# Needs ONMT_DIR (OpenNMT-py v3.5.1), ONMT2_DIR (tag 2.3.0), PYONMTTOK_DIR
# and TOKENIZER_LIB (build_toolkit_deps.sh) and TORCHTEXT_DIR (torchtext
# 0.5.0), as make_onmt_summary.sh; Debian's python3-torch 1.13,
# python3-sentencepiece, python3-configargparse, python3-tqdm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$here/onmt-gold
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
export LD_LIBRARY_PATH=${TOKENIZER_LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PY=/usr/bin/python3
onmt3() { ONMT_DIR=$ONMT_DIR PYTHONPATH=$PYONMTTOK_DIR $PY "$here/onmt_run.py" "$@"; }
onmt2() { ONMT_DIR=$ONMT2_DIR PYTHONPATH=$PYONMTTOK_DIR:$TORCHTEXT_DIR $PY "$here/onmt_run.py" "$@"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# onmt_translate logs through its logger, with time stamps: they go, with
# torch's and torchtext's warnings (two lines each) and the progress lines.
strip() {
	sed -E 's/^\[[0-9-]+ [0-9:,]+ INFO\] //' | grep -v -e '^Loading ' -e '^Time w/o' -e '^Translating shard' -e '^/.*Warning: ' -e '^  warnings.warn' -e '^  var = '
}

paste -d '\t' "$ONMT_DIR/data/src-train.txt" "$ONMT_DIR/data/tgt-train.txt" |
	awk -F'\t' '{n=split($1,a," "); m=split($2,b," "); if (n<=20 && m<=20 && n>=3) print}' | sed -n 3101,3148p > "$work/pairs.tsv"
cut -f1 "$work/pairs.tsv" | cmp - "$here/onmt-sp/test.src"
cut -f2 "$work/pairs.tsv" > "$out/sp.tgt"
sp=$here/onmt-sp
onmt3 translate -model "$sp/model.pt" -src "$sp/test.src" -tgt "$out/sp.tgt" -output "$work/sp.txt" -verbose \
	-transforms sentencepiece -src_subword_model "$sp/spm_src.model" -tgt_subword_model "$sp/spm_tgt.model" 2>&1 | strip > "$out/sp-351.log"
cp "$work/sp.txt" "$out/sp-351.pred"

cp=$here/onmt-sum-copy
onmt2 translate -model "$cp/model.pt" -src "$cp/test.src" -tgt "$cp/test.tgt" -output "$work/c1.txt" -verbose -batch_size 1 2>&1 | strip > "$out/copy-230-b1.log"
onmt2 translate -model "$cp/model.pt" -src "$cp/test.src" -tgt "$cp/test.tgt" -output "$work/c.txt" -verbose 2>&1 | strip > "$out/copy-230.log"

torch=$($PY -c 'import torch; print(torch.__version__)')
cat > "$out/VERSION" <<V
sp-351.log, sp-351.pred: OpenNMT-py 3.5.1 (3f0c5f7c24c0a26e7165e054cd8000e18b931799) onmt_translate -tgt -verbose, pyonmttok 1.37.1, torch $torch, made by testdata/toolkits/make_onmt_gold.sh
copy-230-b1.log, copy-230.log: OpenNMT-py 2.3.0 (9311a9af8c03eed235117c92e7e9a7ae860a6553) onmt_translate -tgt -verbose, torchtext 0.5.0, torch $torch, made by testdata/toolkits/make_onmt_gold.sh
V
