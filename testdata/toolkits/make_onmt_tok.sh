#!/bin/bash
# Makes testdata/toolkits/onmt-tok-bpe and onmt-tok-sp with OpenNMT-py
# 3.5.1's and pyonmttok 1.37.1's own code: two models whose text goes
# through the onmt_tokenize transform (the OpenNMT Tokenizer), with its
# subword models learned by pyonmttok's own learners on text tokenized by
# the same options:
#
#   onmt-tok-bpe  mode aggressive, joiner_annotate, preserve_placeholders,
#                 segment_numbers, segment_alphabet_change; BPE
#                 (pyonmttok.BPELearner, 800 symbols)
#   onmt-tok-sp   mode conservative, case_markup, spacer_annotate,
#                 preserve_placeholders; SentencePiece
#                 (pyonmttok.SentencePieceLearner, unigram, 1000 pieces)
#
# trained by onmt_build_vocab and onmt_train, and translated by
# onmt_translate (beam 5, its default, and greedy) from raw test text,
# detokenized by the transform. attnx's tests (cmd/attnx
# TestOpenNMTTokenizerModels) export each checkpoint with no flags and
# translate test.src, raw text in and out, against them.
#
# Needs ONMT_DIR (OpenNMT-py v3.5.1), ONMT_DATA (a directory with its
# data/src-train.txt and tgt-train.txt; default $ONMT_DIR/data),
# PYONMTTOK_DIR and TOKENIZER_LIB as make_onmt.sh. KINDS="bpe" or "sp" makes
# one of the two (two runs side by side, each in its own WORK, use both
# cores).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-$(mktemp -d)}
data=${ONMT_DATA:-$ONMT_DIR/data}
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
export LD_LIBRARY_PATH=${TOKENIZER_LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$PYONMTTOK_DIR
PY=/usr/bin/python3
onmt() { $PY "$here/onmt_run.py" "$@"; }
cd "$work"

# The corpus: OpenNMT-py's toy English-German data (pairs of 3 to 20
# words), and test lines from it followed by lines written to go through
# the tokenizer's rules: capitals, numbers, placeholders, punctuation.
paste -d '\t' "$data/src-train.txt" "$data/tgt-train.txt" |
	awk -F'\t' '{n=split($1,a," "); m=split($2,b," "); if (n<=20 && m<=20 && n>=3) print}' > pairs.tsv
head -n 3000 pairs.tsv | cut -f1 > train.src; head -n 3000 pairs.tsv | cut -f2 > train.tgt
sed -n 3001,3100p pairs.tsv | cut -f1 > valid.src; sed -n 3001,3100p pairs.tsv | cut -f2 > valid.tgt
{
	sed -n 3101,3130p pairs.tsv | cut -f1
	cat <<'TXT'
The PRESIDENT said that 2019 was a good year, didn't he?
Mr. Smith paid $1,250.50 for 3 books in New-York.
Please send ｟ph_email｠ the REPORT before 10:30 tomorrow!
"It is important," she said; "we must act now."
The European Union (EU) has 27 member states.
We need 100 % of the votes -- or more.
THE COMMISSION WELCOMES THE PROPOSAL.
Visit www.example.com/page?id=42 for details.
TXT
} > test.src

for kind in ${KINDS:-bpe sp}; do
	case $kind in
	bpe) kwargs="{'mode': 'aggressive', 'joiner_annotate': True, 'preserve_placeholders': True, 'segment_numbers': True, 'segment_alphabet_change': True}"
		subword=bpe ;;
	sp) kwargs="{'mode': 'conservative', 'case_markup': True, 'spacer_annotate': True, 'preserve_placeholders': True}"
		subword=sentencepiece ;;
	esac
	# The subword models, learned by pyonmttok on text tokenized by the
	# same options (as the Tokenizer's documentation does it).
	KWARGS=$kwargs KIND=$kind $PY - <<'PY'
import ast, os, pyonmttok
kwargs = ast.literal_eval(os.environ["KWARGS"])
for side in ("src", "tgt"):
    tok = pyonmttok.Tokenizer(**kwargs)
    if os.environ["KIND"] == "bpe":
        learner = pyonmttok.BPELearner(tokenizer=tok, symbols=800)
        out = "tok_%s.bpe" % side
    else:
        learner = pyonmttok.SentencePieceLearner(tokenizer=tok, vocab_size=1000, character_coverage=1.0, model_type="unigram")
        out = "tok_%s.model" % side
    learner.ingest_file("train." + side)
    learner.learn(out)
PY
	case $kind in
	bpe) src_model=tok_src.bpe tgt_model=tok_tgt.bpe ;;
	sp) src_model=tok_src.model tgt_model=tok_tgt.model ;;
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
    transforms: [onmt_tokenize, filtertoolong]
  valid:
    path_src: valid.src
    path_tgt: valid.tgt
    transforms: [onmt_tokenize, filtertoolong]
src_subword_type: $subword
tgt_subword_type: $subword
src_subword_model: $src_model
tgt_subword_model: $tgt_model
src_onmttok_kwargs: "$kwargs"
tgt_onmttok_kwargs: "$kwargs"
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
	out="$here/onmt-tok-$kind"
	rm -rf "$out" && mkdir -p "$out/expected"
	onmt release_model -m run_$kind/model_step_2000.pt -o "$out/model.pt"
	cp $src_model $tgt_model test.src "$out/"
	echo "OpenNMT-py 3.5.1 (3f0c5f7c24c0a26e7165e054cd8000e18b931799), pyonmttok 1.37.1, torch $($PY -c 'import torch; print(torch.__version__)'), made by testdata/toolkits/make_onmt_tok.sh" > "$out/VERSION"
	printf 'default\t\t\ngreedy\t-beam_size 1\t--beam 1\n' > "$out/variants.tsv"
	while IFS=$'\t' read -r name onmt_flags _; do
		# shellcheck disable=SC2086
		ONMT_GAPS="$out/expected/$name.gaps.json" onmt translate -model "$out/model.pt" -src test.src \
			-output "$out/expected/$name.txt" -transforms onmt_tokenize \
			-src_subword_type $subword -tgt_subword_type $subword \
			-src_subword_model $src_model -tgt_subword_model $tgt_model \
			-src_onmttok_kwargs "$kwargs" -tgt_onmttok_kwargs "$kwargs" $onmt_flags
	done < "$out/variants.tsv"
done
echo "wrote $here/onmt-tok-bpe and onmt-tok-sp"
