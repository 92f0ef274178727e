#!/bin/bash
# Makes testdata/toolkits/fairseq-*: LSTM models trained by fairseq 0.12.2's
# own fairseq-preprocess and fairseq-train (fairseq/models/lstm.py: lstm,
# lstm_wiseman_iwslt_de_en, lstm_luong_wmt_en_de; bidirectional or not,
# shared embeddings, 2 layers, attention off), with the data-bin
# dictionaries and the subword-nmt BPE codes, and fairseq-interactive's
# translations of the raw test set with each setting of
# fairseq_variants.tsv (its defaults, --beam 5 --lenpen 1, greedy as
# --beam 1, and the other options), as S-, H-, D- and P- lines in NAME.out
# (the W- lines, timings, left out),
# the D- lines in NAME.txt and each line's smallest score gap in
# NAME.gaps.json (fairseq_run.py's FAIRSEQ_GAPS). The BPE codes are kept as
# bpecodes, the name fairseq's hub looks for beside a checkpoint.
#
# FAIRSEQ_TRANSLATE_ONLY=1 skips preprocessing and training and translates
# with the committed checkpoints and dictionaries (FAIRSEQ_MODELS: which).
#
# Needs (nothing of it in CI): FAIRSEQ_DIR, fairseq v0.12.2
# (4a388e64cd646ed7d7ad8de8fae55df2b8eea91d) with its Cython extensions
# built in place; HYDRA_DIR, hydra-core v1.0.7 with its grammar generated;
# OMEGACONF_DIR, omegaconf v2.0.6; SUBWORD_NMT_DIR, subword-nmt v0.3.8
# (build_toolkit_deps.sh makes all four); ONMT_DIR for the corpus
# (OpenNMT-py's toy en-de data, cut as make_onmt.sh cuts it). Debian:
# python3-torch 1.13, python3-numpy, python3-bitarray, python3-regex,
# python3-antlr4. fairseq_run.py says what it changes to run them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-$(mktemp -d)}
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 PYTHONPATH=$SUBWORD_NMT_DIR
PY=/usr/bin/python3
fs() { $PY "$here/fairseq_run.py" "$@"; }
cd "$work"

