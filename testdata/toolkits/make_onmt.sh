#!/bin/bash
# Makes testdata/toolkits/onmt-sp and onmt-bpe with OpenNMT-py 3.5.1's own
# code: its onmt_build_vocab, onmt_train (sentencepiece and bpe transforms;
# -save_format safetensors for a third checkpoint) and onmt_translate (the
# expected translations of each decoding setting in variants.tsv). attnx's
# tests (cmd/attnx TestOpenNMTTrainedModels) export those checkpoints with
# no flags and translate test.src, raw text in and out, against them.
#
# What it needs (nothing of it in CI, which reads the files it wrote;
# build_toolkit_deps.sh builds the modules):
#   ONMT_DIR     OpenNMT-py v3.5.1 (3f0c5f7c24c0a26e7165e054cd8000e18b931799),
#                whose data/src-train.txt, tgt-train.txt are the corpus.
#   PYONMTTOK_DIR, TOKENIZER_LIB
#                pyonmttok 1.37.1 (OpenNMT/Tokenizer v1.37.1, which
#                onmt_train calls to build its vocabularies): built from
#                source against Debian's libsentencepiece-dev 0.1.97 instead
#                of its bundled sentencepiece submodule (CMakeLists links
#                sentencepiece/sentencepiece_train, C++17 for that header,
#                and set_vocabulary passes string_views as 0.1.97's
#                SetVocabulary wants; set_vocabulary is not on this path).
#   SAFETENSORS_DIR
#                safetensors 0.2.8's Python package (huggingface/safetensors
#                v0.2.8, the release built on pyo3 0.17) with its Rust
#                extension built by cargo from Debian's librust-*-dev crates.
#   SUBWORD_NMT_DIR
#                subword-nmt v0.3.8 (rsennrich/subword-nmt; the committed
#                onmt-bpe was made with 92d6139, v0.3.8-7, whose learn_bpe and
#                apply_bpe write the same bytes on this corpus): the
#                bpe transform's apply_bpe and the codes' learn_bpe.
#   Debian: python3-torch 1.13, python3-sentencepiece, sentencepiece
#   (spm_train), python3-configargparse, python3-regex.
# Stand-ins: spacy, rapidfuzz, ahocorasick, fasttext and sacrebleu, which
# OpenNMT-py imports at module level for transforms and scoring these runs
# do not use, and torch 2's scaled_dot_product_attention (transformers
# only); see onmt_run.py.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-$(mktemp -d)}
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
export LD_LIBRARY_PATH=${TOKENIZER_LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$PYONMTTOK_DIR:$SAFETENSORS_DIR:$SUBWORD_NMT_DIR
PY=/usr/bin/python3
onmt() { $PY "$here/onmt_run.py" "$@"; }
cd "$work"

# The corpus: OpenNMT-py's toy English-German data, pairs of 3 to 20 words.
paste -d '\t' "$ONMT_DIR/data/src-train.txt" "$ONMT_DIR/data/tgt-train.txt" |
	awk -F'\t' '{n=split($1,a," "); m=split($2,b," "); if (n<=20 && m<=20 && n>=3) print}' > pairs.tsv
head -n 3000 pairs.tsv | cut -f1 > train.src; head -n 3000 pairs.tsv | cut -f2 > train.tgt
sed -n 3001,3100p pairs.tsv | cut -f1 > valid.src; sed -n 3001,3100p pairs.tsv | cut -f2 > valid.tgt
sed -n 3101,3148p pairs.tsv | cut -f1 > test.src

spm_train --input=train.src --model_prefix=spm_src --vocab_size=1000 --character_coverage=1.0 --model_type=unigram
spm_train --input=train.tgt --model_prefix=spm_tgt --vocab_size=1000 --character_coverage=1.0
$PY "$SUBWORD_NMT_DIR/subword_nmt/learn_bpe.py" -s 800 < train.src > bpe_src.codes
$PY "$SUBWORD_NMT_DIR/subword_nmt/learn_bpe.py" -s 800 < train.tgt > bpe_tgt.codes

for kind in sp bpe; do
	case $kind in
	sp) transform=sentencepiece src_model=spm_src.model tgt_model=spm_tgt.model ;;
	bpe) transform=bpe src_model=bpe_src.codes tgt_model=bpe_tgt.codes ;;
	esac
	cat > $kind.yaml <<YAML
save_data: run_$kind/data
src_vocab: run_$kind/vocab.src
tgt_vocab: run_$kind/vocab.tgt
overwrite: true
data:
  corpus_1:
    path_src: train.src
    path_tgt: train.tgt
    transforms: [$transform, filtertoolong]
  valid:
    path_src: valid.src
    path_tgt: valid.tgt
    transforms: [$transform, filtertoolong]
