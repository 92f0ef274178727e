#!/bin/bash
# Makes testdata/toolkits/joey-sp and joey-bpe with JoeyNMT 2.3's own code:
# `joeynmt train` (a 2-layer bidirectional LSTM with Luong attention and a
# bridge on SentencePiece pieces; a GRU with Bahdanau attention, the last
# encoder state as the initial one, on subword-nmt BPE) and `joeynmt
# translate` with each testing section of joey_variants.tsv on the raw test
# set. The model directories are copied as JoeyNMT leaves them (the step
# checkpoint, best.ckpt and latest.ckpt as links to it, config.yaml, the
# vocabularies and tokenizer files), and each sentence's smallest score
# gap (joey_run.py's JOEY_GAPS, sentence by sentence, which
# may end a sentence sooner than its batch did: JoeyNMT's limit is per
# batch). cmd/attnx TestJoeyTrainedModels
# exports best.ckpt with no flags and translates with the matching flags.
#
# Needs (nothing of it in CI): JOEY_DIR, JoeyNMT v2.3 (c19c6c8438263d3ad01054742bf98ab1f1fa61b3)
# with a joeynmt-2.3.0.dist-info beside its package (its check_version asks
# importlib.metadata); SUBWORD_NMT_DIR, subword-nmt v0.3.8
# (build_toolkit_deps.sh); ONMT_DIR, for the corpus (OpenNMT-py's toy
# English-German data, as make_onmt.sh cuts it) and SPM models made here.
# Debian: python3-torch 1.13, python3-sentencepiece, python3-yaml,
# python3-tqdm, python3-matplotlib, python3-importlib-metadata,
# python3-packaging, sentencepiece. Stand-ins: joey_standins.py.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-$(mktemp -d)}
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 PYTHONPATH=$SUBWORD_NMT_DIR
PY=/usr/bin/python3
joey() { $PY "$here/joey_run.py" "$@"; }
mkdir -p "$JOEY_DIR/joeynmt-2.3.0.dist-info"
printf 'Metadata-Version: 2.1\nName: joeynmt\nVersion: 2.3.0\n' > "$JOEY_DIR/joeynmt-2.3.0.dist-info/METADATA"
cd "$work"

paste -d '\t' "$ONMT_DIR/data/src-train.txt" "$ONMT_DIR/data/tgt-train.txt" |
	awk -F'\t' '{n=split($1,a," "); m=split($2,b," "); if (n<=20 && m<=20 && n>=3) print}' > pairs.tsv
head -n 3000 pairs.tsv | cut -f1 > train.en; head -n 3000 pairs.tsv | cut -f2 > train.de
sed -n 3001,3100p pairs.tsv | cut -f1 > valid.en; sed -n 3001,3100p pairs.tsv | cut -f2 > valid.de
sed -n 3101,3148p pairs.tsv | cut -f1 > test.en; sed -n 3101,3148p pairs.tsv | cut -f2 > test.de
[ -f spm_src.model ] || spm_train --input=train.en --model_prefix=spm_src --vocab_size=1000 --character_coverage=1.0 --model_type=unigram
[ -f spm_tgt.model ] || spm_train --input=train.de --model_prefix=spm_tgt --vocab_size=1000 --character_coverage=1.0
[ -f bpe_src.codes ] || $PY "$SUBWORD_NMT_DIR/subword_nmt/learn_bpe.py" -s 800 < train.en > bpe_src.codes
[ -f bpe_tgt.codes ] || $PY "$SUBWORD_NMT_DIR/subword_nmt/learn_bpe.py" -s 800 < train.de > bpe_tgt.codes

for kind in sp bpe; do
	case $kind in
	sp) tok=sentencepiece src_cfg='model_file: "spm_src.model"' tgt_cfg='model_file: "spm_tgt.model"' cell=lstm init=bridge att=luong ;;
	bpe) tok=subword-nmt src_cfg='codes: "bpe_src.codes"' tgt_cfg='codes: "bpe_tgt.codes"' cell=gru init=last att=bahdanau ;;
	esac
	cat > $kind.yaml <<YAML