translate() { # name: fairseq-interactive with each variant, into $here/fairseq-$name/expected
	local out="$here/fairseq-$1"
	rm -rf "$out/expected" && mkdir -p "$out/expected"
	while IFS=$'\t' read -r vname vflags _; do
		[[ -z $vname || $vname == \#* ]] && continue
		# shellcheck disable=SC2086
		FAIRSEQ_GAPS="$out/expected/$vname.gaps.json" fs interactive "$out/data-bin" --path "$out/checkpoint_best.pt" \
			--bpe subword_nmt --bpe-codes "$out/bpecodes" --cpu --source-lang en --target-lang de --buffer-size 64 --batch-size 64 $vflags \
			< "$out/test.raw.en" | grep -v -e '^ANTLR runtime and generated code versions disagree' -e '^W-' > "$out/expected/$vname.out"
		grep '^D-' "$out/expected/$vname.out" | cut -f3 > "$out/expected/$vname.txt"
	done < "$here/fairseq_variants.tsv"
}
if [[ ${FAIRSEQ_TRANSLATE_ONLY:-} == 1 ]]; then
	for name in ${FAIRSEQ_MODELS:-lstm bi2 wiseman luong shared noatt long}; do translate "$name"; done
	echo "translated with $here/fairseq-*"
	exit 0
fi

paste -d '\t' "$ONMT_DIR/data/src-train.txt" "$ONMT_DIR/data/tgt-train.txt" |
	awk -F'\t' '{n=split($1,a," "); m=split($2,b," "); if (n<=20 && m<=20 && n>=3) print}' > pairs.tsv
head -n 3000 pairs.tsv | cut -f1 > train.raw.en; head -n 3000 pairs.tsv | cut -f2 > train.raw.de
sed -n 3001,3100p pairs.tsv | cut -f1 > valid.raw.en; sed -n 3001,3100p pairs.tsv | cut -f2 > valid.raw.de
sed -n 3101,3148p pairs.tsv | cut -f1 > test.raw.en
cat train.raw.en train.raw.de | $PY "$SUBWORD_NMT_DIR/subword_nmt/learn_bpe.py" -s 1000 > bpe.codes
for s in train valid; do
	for l in en de; do $PY "$SUBWORD_NMT_DIR/subword_nmt/apply_bpe.py" -c bpe.codes < $s.raw.$l > $s.$l; done
done
rm -rf data-bin data-bin-joined
fs preprocess --source-lang en --target-lang de --trainpref train --validpref valid --destdir data-bin --workers 1
fs preprocess --source-lang en --target-lang de --trainpref train --validpref valid --destdir data-bin-joined --joined-dictionary --workers 1

small="--encoder-embed-dim 16 --decoder-embed-dim 16 --encoder-hidden-size 32 --decoder-hidden-size 32 --decoder-out-embed-dim 16"
# name, data, fairseq-train's architecture flags, updates (default 400)
while IFS='|' read -r name data flags updates; do
	[[ -z $name || $name == \#* ]] && continue
	# shellcheck disable=SC2086
	fs train $data $flags --optimizer adam --lr 0.005 --max-tokens 2000 --max-update "${updates:-400}" --save-dir ckpt_$name \
		--no-epoch-checkpoints --log-format simple --log-interval 100 --cpu --seed 1 --dropout 0.1
	out="$here/fairseq-$name"
	rm -rf "$out" && mkdir -p "$out/data-bin" "$out/expected"
	cp ckpt_$name/checkpoint_best.pt "$out/"
	cp $data/dict.en.txt $data/dict.de.txt "$out/data-bin/"
	cp test.raw.en "$out/"
	cp bpe.codes "$out/bpecodes"
	translate "$name"
	printf '%s\n' "$flags" > "$out/train_flags.txt"
	echo "fairseq 0.12.2 (4a388e64cd646ed7d7ad8de8fae55df2b8eea91d), hydra-core 1.0.7, omegaconf 2.0.6, subword-nmt v0.3.8, torch $($PY -c 'import torch; print(torch.__version__)'), made by testdata/toolkits/make_fairseq.sh" > "$out/VERSION"
done <<CONFIGS
lstm|data-bin|--arch lstm $small
bi2|data-bin|--arch lstm $small --encoder-bidirectional --encoder-layers 2 --decoder-layers 2
wiseman|data-bin|--arch lstm_wiseman_iwslt_de_en $small
luong|data-bin|--arch lstm_luong_wmt_en_de $small --encoder-layers 2 --decoder-layers 2
shared|data-bin-joined|--arch lstm $small --decoder-embed-dim 16 --decoder-out-embed-dim 16 --share-all-embeddings
noatt|data-bin|--arch lstm $small --decoder-attention 0
long|data-bin|--arch lstm --encoder-bidirectional --encoder-embed-dim 64 --decoder-embed-dim 64 --encoder-hidden-size 64 --decoder-hidden-size 64 --decoder-out-embed-dim 64|4000
CONFIGS
# Models attnx refuses, for the messages (TestFairseqRefusals): a
# Transformer and an LSTM with the adaptive softmax, 20 updates each; their
# dictionaries are fairseq-lstm's.
rm -rf "$here/fairseq-refused" && mkdir -p "$here/fairseq-refused"
while IFS='|' read -r name flags; do
	# shellcheck disable=SC2086
	fs train data-bin $flags --optimizer adam --lr 0.005 --max-tokens 2000 --max-update 20 --save-dir ckpt_$name \
		--no-epoch-checkpoints --log-format simple --cpu --seed 1
	mkdir -p "$here/fairseq-refused/$name" && cp ckpt_$name/checkpoint_best.pt "$here/fairseq-refused/$name/"
done <<REFUSED
transformer|--arch transformer --encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 16 --decoder-embed-dim 16 --encoder-ffn-embed-dim 32 --decoder-ffn-embed-dim 32 --encoder-attention-heads 2 --decoder-attention-heads 2
adaptive|--arch lstm $small --criterion adaptive_loss --adaptive-softmax-cutoff 200,500 --ddp-backend legacy_ddp
REFUSED
echo "wrote $here/fairseq-*"