src_subword_model: $src_model
tgt_subword_model: $tgt_model
src_seq_length: 200
tgt_seq_length: 200
seed: 1234
model_type: text
encoder_type: brnn
decoder_type: rnn
rnn_type: LSTM
layers: 2
hidden_size: 64
word_vec_size: 32
global_attention: general
input_feed: 1
train_steps: 2000
valid_steps: 2000
save_checkpoint_steps: 2000
save_model: run_$kind/model
batch_size: 32
batch_type: sents
optim: adam
learning_rate: 0.003
world_size: 1
gpu_ranks: []
report_every: 100
num_workers: 0
YAML
	mkdir -p run_$kind
	if [ ! -f run_$kind/model_step_2000.pt ]; then # WORK may hold a finished run
		onmt build_vocab -config $kind.yaml -n_sample -1
		onmt train -config $kind.yaml
	fi
	out="$here/onmt-$kind"
	rm -rf "$out" && mkdir -p "$out/expected"
	if [ $kind = sp ]; then
		cp run_$kind/model_step_2000.pt "$out/model.pt" # as onmt_train wrote it, optimizer state and all
	else
		onmt release_model -m run_$kind/model_step_2000.pt -o "$out/model.pt" # its optim set to None
	fi
	cp $src_model $tgt_model test.src "$out/"
	echo "OpenNMT-py 3.5.1 (3f0c5f7c24c0a26e7165e054cd8000e18b931799), pyonmttok 1.37.1, subword-nmt v0.3.8, torch $($PY -c 'import torch; print(torch.__version__)'), made by testdata/toolkits/make_onmt.sh" > "$out/VERSION"
	# The variants: a name, onmt_translate's flags, attnx translate's.
	# name.gaps.json: each line's smallest score gap (onmt_run.py).
	while IFS=$'\t' read -r name onmt_flags attnx_flags kinds; do
		[[ $name == \#* || -z $name ]] && continue
		[[ -n $kinds && $kinds != "$kind" ]] && continue
		# shellcheck disable=SC2086
		ONMT_GAPS="$out/expected/$name.gaps.json" onmt translate -model "$out/model.pt" -src test.src \
			-output "$out/expected/$name.txt" -transforms $transform \
			-src_subword_model $src_model -tgt_subword_model $tgt_model $onmt_flags
		printf '%s\t%s\t%s\n' "$name" "$onmt_flags" "$attnx_flags" >> "$out/variants.tsv"
	done < "$here/onmt_variants.tsv"
done

# onmt_train -save_format safetensors: one more step from the SentencePiece
# model, saved as OpenNMT-py 3.5.1 saves in that format (model_step_N.pt
# with vocab, opt and optim; the weights in model_step_N.safetensors).
[ -f run_st/model_step_2001.pt ] || onmt train -config sp.yaml -train_from run_sp/model_step_2000.pt -reset_optim none \
	-train_steps 2001 -save_checkpoint_steps 2001 -valid_steps 5000 -save_format safetensors -save_model run_st/model
out="$here/onmt-st"
rm -rf "$out" && mkdir -p "$out/expected"
cp run_st/model_step_2001.pt run_st/model_step_2001.safetensors spm_src.model spm_tgt.model test.src "$out/"
# 3.5.1's loader looks for the weights as shards (model_step_N.*.safetensors,
# model.py load_safe_state_dict) where its saver wrote model_step_N.safetensors:
# onmt_translate reads the file through a shard-named link.
ln -sf model_step_2001.safetensors run_st/model_step_2001.0.safetensors
ONMT_GAPS="$out/expected/default.gaps.json" onmt translate -model run_st/model_step_2001.pt -src test.src -output "$out/expected/default.txt" \
	-transforms sentencepiece -src_subword_model spm_src.model -tgt_subword_model spm_tgt.model
ONMT_GAPS="$out/expected/greedy.gaps.json" onmt translate -model run_st/model_step_2001.pt -src test.src -output "$out/expected/greedy.txt" -beam_size 1 \
	-transforms sentencepiece -src_subword_model spm_src.model -tgt_subword_model spm_tgt.model
printf 'default\t\t\ngreedy\t-beam_size 1\t--beam 1\n' > "$out/variants.tsv"
echo "OpenNMT-py 3.5.1 (3f0c5f7c24c0a26e7165e054cd8000e18b931799), pyonmttok 1.37.1, safetensors 0.2.8, torch $($PY -c 'import torch; print(torch.__version__)'), made by testdata/toolkits/make_onmt.sh" > "$out/VERSION"
echo "wrote $here/onmt-sp, onmt-bpe and onmt-st"
