#!/bin/bash
# Makes testdata/toolkits/onmt-prefix with OpenNMT-py 3.5.1's own
# onmt_translate -tgt FILE -tgt_file_prefix -verbose on make_onmt.sh's
# onmt-sp (its sentencepiece transform): each line of prefix.tgt, the
# first two words of make_onmt_gold.sh's references (onmt-gold/sp.tgt),
# is forced as the start of its translation (target_prefixing: the other
# tokens' scores 10000 lower), and the search goes on from there; PRED
# SCORE counts the prefix's log-probs. At its defaults (-beam_size 5:
# beam5.pred, beam5.log) and with -beam_size 1 (beam1.*). attnx's
# translate TestPrefixMatchesOpenNMT exports the checkpoint with no
# flags and decodes the same lines with the same prefixes.
#
# Needs what make_onmt_gold.sh needs for 3.5.1: ONMT_DIR (v3.5.1),
# PYONMTTOK_DIR and TOKENIZER_LIB (build_toolkit_deps.sh); Debian's
# python3-torch 1.13, python3-sentencepiece, python3-configargparse,
# python3-tqdm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$here/onmt-prefix
mkdir -p "$out"
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
export LD_LIBRARY_PATH=${TOKENIZER_LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PY=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
strip() {
	sed -E 's/^\[[0-9-]+ [0-9:,]+ INFO\] //' | grep -v -e '^Loading ' -e '^Time w/o' -e '^Translating shard' -e '^/.*Warning: ' -e '^  warnings.warn' -e '^  var = '
}
awk '{print $1" "$2}' "$here/onmt-gold/sp.tgt" > "$out/prefix.tgt"
sp=$here/onmt-sp
for k in 5 1; do
	ONMT_DIR=$ONMT_DIR PYTHONPATH=$PYONMTTOK_DIR $PY "$here/onmt_run.py" translate -model "$sp/model.pt" -src "$sp/test.src" \
		-tgt "$out/prefix.tgt" -tgt_file_prefix -beam_size $k -output "$work/p.txt" -verbose \
		-transforms sentencepiece -src_subword_model "$sp/spm_src.model" -tgt_subword_model "$sp/spm_tgt.model" 2>&1 | strip > "$out/beam$k.log"
	cp "$work/p.txt" "$out/beam$k.pred"
done
torch=$($PY -c 'import torch; print(torch.__version__)')
echo "OpenNMT-py 3.5.1 ($(cd "$ONMT_DIR" 2>/dev/null && git rev-parse HEAD 2>/dev/null || echo 3f0c5f7c24c0a26e7165e054cd8000e18b931799)) onmt_translate -tgt -tgt_file_prefix -verbose, pyonmttok 1.37.1, torch $torch, made by testdata/toolkits/make_onmt_prefix.sh" > "$out/VERSION"
