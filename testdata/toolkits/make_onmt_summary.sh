#!/bin/bash
# Makes testdata/toolkits/onmt-sum-* with OpenNMT-py's own code: small
# summarization models of each variant of its RNN summarization recipe
# (config/config-rnn-summarization.yml: brnn encoder, mlp attention, bridge,
# copy_attn, reuse_copy_attn, optionally coverage_attn and shared
# embeddings; context gates besides), trained by onmt_build_vocab and
# onmt_train on summary_corpus.py's synthetic corpus, and translated by
# onmt_translate with each setting of onmt_sum_variants.tsv. attnx's tests
# (cmd/attnx TestOpenNMTSummaryModels, TestOpenNMTSummary351) export each
# checkpoint with no flags and translate test.src against them.
#
# Two releases, because OpenNMT-py 3.x cannot translate a copy-attention
# model:
#
#   - 3.5.1 (3.2.0 to 3.5.1 alike) trains one but its translator cannot
#     load it: Model.load_state_dict looks for the generator's parameter
#     names ("weight") among the saved keys ("linear.weight", ...) and
#     fails with "Missing key in checkpoint: generator.linear.weight".
#     onmt-sum-351-* keep two such checkpoints (what attnx must export)
#     with that traceback. 3.1.3, the last 3.x that loads them, writes a
#     copied word as the source vocabulary's entry at its dynamic id, not
#     the sentence's word; 3.x also collapses the copy scores of a batch's
#     sentences with another sentence's dynamic vocabulary once one has
#     finished.
#   - 2.3.0, the newest release whose translator runs the recipe's flags
#     on RNN models, is the reference: onmt-sum-<variant>, trained and
#     translated by 2.3.0. Its separate copy attention (copy_attn without
#     reuse_copy_attn) is not masked to each sentence's length, so in a
#     batch a sentence copies from its padding: every translation here runs
#     with -batch_size 1, what a sentence translates to alone.
#
# Needs: ONMT_DIR (OpenNMT-py v3.5.1), ONMT2_DIR (OpenNMT-py 2.3.0, tag
# 2.3.0, 9311a9af8c03eed235117c92e7e9a7ae860a6553), TORCHTEXT_DIR
# (pytorch/text 0.5.0's torchtext package, pure Python, which 2.3.0
# requires, with Debian's python3-tqdm, python3-sentencepiece and
# python3-configargparse), PYONMTTOK_DIR and TOKENIZER_LIB as
# make_onmt.sh (both may be empty for TRANSLATE_ONLY). ONLY="name
# ..." makes those 2.3.0 variants only (two runs side by side use both
# cores; "351" the 3.5.1 part). TRANSLATE_ONLY=1 keeps each onmt-sum-*
# model and test set as they are and runs 2.3.0's onmt_translate again,
# with VARIANTS="setting ..." those settings of onmt_sum_variants.tsv only
# (the others' outputs stay): no training, so the checkpoints the other
# outputs came from are the ones translated.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-$(mktemp -d)}
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
export LD_LIBRARY_PATH=${TOKENIZER_LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PY=/usr/bin/python3
onmt3() { ONMT_DIR=$ONMT_DIR PYTHONPATH=$PYONMTTOK_DIR $PY "$here/onmt_run.py" "$@"; }
onmt2() { ONMT_DIR=$ONMT2_DIR PYTHONPATH=$PYONMTTOK_DIR:$TORCHTEXT_DIR $PY "$here/onmt_run.py" "$@"; }
want() { [[ -z ${ONLY:-} || " $ONLY " == *" $1 "* ]]; }
cd "$work"
[ -n "${TRANSLATE_ONLY:-}" ] || [ -f train.src ] || $PY "$here/summary_corpus.py" .
torch=$($PY -c 'import torch; print(torch.__version__)')

# config RELEASE NAME OPTIONS...: the training configuration.
config() {
	local release=$1 name=$2 size=hidden_size tgt="tgt_vocab: run$1-$2/vocab.tgt" steps=500
	[ "$release" = 3 ] && steps=1000
	shift 2
	[ "$release" = 2 ] && size=rnn_size
	# 2.3.0 writes one vocabulary when it is shared, and reads it as both.
	[[ $release == 2 && " $* " == *" share_vocab: true "* ]] && tgt="# tgt_vocab: the source's (share_vocab)"
	cat <<YAML
save_data: run$release-$name/data
src_vocab: run$release-$name/vocab.src
$tgt
src_words_min_frequency: 3
tgt_words_min_frequency: 3
overwrite: true
data:
  corpus_1:
    path_src: train.src
    path_tgt: train.tgt
  valid:
    path_src: valid.src
    path_tgt: valid.tgt
src_seq_length: 200
tgt_seq_length: 200
seed: 1234
model_type: text
encoder_type: brnn
decoder_type: rnn
rnn_type: LSTM
layers: 1
$size: 64
word_vec_size: 32
global_attention: mlp
bridge: true
train_steps: $steps
valid_steps: $steps
save_checkpoint_steps: $steps
save_model: run$release-$name/model
batch_size: 32
batch_type: sents
optim: adam
learning_rate: 0.003
max_grad_norm: 2
world_size: 1
gpu_ranks: []
report_every: 100
bucket_size: 4096
YAML
	printf '%s\n' "$@"
}

# 3.5.1: two checkpoints as onmt_train writes them, and the failure.
if want 351 && [ -z "${TRANSLATE_ONLY:-}" ]; then
	for v in "copy|copy_attn: true|copy_attn_type: general|share_vocab: true" "reuse|copy_attn: true|reuse_copy_attn: true|share_vocab: true"; do
		IFS='|' read -r name opts <<<"$v"
		IFS='|' read -r -a lines <<<"$opts"
		config 3 "$name" "${lines[@]}" > "351-$name.yaml"
		mkdir -p "run3-$name"
		if [ ! -f "run3-$name/model_step_1000.pt" ]; then
			onmt3 build_vocab -config "351-$name.yaml" -n_sample -1
			onmt3 train -config "351-$name.yaml"
		fi
		out="$here/onmt-sum-351-$name"
		rm -rf "$out" && mkdir -p "$out"
		cp "run3-$name/model_step_1000.pt" "$out/model.pt" # as onmt_train wrote it
		head -n 8 test.src > "$out/test.src"
		if onmt3 translate -model "$out/model.pt" -src "$out/test.src" -output "$work/351-$name.txt" 2> "$work/351-$name.log"; then
			echo "OpenNMT-py 3.5.1 translated a copy model: update this script" >&2
			exit 1
		fi
		grep -A100 '^Traceback' "$work/351-$name.log" | sed "s#$here/##; s#$ONMT_DIR/##" > "$out/onmt_translate-3.5.1-failure.txt"
		echo "OpenNMT-py 3.5.1 (3f0c5f7c24c0a26e7165e054cd8000e18b931799) onmt_build_vocab and onmt_train, pyonmttok 1.37.1, torch $torch, made by testdata/toolkits/make_onmt_summary.sh" > "$out/VERSION"
	done
fi

# 2.3.0: every variant, trained and translated.
variants=(
	"copy|copy_attn: true|copy_attn_type: general|share_vocab: true"
	"reuse|copy_attn: true|reuse_copy_attn: true|share_vocab: true"
	"coverage|copy_attn: true|reuse_copy_attn: true|coverage_attn: true|lambda_coverage: 1|share_vocab: true"
	"gate-source|copy_attn: true|reuse_copy_attn: true|context_gate: source|share_vocab: true"
	"gate-target|copy_attn: true|reuse_copy_attn: true|context_gate: target|share_vocab: true"
	"gate-both|copy_attn: true|reuse_copy_attn: true|context_gate: both|share_vocab: true"
	"shared|copy_attn: true|reuse_copy_attn: true|share_vocab: true|share_embeddings: true"
	"twovocabs|copy_attn: true|reuse_copy_attn: true"
)
for v in "${variants[@]}"; do
	IFS='|' read -r name opts <<<"$v"
	want "$name" || continue
	IFS='|' read -r -a lines <<<"$opts"
	out="$here/onmt-sum-$name"
	if [ -z "${TRANSLATE_ONLY:-}" ]; then
		config 2 "$name" "${lines[@]}" > "230-$name.yaml"
		mkdir -p "run2-$name"
		if [ ! -f "run2-$name/model_step_500.pt" ]; then # WORK may hold a finished run
			onmt2 build_vocab -config "230-$name.yaml" -n_sample -1
			onmt2 train -config "230-$name.yaml"
		fi
		rm -rf "$out" && mkdir -p "$out/expected"
		# onmt_release_model: the checkpoint without its optimizer state.
		onmt2 release_model -m "run2-$name/model_step_500.pt" -o "$out/model.pt"
		head -n 30 test.src > "$out/test.src"
		head -n 30 test.tgt > "$out/test.tgt"
		echo "OpenNMT-py 2.3.0 (9311a9af8c03eed235117c92e7e9a7ae860a6553) onmt_build_vocab, onmt_train and onmt_translate, torchtext 0.5.0, pyonmttok 1.37.1, torch $torch, made by testdata/toolkits/make_onmt_summary.sh" > "$out/VERSION"
	else
		echo "expected/{${VARIANTS// /,}}: OpenNMT-py 2.3.0 (9311a9af8c03eed235117c92e7e9a7ae860a6553) onmt_translate on this model.pt, torchtext 0.5.0, torch $torch, made by testdata/toolkits/make_onmt_summary.sh with TRANSLATE_ONLY" >> "$out/VERSION"
	fi
	: > "$out/variants.tsv"
	while IFS=$'\t' read -r vname onmt_flags attnx_flags; do
		[[ $vname == \#* || -z $vname ]] && continue
		printf '%s\t%s\t%s\n' "$vname" "$onmt_flags" "$attnx_flags" >> "$out/variants.tsv"
		[[ -z ${VARIANTS:-} || " $VARIANTS " == *" $vname "* ]] || continue
		# shellcheck disable=SC2086
		ONMT_GAPS="$out/expected/$vname.gaps.json" onmt2 translate -model "$out/model.pt" -src "$out/test.src" \
			-output "$out/expected/$vname.txt" -batch_size 1 $onmt_flags
	done < "$here/onmt_sum_variants.tsv"
done
echo "wrote $here/onmt-sum-*"
