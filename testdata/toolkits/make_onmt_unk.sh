#!/bin/bash
# Makes testdata/toolkits/onmt-sum-unk and onmt-351-unk with OpenNMT-py's
# own code, for -replace_unk.
#
#   - onmt-sum-unk: OpenNMT-py 2.3.0's onmt_build_vocab, onmt_train and
#     onmt_translate: a copy-attention summarizer (the recipe's reused copy
#     attention) on summary_corpus.py's corpus whose target vocabulary
#     keeps 8 words (-tgt_vocab_size): the summaries' words that are
#     neither among them nor in the source (signs, buys, seek, lead, ...)
#     can only come out as <unk>. Its source vocabulary keeps 40, leaving
#     out names, numbers and most other words. Translated with each
#     setting below, with and without -replace_unk: 2.3.0 replaces an
#     <unk> with the example's raw source word at the copy attention's
#     argmax (translation.py, src_raw), a word outside the source
#     vocabulary included. attnx's test (cmd/attnx TestOpenNMTReplaceUnk)
#     exports model.pt with no flags and translates test.src with the
#     settings of variants.tsv.
#   - onmt-351-unk: OpenNMT-py 3.5.1 cannot translate a copy model
#     (make_onmt_summary.sh says why), and its -replace_unk stops with an
#     IndexError on any RNN model, in beam search and greedy decoding
#     alike (its searches index the decoder's time-first attention by
#     batch row): onmt_translate-3.5.1-failure.txt keeps both tracebacks,
#     on make_onmt.sh's onmt-bpe. 3.x's rule (translation.py: the source
#     vocabulary's token at the argmax, <unk> for a word outside it) has
#     no run of 3.5.1 to compare with.
#
# Needs ONMT_DIR (OpenNMT-py v3.5.1), ONMT2_DIR (OpenNMT-py tag 2.3.0) and
# TORCHTEXT_DIR (pytorch/text 0.5.0's torchtext package) as
# make_onmt_summary.sh, with Debian's python3-tqdm, python3-sentencepiece
# and python3-configargparse, and for 3.5.1 PYONMTTOK_DIR, TOKENIZER_LIB
# and SUBWORD_NMT_DIR as make_onmt.sh (build_toolkit_deps.sh prints them;
# 2.3.0 runs with onmt_run.py's stand-in for pyonmttok). ONLY=2 or ONLY=3
# makes one release's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-$(mktemp -d)}
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
PY=/usr/bin/python3
export LD_LIBRARY_PATH=${TOKENIZER_LIB:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
onmt3() { ONMT_DIR=$ONMT_DIR PYTHONPATH=$PYONMTTOK_DIR:$SUBWORD_NMT_DIR $PY "$here/onmt_run.py" "$@"; }
onmt2() { ONMT_DIR=$ONMT2_DIR PYTHONPATH=${PYONMTTOK_DIR:-}:$TORCHTEXT_DIR $PY "$here/onmt_run.py" "$@"; }
cd "$work"
[ -f train.src ] || $PY "$here/summary_corpus.py" .
torch=$($PY -c 'import torch; print(torch.__version__)')

# config NAME OPTIONS...: 2.3.0's training configuration.
config() {
	local name=$1
	shift
	cat <<YAML
save_data: run2-$name/data
src_vocab: run2-$name/vocab.src
tgt_vocab: run2-$name/vocab.tgt
src_vocab_size: 40
tgt_vocab_size: 8
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
rnn_size: 64
word_vec_size: 32
global_attention: mlp
bridge: true
train_steps: 400
valid_steps: 400
save_checkpoint_steps: 400
save_model: run2-$name/model
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

# variants OUT TRANSLATE: translates OUT/test.src with every setting
# below, one sentence at a time (-batch_size 1: 2.3.0's copy attention
# reads a batch's padding, make_onmt_summary.sh), each with and without
# -replace_unk; OUT/variants.tsv lists them with attnx's flags.
variants() {
	local out=$1 run=$2 name flags aflags
	: > "$out/variants.tsv"
	while IFS='|' read -r name flags aflags; do
		for r in "" "-replace_unk|--replace-unk|replaceunk"; do
			IFS='|' read -r rf ra rn <<<"$r"
			local v=$name${rn:+-$rn}
			printf '%s\t%s\t%s\n' "$v" "$flags${rf:+ $rf}" "$aflags${ra:+ $ra}" | sed 's/\t /\t/g' >> "$out/variants.tsv"
			# shellcheck disable=SC2086
			ONMT_GAPS="$out/expected/$v.gaps.json" $run translate -model "$out/model.pt" -src "$out/test.src" \
				-output "$out/expected/$v.txt" -batch_size 1 $flags $rf
		done
	done <<'EOF'
default||
greedy|-beam_size 1|--beam 1
nbest3|-n_best 3|--n-best 3
EOF
}

if [ "${ONLY:-2}" = 2 ]; then
	config unk "copy_attn: true" "reuse_copy_attn: true" > 230-unk.yaml
	mkdir -p run2-unk
	if [ ! -f run2-unk/model_step_400.pt ]; then
		onmt2 build_vocab -config 230-unk.yaml -n_sample -1
		onmt2 train -config 230-unk.yaml
	fi
	out="$here/onmt-sum-unk"
	rm -rf "$out" && mkdir -p "$out/expected"
	onmt2 release_model -m run2-unk/model_step_400.pt -o "$out/model.pt"
	head -n 30 test.src > "$out/test.src"
	variants "$out" onmt2
	echo "OpenNMT-py 2.3.0 (9311a9af8c03eed235117c92e7e9a7ae860a6553) onmt_build_vocab, onmt_train and onmt_translate, torchtext 0.5.0 (0169cde2f1d446ae886ef0be07e9a673585ed256), torch $torch, made by testdata/toolkits/make_onmt_unk.sh" > "$out/VERSION"
fi

# 3.5.1: -replace_unk on an RNN model, its own (onmt-bpe, make_onmt.sh),
# as beam search and greedy decoding run it: both stop with an IndexError,
# kept as onmt-351-unk/onmt_translate-3.5.1-failure.txt.
if [ "${ONLY:-3}" = 3 ]; then
	out="$here/onmt-351-unk"
	rm -rf "$out" && mkdir -p "$out"
	head -n 3 "$here/onmt-bpe/test.src" > "$out/test.src"
	for flags in "" "-beam_size 1"; do
		# shellcheck disable=SC2086
		if onmt3 translate -model "$here/onmt-bpe/model.pt" -src "$out/test.src" -output "$work/351-unk.txt" \
			-transforms bpe -src_subword_model "$here/onmt-bpe/bpe_src.codes" -tgt_subword_model "$here/onmt-bpe/bpe_tgt.codes" \
			-replace_unk $flags 2> "$work/351-unk.log"; then
			echo "OpenNMT-py 3.5.1 ran -replace_unk $flags on an RNN model: update this script" >&2
			exit 1
		fi
		echo "onmt_translate -model onmt-bpe/model.pt -replace_unk${flags:+ $flags}:" >> "$out/onmt_translate-3.5.1-failure.txt"
		grep -A100 '^Traceback' "$work/351-unk.log" | sed "s#$here/##; s#$ONMT_DIR/##" >> "$out/onmt_translate-3.5.1-failure.txt"
	done
	echo "OpenNMT-py 3.5.1 (3f0c5f7c24c0a26e7165e054cd8000e18b931799) onmt_translate on onmt-bpe/model.pt, pyonmttok 1.37.1, subword-nmt v0.3.8, torch $torch, made by testdata/toolkits/make_onmt_unk.sh" > "$out/VERSION"
fi
echo "wrote $here/onmt-sum-unk $here/onmt-351-unk"
