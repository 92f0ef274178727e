#!/bin/bash
# Makes testdata/toolkits/onmt-ensemble and fairseq-ensemble, the fixtures
# of attnx translate --model A --model B (issue 55 item 1): the test sets
# of onmt-avg and fairseq-avg (make_average.sh) translated by an ensemble
# of two checkpoints of the one training run those directories hold, with
# the toolkits' own ensemble code: onmt_translate -model A B (the mean of
# the members' log-probs) and -model A B -avg_raw_probs (the log of the
# mean of their probabilities), OpenNMT-py 3.5.1; fairseq-interactive
# --path A:B (logsumexp of the log-probs minus log 2), fairseq 0.12.2.
# The checkpoints stay where make_average.sh put them; members names them.
# OpenNMT-py 3.5.1's generators give logits: its ensemble's default is the
# log_softmax of their mean, and -avg_raw_probs log(mean(exp(logits)))
# before that log_softmax (each member weighted by its softmax normalizer,
# which an exported decoder's log-probs do not carry): attnx refuses that
# variant, whose lines (raw, raw-greedy) are kept as the toolkit wrote them.
#
# Needs ONMT_DIR, PYONMTTOK_DIR, TOKENIZER_LIB, FAIRSEQ_DIR, HYDRA_DIR,
# OMEGACONF_DIR and SUBWORD_NMT_DIR as make_average.sh does
# (build_toolkit_deps.sh makes them). Nothing of it runs in CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
export LD_LIBRARY_PATH=${TOKENIZER_LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PY=/usr/bin/python3
onmt() { PYTHONPATH=$PYONMTTOK_DIR nice $PY "$here/onmt_run.py" "$@"; }
fs() { PYTHONPATH=$SUBWORD_NMT_DIR nice $PY "$here/fairseq_run.py" "$@"; }
torch=$($PY -c 'import torch; print(torch.__version__)')

# Each variant: name, the toolkit's flags, attnx translate's flags (besides
# the members' --model).
parts=${PARTS:-onmt fairseq}
if [[ " $parts " == *" onmt "* ]]; then
	src="$here/onmt-avg" out="$here/onmt-ensemble"
	rm -rf "$out" && mkdir -p "$out/expected"
	printf '../onmt-avg/model_step_400.pt\n../onmt-avg/model_step_800.pt\n' > "$out/members"
	printf 'default\t\t\ngreedy\t-beam_size 1\t--beam 1\nraw\t-avg_raw_probs\t--avg-raw-probs\nraw-greedy\t-avg_raw_probs -beam_size 1\t--avg-raw-probs --beam 1\n' > "$out/variants.tsv"
	while IFS=$'\t' read -r vname vflags _; do
		# shellcheck disable=SC2086
		(cd "$src" && ONMT_GAPS="$out/expected/$vname.gaps.json" onmt translate -model model_step_400.pt model_step_800.pt -src test.src \
			-output "$out/expected/$vname.txt" -transforms sentencepiece \
			-src_subword_model spm_src.model -tgt_subword_model spm_tgt.model $vflags)
	done < "$out/variants.tsv"
	echo "OpenNMT-py 3.5.1 (3f0c5f7c24c0a26e7165e054cd8000e18b931799), pyonmttok 1.37.1, torch $torch, made by testdata/toolkits/make_ensemble.sh" > "$out/VERSION"
fi
if [[ " $parts " == *" fairseq "* ]]; then
	src="$here/fairseq-avg" out="$here/fairseq-ensemble"
	rm -rf "$out" && mkdir -p "$out/expected"
	printf '../fairseq-avg/checkpoint_3_200.pt\n../fairseq-avg/checkpoint_7_600.pt\n' > "$out/members"
	printf 'default\t\t\ngreedy\t--beam 1\t--beam 1\n' > "$out/variants.tsv"
	while IFS=$'\t' read -r vname vflags _; do
		# shellcheck disable=SC2086
		FAIRSEQ_GAPS="$out/expected/$vname.gaps.json" fs interactive "$src/data-bin" --path "$src/checkpoint_3_200.pt:$src/checkpoint_7_600.pt" \
			--bpe subword_nmt --bpe-codes "$src/bpecodes" --cpu --source-lang en --target-lang de --buffer-size 64 --batch-size 64 $vflags \
			< "$src/test.raw.en" | grep -v -e '^ANTLR runtime and generated code versions disagree' -e '^W-' > "$out/expected/$vname.out"
		grep '^D-' "$out/expected/$vname.out" | cut -f3 > "$out/expected/$vname.txt"
	done < "$out/variants.tsv"
	echo "fairseq 0.12.2 (4a388e64cd646ed7d7ad8de8fae55df2b8eea91d), hydra-core 1.0.7, omegaconf 2.0.6, subword-nmt v0.3.8, torch $torch, made by testdata/toolkits/make_ensemble.sh" > "$out/VERSION"
fi
echo "made the ensemble fixtures of $parts in $here"
