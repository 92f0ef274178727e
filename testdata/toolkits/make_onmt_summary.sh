#!/bin/bash
# Makes testdata/toolkits/onmt-sum-* with OpenNMT-py 3.5.1's own code:
# small summarization models of each copy-attention variant of its RNN
# summarization recipe (config/config-rnn-summarization.yml: brnn encoder,
# mlp attention, bridge, copy_attn, reuse_copy_attn, optionally
# coverage_attn and shared embeddings; context gates besides), trained by
# onmt_build_vocab and onmt_train on summary_corpus.py's synthetic corpus,
# and translated by onmt_translate with each setting of
# onmt_sum_variants.tsv. attnx's tests (cmd/attnx TestOpenNMTSummaryModels)
# export each checkpoint with no flags and translate test.src against them.
#
# Every model but twovocabs shares one vocabulary between source and
# target (share_vocab, as the recipe's share_embeddings needs): OpenNMT-py
# 3.5.1 writes a copied word as dyn_voc[id - len(src vocab)]
# (translation.py _build_target_tokens), the right word only when the
# source vocabulary is as long as the target's (2.3.0 subtracted the
# target's). twovocabs keeps two; its translations record 3.5.1's
# failure.
#
# Every reference translation runs with -batch_size 1: OpenNMT-py 3.5.1's
# translator gives a copy model's sentences the source vocabulary of
# another sentence of the batch once one has finished (collapse_copy_scores
# indexes batch["src_ex_vocab"] by the live row, not by batch_offset as
# 2.3.0 did), and its separate copy attention (copy_attn without
# reuse_copy_attn) is not masked to the sentence's length, so a padded
# sentence copies from the padding. What a sentence translates to alone is
# what attnx computes; default30.txt is 3.5.1 at its default batch size, as
# a record of the difference.
#
# ONLY="name ..." makes those variants only (two runs side by side
# use both cores). Needs what make_onmt.sh needs (ONMT_DIR, PYONMTTOK_DIR, TOKENIZER_LIB;
# not SentencePiece or subword-nmt: the corpus is whitespace-tokenized).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-$(mktemp -d)}
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
export LD_LIBRARY_PATH=${TOKENIZER_LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$PYONMTTOK_DIR
PY=/usr/bin/python3
onmt() { $PY "$here/onmt_run.py" "$@"; }
cd "$work"
$PY "$here/summary_corpus.py" .

# The variants: a name and the model options that make it.
variants=(
	"copy|copy_attn: true|copy_attn_type: general"
	"reuse|copy_attn: true|reuse_copy_attn: true"
	"coverage|copy_attn: true|reuse_copy_attn: true|coverage_attn: true|lambda_coverage: 1"
	"gate-source|copy_attn: true|reuse_copy_attn: true|context_gate: source"
	"gate-target|copy_attn: true|reuse_copy_attn: true|context_gate: target"
	"gate-both|copy_attn: true|reuse_copy_attn: true|context_gate: both"
	"shared|copy_attn: true|reuse_copy_attn: true|share_embeddings: true"
	"twovocabs|copy_attn: true|reuse_copy_attn: true|share_vocab: false"
)
for v in "${variants[@]}"; do
	IFS='|' read -r name opts <<<"$v"
	[[ -n ${ONLY:-} && " $ONLY " != *" $name "* ]] && continue # ONLY="copy reuse": those variants
	run=run_$name
	mkdir -p $run
	{
		cat <<YAML
save_data: $run/data
src_vocab: $run/vocab.src
tgt_vocab: $run/vocab.tgt
src_words_min_frequency: 3
tgt_words_min_frequency: 3
share_vocab: true
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
hidden_size: 64
word_vec_size: 32
global_attention: mlp
bridge: true
train_steps: 1000
valid_steps: 1000
save_checkpoint_steps: 1000
save_model: $run/model
batch_size: 32
batch_type: sents
optim: adam
learning_rate: 0.003
max_grad_norm: 2
world_size: 1
gpu_ranks: []
report_every: 100
num_workers: 0
bucket_size: 4096
YAML
		tr '|' '\n' <<<"${opts#|}"
		echo
	} > $name.yaml
	if [ ! -f $run/model_step_1000.pt ]; then # WORK may hold a finished run
		onmt build_vocab -config $name.yaml -n_sample -1
		onmt train -config $name.yaml
	fi
	out="$here/onmt-sum-$name"
	rm -rf "$out" && mkdir -p "$out/expected"
	onmt release_model -m $run/model_step_1000.pt -o "$out/model.pt"
	cp test.src test.tgt "$out/"
	echo "OpenNMT-py 3.5.1 (3f0c5f7c24c0a26e7165e054cd8000e18b931799), pyonmttok 1.37.1, torch $($PY -c 'import torch; print(torch.__version__)'), made by testdata/toolkits/make_onmt_summary.sh" > "$out/VERSION"
	while IFS=$'\t' read -r vname onmt_flags attnx_flags; do
		[[ $vname == \#* || -z $vname ]] && continue
		# shellcheck disable=SC2086
		if ONMT_GAPS="$out/expected/$vname.gaps.json" onmt translate -model "$out/model.pt" -src test.src \
			-output "$out/expected/$vname.txt" -batch_size 1 $onmt_flags 2> "$work/$name.$vname.log"; then
			printf '%s\t%s\t%s\n' "$vname" "$onmt_flags" "$attnx_flags" >> "$out/variants.tsv"
		else # 3.5.1 fails on this flag for RNN models: keep its traceback
			rm -f "$out/expected/$vname.txt" "$out/expected/$vname.gaps.json"
			grep -A100 '^Traceback' "$work/$name.$vname.log" > "$out/expected/$vname.3.5.1-failure.txt"
		fi
	done < "$here/onmt_sum_variants.tsv"
	onmt translate -model "$out/model.pt" -src test.src -output "$out/expected/default30.txt"
done
echo "wrote $here/onmt-sum-*"
