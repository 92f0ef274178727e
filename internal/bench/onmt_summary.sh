#!/bin/bash
# Times OpenNMT-py 2.3.0's own onmt_translate and attnx translate on the
# same summarization checkpoint of the RNN recipe's sizes
# (config-rnn-summarization.yml: brnn, H=512, word_vec_size 128, one
# layer, mlp attention, bridge, copy attention reusing it, coverage_attn,
# a shared vocabulary of 50,000), made by 2.3.0's onmt_build_vocab and
# onmt_train (one step: speed does not depend on training), on 30 sources
# of 400 tokens, with the recipe's decoding flags (beam 10, at least 35
# and at most 100 tokens, the stepwise summary coverage penalty, wu length
# penalty 0.9, trigram blocking) and with greedy decoding, at 2 threads
# (N=5: the first 5).
# Prints sentences/s of each and whether their outputs are the same.
# OpenNMT-py 3.5.1 cannot translate such a checkpoint (it cannot load a
# copy generator; testdata/toolkits/make_onmt_summary.sh): 2.3.0 is the
# toolkit's translator for it.
#
#   ONMT2_DIR=... TORCHTEXT_DIR=... PYONMTTOK_DIR=... TOKENIZER_LIB=... \
#       bash internal/bench/onmt_summary.sh [WORK]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work" && cd "$work"
export OMP_WAIT_POLICY=PASSIVE LD_LIBRARY_PATH=${TOKENIZER_LIB}
PY=/usr/bin/python3
onmt2() { ONMT_DIR=$ONMT2_DIR PYTHONPATH=$PYONMTTOK_DIR:$TORCHTEXT_DIR $PY "$here/testdata/toolkits/onmt_run.py" "$@"; }
attnx=${ATTNX:-$here/bin/attnx}

# The corpus: summary_corpus.py's sentences, 40,000 pairs for a vocabulary
# of 50,000 words; the test sources are 400-token runs of its sentences.
if [ ! -f train.src ]; then
	$PY - "$here/testdata/toolkits/summary_corpus.py" <<'PY'
import random, runpy, sys
path = sys.argv[1]
mod = runpy.run_path(path, run_name="corpus")
r = random.Random(7)
with open("train.src", "w") as s, open("train.tgt", "w") as t:
    for _ in range(40000):
        a, b = mod["pair"](r)
        s.write(a + "\n"); t.write(b + "\n")
with open("test.src", "w") as s:
    for _ in range(30):
        toks = []
        while len(toks) < 400:
            toks += mod["pair"](r)[0].split()
        s.write(" ".join(toks[:400]) + "\n")
PY
	head -n 100 train.src > valid.src && head -n 100 train.tgt > valid.tgt
fi
cat > recipe.yaml <<YAML
save_data: run/data
src_vocab: run/vocab.src
share_vocab: true
src_vocab_size: 50000
tgt_vocab_size: 50000
overwrite: true
data:
  corpus_1: {path_src: train.src, path_tgt: train.tgt}
  valid: {path_src: valid.src, path_tgt: valid.tgt}
seed: 1234
encoder_type: brnn
rnn_type: LSTM
layers: 1
rnn_size: 512
word_vec_size: 128
global_attention: mlp
bridge: true
copy_attn: true
reuse_copy_attn: true
coverage_attn: true
share_embeddings: true
train_steps: 1
save_checkpoint_steps: 1
valid_steps: 100
save_model: run/model
batch_size: 16
world_size: 1
gpu_ranks: []
YAML
mkdir -p run
if [ ! -f run/model_step_1.pt ]; then
	onmt2 build_vocab -config recipe.yaml -n_sample -1
	onmt2 train -config recipe.yaml
fi
"$attnx" export run/model_step_1.pt -o model-fp32 --force > /dev/null
"$attnx" export run/model_step_1.pt -o model-int8 --weights int8 --force > /dev/null

recipe_onmt="-beam_size 10 -min_length 35 -max_length 100 -stepwise_penalty -coverage_penalty summary -beta 5 -length_penalty wu -alpha 0.9 -block_ngram_repeat 3 -ignore_when_blocking . </t> <t>"
recipe_attnx="--beam 10 --min-len 35 --max-len 100 --stepwise-penalty --coverage-penalty summary --beta 5 --length-penalty-form wu --length-penalty 0.9 --block-ngram-repeat 3 --ignore-when-blocking . --ignore-when-blocking </t> --ignore-when-blocking <t>"
# N sentences of the 30 are timed (OpenNMT-py takes about a minute for
# each with the recipe's flags on 2 cores).
n=${N:-30}
head -n "$n" test.src > test.n.src
now() { date +%s.%N; }
rate() { $PY -c "import sys; print('%.3f' % ($n / (float(sys.argv[2]) - float(sys.argv[1]))))" "$1" "$2"; }
for setting in recipe greedy; do
	if [ $setting = recipe ]; then of=$recipe_onmt af=$recipe_attnx; else of="-beam_size 1 -max_length 100" af="--beam 1 --max-len 100"; fi
	t0=$(now)
	# shellcheck disable=SC2086
	OMP_NUM_THREADS=2 onmt2 translate -model run/model_step_1.pt -src test.n.src -output onmt.$setting.txt -batch_size 1 $of 2> onmt.$setting.log
	t1=$(now)
	echo "$setting: OpenNMT-py 2.3.0 onmt_translate (2 threads): $(rate "$t0" "$t1") sentences/s"
	for w in fp32 int8; do
		t0=$(now)
		# shellcheck disable=SC2086
		"$attnx" translate --model model-$w --src test.n.src --output attnx.$setting.$w.txt --threads 2 $af
		t1=$(now)
		same=$(paste -d '\n' onmt.$setting.txt attnx.$setting.$w.txt | awk 'NR%2{a=$0; next} {n++; if (a==$0) s++} END {print s+0 "/" n}')
		echo "$setting: attnx translate $w (2 threads): $(rate "$t0" "$t1") sentences/s, $same lines as onmt_translate's"
	done
done