name: "attnx_$kind"
joeynmt_version: "2.3.0"
model_dir: "model_$kind"
use_cuda: False
fp16: False
random_seed: 42
data:
    train: "train"
    dev: "valid"
    test: "test"
    dataset_type: "plain"
    src:
        lang: "en"
        max_length: 80
        level: "bpe"
        voc_limit: 1000
        tokenizer_type: "$tok"
        tokenizer_cfg:
            $src_cfg
    trg:
        lang: "de"
        max_length: 80
        level: "bpe"
        voc_limit: 1000
        tokenizer_type: "$tok"
        tokenizer_cfg:
            $tgt_cfg
testing:
    eval_metrics: []
training:
    optimizer: "adam"
    learning_rate: 0.003
    batch_size: 32
    batch_type: "sentence"
    epochs: 100
    updates: 1500
    validation_freq: 1500
    logging_freq: 100
    early_stopping_metric: "loss"
    overwrite: True
    shuffle: True
    keep_best_ckpts: 1
    scheduling: "plateau"
    patience: 100
model:
    encoder:
        type: "recurrent"
        rnn_type: "$cell"
        embeddings:
            embedding_dim: 32
        hidden_size: 64
        bidirectional: True
        num_layers: 2
    decoder:
        type: "recurrent"
        rnn_type: "$cell"
        embeddings:
            embedding_dim: 32
        hidden_size: 64
        num_layers: 2
        input_feeding: True
        init_hidden: "$init"
        attention: "$att"
YAML
	[ -f model_$kind/best.ckpt ] || joey train $kind.yaml
	out="$here/joey-$kind"
	rm -rf "$out" && mkdir -p "$out/model" "$out/expected"
	# The model directory as JoeyNMT left it, less training logs, plots
	# and validation outputs.
	(cd model_$kind && cp -P *.ckpt config.yaml src_vocab.txt trg_vocab.txt "$out/model/")
	case $kind in
	sp) cp spm_src.model spm_tgt.model "$out/model/" ;;
	bpe) cp bpe_src.codes bpe_tgt.codes "$out/model/" ;;
	esac
	cp test.en "$out/test.en"
	while IFS=$'\t' read -r name testing attnx_flags; do
		[[ $name == \#* || -z $name ]] && continue
		$PY - "$kind.yaml" "$name.$kind.yaml" "$testing" <<'PY'
import sys, yaml
cfg = yaml.safe_load(open(sys.argv[1]))
for kv in filter(None, sys.argv[3].split(",")):
    k, v = kv.split("=")
    cfg["testing"][k] = yaml.safe_load(v)
yaml.safe_dump(cfg, open(sys.argv[2], "w"))
PY
		# model_dir's best.ckpt; to stdout, as 2.3's -o fails (save_hypothese reads args.n_best)
		joey translate "$name.$kind.yaml" < test.en > "$out/expected/$name.txt"
		# The search's score gaps, sentence by sentence (batch_size 1:
		# each search call one sentence, in order).
		$PY - "$name.$kind.yaml" "$name.$kind.gaps.yaml" <<'PY'
import sys, yaml
cfg = yaml.safe_load(open(sys.argv[1]))
cfg["testing"]["batch_size"], cfg["testing"]["batch_type"] = 1, "sentence"
yaml.safe_dump(cfg, open(sys.argv[2], "w"))
PY
		JOEY_GAPS="$out/expected/$name.gaps.json" joey translate "$name.$kind.gaps.yaml" < test.en > /dev/null
		printf '%s\t%s\t%s\n' "$name" "$testing" "$attnx_flags" >> "$out/variants.tsv"
	done < "$here/joey_variants.tsv"
	echo "JoeyNMT 2.3.0 (c19c6c8438263d3ad01054742bf98ab1f1fa61b3), subword-nmt v0.3.8, torch $($PY -c 'import torch; print(torch.__version__)'), made by testdata/toolkits/make_joey.sh" > "$out/VERSION"
done
echo "wrote $here/joey-sp and joey-bpe"
