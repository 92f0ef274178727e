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
# (build_toolkit_deps.sh makes them); PARTS="onmt2" (not made by default)
# needs ONMT2_DIR and TORCHTEXT_DIR too. Nothing of it runs in CI.
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
# OpenNMT-py 2.3.0, whose generators end in LogSoftmax: the mean of the
# log-probs, -avg_raw_probs the log of the mean probability. It trains
# (ONMT2_DIR, TORCHTEXT_DIR as make_onmt_summary.sh) a model of onmt-avg's
# recipe on its corpus cut as make_average.sh cuts it, saving two
# checkpoints, released (onmt_release_model) into onmt2-ensemble.
if [[ " $parts " == *" onmt2 "* ]]; then
	onmt2() { ONMT_DIR=$ONMT2_DIR PYTHONPATH=$PYONMTTOK_DIR:$TORCHTEXT_DIR nice $PY "$here/onmt_run.py" "$@"; }
	work=${WORK:-$(mktemp -d)}
	src="$here/onmt-avg" out="$here/onmt2-ensemble"
	mkdir -p "$work" && cd "$work"
	paste -d '\t' "$ONMT_DIR/data/src-train.txt" "$ONMT_DIR/data/tgt-train.txt" |
		awk -F'\t' '{n=split($1,a," "); m=split($2,b," "); if (n<=20 && m<=20 && n>=3) print}' > pairs.tsv
	head -n 3000 pairs.tsv | cut -f1 > train.src; head -n 3000 pairs.tsv | cut -f2 > train.tgt
	sed -n 3001,3100p pairs.tsv | cut -f1 > valid.src; sed -n 3001,3100p pairs.tsv | cut -f2 > valid.tgt
	cat > onmt2.yaml <<YAML
save_data: run2/data
src_vocab: run2/vocab.src
tgt_vocab: run2/vocab.tgt
overwrite: true
data:
  corpus_1:
    path_src: train.src
    path_tgt: train.tgt
    transforms: [sentencepiece, filtertoolong]
  valid:
    path_src: valid.src
    path_tgt: valid.tgt
    transforms: [sentencepiece, filtertoolong]
src_subword_model: $src/spm_src.model
tgt_subword_model: $src/spm_tgt.model
src_seq_length: 200
tgt_seq_length: 200
seed: 1234
model_type: text
encoder_type: brnn
decoder_type: rnn
rnn_type: LSTM
layers: 1
rnn_size: 16
word_vec_size: 8
global_attention: general
input_feed: 1
train_steps: 1500
valid_steps: 10000
save_checkpoint_steps: 500
keep_checkpoint: -1
save_model: run2/model
batch_size: 32
batch_type: sents
optim: adam
learning_rate: 0.003
world_size: 1
gpu_ranks: []
report_every: 100
bucket_size: 4096
YAML
	mkdir -p run2
	if [ ! -f run2/model_step_1500.pt ]; then
		onmt2 build_vocab -config onmt2.yaml -n_sample -1
		onmt2 train -config onmt2.yaml
	fi
	rm -rf "$out" && mkdir -p "$out/expected"
	for s in 1000 1500; do onmt2 release_model -m run2/model_step_$s.pt -o "$out/model_step_$s.pt"; done
	printf 'model_step_1000.pt\nmodel_step_1500.pt\n' > "$out/members"
	# 2.3.0's onmt_translate has no -transforms: it reads the test set as
	# SentencePiece pieces (spm_encode) and its output is decoded with
	# spm_decode; attnx reads test.src as text (export --src-tokenizer,
	# --tgt-tokenizer with the same models).
	head -n 24 "$src/test.src" > "$out/test.src"
	cp "$src/spm_src.model" "$src/spm_tgt.model" "$out/"
	spm_encode --model="$out/spm_src.model" < "$out/test.src" > "$out/test.pieces"
	printf 'default\t\t\ngreedy\t-beam_size 1\t--beam 1\nraw\t-avg_raw_probs\t--avg-raw-probs\nraw-greedy\t-avg_raw_probs -beam_size 1\t--avg-raw-probs --beam 1\n' > "$out/variants.tsv"
	while IFS=$'\t' read -r vname vflags _; do
		# shellcheck disable=SC2086
		(cd "$out" && ONMT_GAPS="$out/expected/$vname.gaps.json" onmt2 translate -model model_step_1000.pt model_step_1500.pt -src test.pieces \
			-output "$work/$vname.pieces" $vflags)
		spm_decode --model="$out/spm_tgt.model" < "$work/$vname.pieces" > "$out/expected/$vname.txt"
	done < "$out/variants.tsv"
	echo "OpenNMT-py 2.3.0 (9311a9af8c03eed235117c92e7e9a7ae860a6553) onmt_build_vocab, onmt_train, onmt_release_model and onmt_translate, torchtext 0.5.0, pyonmttok 1.37.1, torch $torch, made by testdata/toolkits/make_ensemble.sh" > "$out/VERSION"
	cd "$here"
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
