#!/bin/bash
# Makes testdata/toolkits/fairseq-spm and fairseq-moses: two LSTM models
# trained by fairseq 0.12.2's own fairseq-preprocess and fairseq-train with
# the text settings the other fixtures never used, and
# fairseq-interactive's translations of a raw test set:
#
#   fairseq-spm    --bpe sentencepiece (a SentencePiece model by Debian's
#                  spm_train, the pieces made by spm_encode as fairseq's
#                  examples do), target pieces seen fewer than 20 times
#                  left out of the dictionary (--thresholdtgt 20), so that
#                  the model writes <unk>, which fairseq's sentencepiece
#                  decoding leaves in the text as it is;
#   fairseq-moses  --tokenizer moses --bpe subword_nmt: the text tokenized
#                  by sacremoses as fairseq's MosesTokenizer does
#                  (aggressive dash splits and escaping, its defaults),
#                  then BPE; the test set is hyphenated words and
#                  characters Moses escapes.
#
# Each directory gets checkpoint_best.pt, data-bin/dict.*.txt, the
# tokenizer's file beside the checkpoint, test.raw.en, expected/default.out
# (fairseq-interactive's S-, H-, D-, P- lines at its defaults, W- left
# out), expected/default.txt (the D- lines) and default.gaps.json
# (fairseq_run.py's FAIRSEQ_GAPS).
#
# Needs (nothing of it in CI): FAIRSEQ_DIR, HYDRA_DIR, OMEGACONF_DIR as
# build_toolkit_deps.sh makes them; SUBWORD_NMT_DIR (subword-nmt v0.3.8);
# SACREMOSES_DIR (hplt-project/sacremoses 0.1.1, the module fairseq's
# --tokenizer moses imports); ONMT_DIR (OpenNMT-py v3.5.1's toy en-de
# data, the corpus of make_fairseq.sh). Debian: sentencepiece,
# python3-sentencepiece, python3-regex, python3-joblib, python3-tqdm,
# python3-click.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-$(mktemp -d)}
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 PYTHONPATH=$SUBWORD_NMT_DIR:$SACREMOSES_DIR
PY=/usr/bin/python3
fs() { $PY "$here/fairseq_run.py" "$@"; }
cd "$work"

paste -d '\t' "$ONMT_DIR/data/src-train.txt" "$ONMT_DIR/data/tgt-train.txt" |
	awk -F'\t' '{n=split($1,a," "); m=split($2,b," "); if (n<=20 && m<=20 && n>=3) print}' > pairs.tsv
head -n 3000 pairs.tsv | cut -f1 > train.raw.en; head -n 3000 pairs.tsv | cut -f2 > train.raw.de
sed -n 3001,3100p pairs.tsv | cut -f1 > valid.raw.en; sed -n 3001,3100p pairs.tsv | cut -f2 > valid.raw.de
sed -n 3101,3132p pairs.tsv | cut -f1 > test.raw.en
# Hyphens and characters Moses escapes, for the moses model's test set.
cat >> test.raw.en <<'TEST'
The well-known e-mail address is not up-to-date.
A so-called "non-profit" organisation & its co-operation.
Member States' long-term strategy: 2008-2012 <draft> [annex] | note.
It is a follow-up to the anti-fraud measures.
TEST

small="--encoder-embed-dim 32 --decoder-embed-dim 32 --encoder-hidden-size 64 --decoder-hidden-size 64 --decoder-out-embed-dim 32"
train() { # name data-bin flags...
	local name=$1 data=$2
	shift 2
	fs train "$data" --arch lstm $small "$@" --optimizer adam --lr 0.005 --max-tokens 2000 --max-update 1500 --save-dir ckpt_$name \
		--no-epoch-checkpoints --log-format simple --log-interval 500 --cpu --seed 1 --dropout 0.1
}
interactive() { # name out flags...
	local name=$1 out=$2
	shift 2
	FAIRSEQ_GAPS="$out/expected/default.gaps.json" fs interactive "$out/data-bin" --path "$out/checkpoint_best.pt" \
		--cpu --source-lang en --target-lang de --buffer-size 64 --batch-size 64 "$@" \
		< "$out/test.raw.en" | grep -v -e '^ANTLR runtime and generated code versions disagree' -e '^W-' > "$out/expected/default.out"
	grep '^D-' "$out/expected/default.out" | cut -f3 > "$out/expected/default.txt"
}
version() {
	echo "fairseq 0.12.2 (4a388e64cd646ed7d7ad8de8fae55df2b8eea91d), hydra-core 1.0.7, omegaconf 2.0.6, $1, torch $($PY -c 'import torch; print(torch.__version__)'), made by testdata/toolkits/make_fairseq_text.sh"
}

