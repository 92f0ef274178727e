#!/bin/bash
# Makes testdata/toolkits/onmt-avg, onmt-avg-shared and fairseq-avg, the
# fixtures of attnx export --average (issue 55), with the toolkits' own
# code: small models trained by OpenNMT-py 3.5.1's onmt_train and fairseq
# 0.12.2's fairseq-train, each saving several checkpoints of one run
# (-save_checkpoint_steps; --save-interval-updates with
# --keep-interval-updates), those checkpoints as the trainers wrote them
# (optimizer state and all), the averaged file each toolkit's own script
# writes from them (OpenNMT-py's onmt_average_models, its
# tools/average_models.py; fairseq's scripts/average_checkpoints.py
# --num-update-checkpoints 3, which takes the newest first: the order is
# kept in averaged.inputs), and the translations of the test set that the
# toolkit's translate command gives with the averaged file (onmt_translate,
# fairseq-interactive; beam 5 and greedy), in expected/ as make_onmt.sh
# and make_fairseq.sh lay them out, with each line's smallest score gap.
#
# onmt-avg-shared shares the source and target embeddings
# (share_vocab, share_embeddings): one tensor under two names in each
# checkpoint, which average_models.py's in-place running mean updates
# twice per file.
#
# Needs what make_onmt.sh (ONMT_DIR, PYONMTTOK_DIR, TOKENIZER_LIB) and
# make_fairseq.sh (FAIRSEQ_DIR with scripts/average_checkpoints.py,
# HYDRA_DIR, OMEGACONF_DIR, SUBWORD_NMT_DIR) need; build_toolkit_deps.sh
# makes them. Nothing of it runs in CI, which reads the files written.
# PARTS="onmt" or "fairseq" makes one toolkit's fixtures only, and
# ONMT_MODELS="avg" or "avg-shared" one of OpenNMT-py's (runs side by side,
# with one WORK, share the cores; the first to start trains the
# SentencePiece models).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-$(mktemp -d)}
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
export LD_LIBRARY_PATH=${TOKENIZER_LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PY=/usr/bin/python3
onmt() { PYTHONPATH=$PYONMTTOK_DIR nice $PY "$here/onmt_run.py" "$@"; }
fs() { PYTHONPATH=$SUBWORD_NMT_DIR nice $PY "$here/fairseq_run.py" "$@"; }
torch=$($PY -c 'import torch; print(torch.__version__)')
mkdir -p "$work" && cd "$work"

# The corpus: OpenNMT-py's toy English-German data, cut as make_onmt.sh
# cuts it.
paste -d '\t' "$ONMT_DIR/data/src-train.txt" "$ONMT_DIR/data/tgt-train.txt" |
	awk -F'\t' '{n=split($1,a," "); m=split($2,b," "); if (n<=20 && m<=20 && n>=3) print}' > pairs.tsv
head -n 3000 pairs.tsv | cut -f1 > train.src; head -n 3000 pairs.tsv | cut -f2 > train.tgt
sed -n 3001,3100p pairs.tsv | cut -f1 > valid.src; sed -n 3001,3100p pairs.tsv | cut -f2 > valid.tgt
sed -n 3101,3148p pairs.tsv | cut -f1 > test.src

parts=${PARTS:-onmt fairseq}
# --- OpenNMT-py 3.5.1 ---
if [[ " $parts " == *" onmt "* ]]; then
spm_train --input=train.src --model_prefix=spm_src --vocab_size=300 --character_coverage=1.0 --model_type=unigram > /dev/null 2>&1
spm_train --input=train.tgt --model_prefix=spm_tgt --vocab_size=300 --character_coverage=1.0 > /dev/null 2>&1
for name in ${ONMT_MODELS:-avg avg-shared}; do
	# onmt-avg averages four checkpoints: from four on, the running mean
	# differs in the last bits from a sum over N (with three, (a+b)/2*2 is
	# a+b exactly); onmt-avg-shared three, its tied embeddings updated twice.
	shared="" steps=800 inputs=(model_step_200.pt model_step_400.pt model_step_600.pt model_step_800.pt)
	if [ $name = avg-shared ]; then
		shared=$'share_vocab: true\nshare_embeddings: true' steps=600 inputs=(model_step_200.pt model_step_400.pt model_step_600.pt)
	fi
	cat > $name.yaml <<YAML
save_data: run_$name/data
src_vocab: run_$name/vocab.src
tgt_vocab: run_$name/vocab.tgt
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
src_subword_model: spm_src.model
tgt_subword_model: spm_tgt.model
src_seq_length: 200
tgt_seq_length: 200
seed: 1234
model_type: text
encoder_type: brnn
decoder_type: rnn
rnn_type: LSTM
layers: 1
hidden_size: 16
word_vec_size: 8
global_attention: general
input_feed: 1
train_steps: $steps
valid_steps: 10000
save_checkpoint_steps: 200
keep_checkpoint: -1
save_model: run_$name/model
batch_size: 32
batch_type: sents
optim: adam
learning_rate: 0.003
world_size: 1
gpu_ranks: []
report_every: 100
num_workers: 0
bucket_size: 4096
$shared
YAML
	mkdir -p run_$name
	if [ ! -f run_$name/model_step_$steps.pt ]; then
		onmt build_vocab -config $name.yaml -n_sample -1
		onmt train -config $name.yaml
	fi
	out="$here/onmt-$name"
	rm -rf "$out" && mkdir -p "$out/expected"
	for f in "${inputs[@]}"; do cp run_$name/$f "$out/"; done
	(cd "$out" && onmt average_models -models "${inputs[@]}" -output averaged.pt)
	printf '%s\n' "${inputs[@]}" > "$out/averaged.inputs"
	cp spm_src.model spm_tgt.model test.src "$out/"
	printf 'default\t\t\ngreedy\t-beam_size 1\t--beam 1\nnbest3\t-n_best 3\t--n-best 3\nbeam2\t-beam_size 2\t--beam 2\n' > "$out/variants.tsv"
	while IFS=$'\t' read -r vname vflags _; do
		# shellcheck disable=SC2086
		ONMT_GAPS="$out/expected/$vname.gaps.json" onmt translate -model "$out/averaged.pt" -src test.src \
			-output "$out/expected/$vname.txt" -transforms sentencepiece \
			-src_subword_model spm_src.model -tgt_subword_model spm_tgt.model $vflags
	done < "$out/variants.tsv"
	echo "OpenNMT-py 3.5.1 (3f0c5f7c24c0a26e7165e054cd8000e18b931799), pyonmttok 1.37.1, torch $torch, made by testdata/toolkits/make_average.sh" > "$out/VERSION"
done
fi

# --- fairseq 0.12.2 ---
if [[ " $parts " == *" fairseq "* ]]; then
cat train.src train.tgt | $PY "$SUBWORD_NMT_DIR/subword_nmt/learn_bpe.py" -s 300 > bpe.codes
for s in train valid; do
	cp $s.src $s.raw.en && cp $s.tgt $s.raw.de
	for l in en de; do $PY "$SUBWORD_NMT_DIR/subword_nmt/apply_bpe.py" -c bpe.codes < $s.raw.$l > $s.$l; done
done
cp test.src test.raw.en
rm -rf data-bin
fs preprocess --source-lang en --target-lang de --trainpref train --validpref valid --destdir data-bin --workers 1
if ! ls ckpt/checkpoint_*_600.pt > /dev/null 2>&1; then
	fs train data-bin --arch lstm --encoder-embed-dim 8 --decoder-embed-dim 8 --encoder-hidden-size 16 \
		--decoder-hidden-size 16 --decoder-out-embed-dim 8 --optimizer adam --lr 0.01 --max-tokens 2000 --max-update 600 \
		--save-interval-updates 200 --keep-interval-updates 3 --no-epoch-checkpoints --no-last-checkpoints \
		--save-dir ckpt --log-format simple --log-interval 100 --cpu --seed 1 --dropout 0.1
fi
out="$here/fairseq-avg"
rm -rf "$out" && mkdir -p "$out/data-bin" "$out/expected"
cp ckpt/checkpoint_*_[0-9]*00.pt "$out/"
# The script, run as fairseq's README runs it, from the checkpoints'
# directory: it prints the files it takes, newest first.
(cd "$out" && FAIRSEQ_DIR=$FAIRSEQ_DIR $PY -c '
import runpy, sys
sys.path.insert(0, sys.argv[1])
import fairseq_run  # makes fairseq importable
sys.argv = [sys.argv[2]] + sys.argv[3:]
runpy.run_path(sys.argv[0], run_name="__main__")
' "$here" "$FAIRSEQ_DIR/scripts/average_checkpoints.py" --inputs . --num-update-checkpoints 3 --output averaged.pt) | tee average.log
grep '^averaging checkpoints:' average.log | tr -d "[],'" | tr ' ' '\n' | sed -n 's|^\./||p' > "$out/averaged.inputs"
cp data-bin/dict.en.txt data-bin/dict.de.txt "$out/data-bin/"
cp bpe.codes "$out/bpecodes"
cp test.raw.en "$out/"
printf 'default\t\t\ngreedy\t--beam 1\t--beam 1\nnbest3\t--nbest 3\t--n-best 3\nbeam2\t--beam 2\t--beam 2\n' > "$out/variants.tsv"
while IFS=$'\t' read -r vname vflags _; do
	# shellcheck disable=SC2086
	FAIRSEQ_GAPS="$out/expected/$vname.gaps.json" fs interactive "$out/data-bin" --path "$out/averaged.pt" \
		--bpe subword_nmt --bpe-codes "$out/bpecodes" --cpu --source-lang en --target-lang de --buffer-size 64 --batch-size 64 $vflags \
		< "$out/test.raw.en" | grep -v -e '^ANTLR runtime and generated code versions disagree' -e '^W-' > "$out/expected/$vname.out"
	grep '^D-' "$out/expected/$vname.out" | cut -f3 > "$out/expected/$vname.txt"
done < "$out/variants.tsv"
echo "fairseq 0.12.2 (4a388e64cd646ed7d7ad8de8fae55df2b8eea91d), hydra-core 1.0.7, omegaconf 2.0.6, subword-nmt v0.3.8, torch $torch, made by testdata/toolkits/make_average.sh" > "$out/VERSION"
fi
echo "made the fixtures of $parts in $here"