make_spm() {
cat train.raw.en train.raw.de > spm.train
spm_train --input=spm.train --model_prefix=spm --vocab_size=1000 --character_coverage=1.0 --model_type=unigram --seed_sentencepiece_size=100000 > /dev/null 2>&1
for s in train valid; do
	for l in en de; do spm_encode --model=spm.model --output_format=piece < $s.raw.$l > $s.spm.$l; done
done
rm -rf data-bin-spm
fs preprocess --source-lang en --target-lang de --trainpref train.spm --validpref valid.spm --destdir data-bin-spm --workers 1 --thresholdtgt 20
train spm data-bin-spm --bpe sentencepiece --sentencepiece-model "$work/spm.model"
out="$here/fairseq-spm"
rm -rf "$out" && mkdir -p "$out/data-bin" "$out/expected"
cp ckpt_spm/checkpoint_best.pt "$out/"
cp data-bin-spm/dict.en.txt data-bin-spm/dict.de.txt "$out/data-bin/"
cp spm.model "$out/spm.model" # the cfg names spm.model: export finds it beside the checkpoint
cp test.raw.en "$out/"
interactive spm "$out" --bpe sentencepiece --sentencepiece-model "$out/spm.model"
version "sentencepiece $(spm_train --version 2>&1 | head -1)" > "$out/VERSION"
}

make_moses() {
for s in train valid; do
	for l in en de; do
		$PY -c "
import sys
from sacremoses import MosesTokenizer
tok = MosesTokenizer('$l')
for line in sys.stdin:
    print(tok.tokenize(line.strip(), aggressive_dash_splits=True, return_str=True, escape=True))
" < $s.raw.$l > $s.tok.$l
	done
done
cat train.tok.en train.tok.de | $PY "$SUBWORD_NMT_DIR/subword_nmt/learn_bpe.py" -s 1000 > moses.codes
for s in train valid; do
	for l in en de; do $PY "$SUBWORD_NMT_DIR/subword_nmt/apply_bpe.py" -c moses.codes < $s.tok.$l > $s.bpe.$l; done
done
rm -rf data-bin-moses
fs preprocess --source-lang en --target-lang de --trainpref train.bpe --validpref valid.bpe --destdir data-bin-moses --workers 1
# The language pair given: fairseq's moses tokenizer config takes its
# languages from it (without, hydra refuses tokenizer.source_lang=null).
train moses data-bin-moses --source-lang en --target-lang de --tokenizer moses --bpe subword_nmt --bpe-codes "$work/moses.codes"
out="$here/fairseq-moses"
rm -rf "$out" && mkdir -p "$out/data-bin" "$out/expected"
cp ckpt_moses/checkpoint_best.pt "$out/"
cp data-bin-moses/dict.en.txt data-bin-moses/dict.de.txt "$out/data-bin/"
cp moses.codes "$out/moses.codes" # the cfg names moses.codes: export finds it beside the checkpoint
cp test.raw.en "$out/"
interactive moses "$out" --tokenizer moses --bpe subword_nmt --bpe-codes "$out/moses.codes"
version "sacremoses 0.1.1, subword-nmt v0.3.8" > "$out/VERSION"
}

# FAIRSEQ_TEXT_MODELS picks which (default both).
for m in ${FAIRSEQ_TEXT_MODELS:-spm moses}; do "make_$m"; done
echo "wrote $here/fairseq-{${FAIRSEQ_TEXT_MODELS:-spm moses}}"
