#!/bin/bash
# Makes testdata/toolkits/gnmt-dle and gnmt-mlperf: two small GNMT v2
# models trained on CPU by their own repositories' train.py, and their
# translate.py's translations of a held-out test set:
#
#   gnmt-dle     NVIDIA DeepLearningExamples PyTorch/Translation/GNMT:
#                4 layers, hidden 32, shared embeddings (its default),
#                --math tf32 (FP32Optimizer on CPU, and the vocabulary
#                padded with madeupwordNNNN to a multiple of 8 as for
#                tensor cores); its Tokenizer's state (Moses languages,
#                the pickled subword_nmt BPE object, tok2idx, idx2tok) in
#                the checkpoint; translate.py reads raw text.
#   gnmt-mlperf  mlcommons/training retired_benchmarks/gnmt/pytorch (the
#                rnn_translator reference): 3 layers, hidden 32,
#                --no-share-embedding, --math fp32 (no padding); its
#                checkpoint's tokenizer holds only separator, vocab_size,
#                tok2idx, idx2tok and its model_config no vocab_size;
#                translate.py reads Moses-tokenized BPE text and writes
#                BPE-joined tokenized text (and .detok by Moses'
#                detokenizer.perl for its BLEU).
#
# The corpus: OpenNMT-py v3.5.1's toy en-de data, Moses-detokenized back
# to raw text by sacremoses, then prepared as both repositories' data
# scripts do (scripts/wmt16_en_de.sh, download_dataset.sh): Moses
# tokenization (sacremoses 0.0.19, DLE's pinned version, standing in for
# tokenizer.perl, whose default settings it follows), joint BPE learned by
# subword-nmt 48ba99e (the commit both pin) on de+en, applied to both
# sides, vocabulary by get_vocab.py.
#
# Each directory gets model_best.pth (as trainer.py saves it, optimizer
# and scheduler state included), vocab.bpe (the vocabulary file train.py
# read; DLE's also bpe.codes), train.log (train.py's summary lines), the
# test set, expected/{beam5,greedy}.txt (translate.py's output file:
# --beam-size 5, its default, and 1, its greedy search; MLPerf's also
# *.detok.txt, detokenizer.perl's) and *.log (its log: settings, BLEU),
# VERSION; gnmt-dle also expected/segments.tsv (gnmt_segments.py: its
# Tokenizer's BPE text, ids and detokenization of each test line).
#
# The runs are deterministic (seed 1, one thread): a second run gives the
# same files byte for byte but the checkpoints, whose config records the
# work directory's paths (dataset_dir, save_dir, ...).
#
# Needs (nothing of it in CI): DLE_DIR (PyTorch/Translation/GNMT of
# NVIDIA/DeepLearningExamples), MLPERF_DIR (retired_benchmarks/gnmt/pytorch
# of mlcommons/training), SUBWORD_NMT_DIR (rsennrich/subword-nmt at
# 48ba99e657591c329e0003f0c6e32e493fa959ef), SACREMOSES_DIR
# (hplt-project/sacremoses at 98f9aa3c, version 0.0.19), SACREBLEU_DIR
# (mjpost/sacrebleu v1.2.10, DLE's pin: its sacrebleu.py), DETOKENIZER
# (mosesdecoder's scripts/tokenizer/detokenizer.perl, for MLPerf's eval),
# ONMT_DIR (OpenNMT-py v3.5.1, its data/). Debian: python3-joblib,
# python3-six, python3-tqdm, python3-click, python3-regex, perl.
# Stand-ins: gnmt_standins.py (run through gnmt_run.py).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-$(mktemp -d)}
PY=/usr/bin/python3
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 PYTHONPATH=$SUBWORD_NMT_DIR:$SACREMOSES_DIR
mkdir -p "$work/bin" "$work/data/mosesdecoder/scripts/tokenizer"
# translator.py runs the sacrebleu command; this is sacreBLEU 1.2.10's own.
printf '#!/bin/sh\nexec %s %s/sacrebleu.py "$@"\n' "$PY" "$SACREBLEU_DIR" > "$work/bin/sacrebleu"
chmod +x "$work/bin/sacrebleu"
export PATH=$work/bin:$PATH
cp "$DETOKENIZER" "$work/data/mosesdecoder/scripts/tokenizer/detokenizer.perl"
cd "$work/data"

# Raw text: the toy data's Moses tokenization undone; 3..25 tokens a side.
$PY - "$ONMT_DIR/data/src-train.txt" "$ONMT_DIR/data/tgt-train.txt" <<'PY'
import sys
from sacremoses import MosesDetokenizer
en, de = MosesDetokenizer("en"), MosesDetokenizer("de")
pairs = []
for s, t in zip(open(sys.argv[1], encoding="utf-8"), open(sys.argv[2], encoding="utf-8")):
    s, t = s.split(), t.split()
    if 3 <= len(s) <= 25 and 3 <= len(t) <= 25:
        pairs.append((en.detokenize(s), de.detokenize(t)))
def write(name, rows):
    with open(name + ".en", "w", encoding="utf-8") as f:
        f.writelines(r[0] + "\n" for r in rows)
    with open(name + ".de", "w", encoding="utf-8") as f:
        f.writelines(r[1] + "\n" for r in rows)
write("train.raw", pairs[:2500])
write("dev.raw", pairs[2500:2600])
write("test.raw", pairs[2600:2632])
PY
# Hyphens, quotes, apostrophes and characters Moses escapes, in the test set.
cat >> test.raw.en <<'TEST'
The well-known e-mail address is not up-to-date.
A so-called "non-profit" organisation & its co-operation.
Member States' long-term strategy: 2008-2012 <draft> [annex] | note.
It's the Commission's view, isn't it?
TEST
cat >> test.raw.de <<'TEST'
Die bekannte E-Mail-Adresse ist nicht aktuell.
Eine sogenannte "gemeinnützige" Organisation & ihre Zusammenarbeit.
Die langfristige Strategie der Mitgliedstaaten: 2008-2012 <Entwurf> [Anhang] | Hinweis.
Das ist die Ansicht der Kommission, nicht wahr?
TEST
tok() { # lang < raw > tok: tokenizer.perl -l LANG's defaults (escaping on, no -a)
	$PY -c "
import sys
from sacremoses import MosesTokenizer
t = MosesTokenizer('$1')
for line in sys.stdin:
    print(t.tokenize(line.strip(), return_str=True))
"
}
for s in train dev test; do
	for l in en de; do tok $l < $s.raw.$l > $s.tok.$l; done
done
cat train.tok.de train.tok.en | $PY "$SUBWORD_NMT_DIR/subword_nmt/learn_bpe.py" -s 600 > bpe.codes
for s in train dev test; do
	for l in en de; do $PY "$SUBWORD_NMT_DIR/subword_nmt/apply_bpe.py" -c bpe.codes < $s.tok.$l > $s.bpe.$l; done
done
cat train.bpe.en train.bpe.de | $PY "$SUBWORD_NMT_DIR/subword_nmt/get_vocab.py" | cut -f1 -d ' ' > vocab.bpe
# MLPerf's train.py reads seq2seq/data/config.py's fixed file names.
cp vocab.bpe vocab.bpe.32000
cp train.bpe.en train.tok.clean.bpe.32000.en; cp train.bpe.de train.tok.clean.bpe.32000.de
cp dev.bpe.en newstest_dev.tok.clean.bpe.32000.en; cp dev.bpe.de newstest_dev.tok.clean.bpe.32000.de
cp test.bpe.en newstest2014.tok.bpe.32000.en; cp test.raw.de newstest2014.de

common="--hidden-size 32 --dropout 0.1 --seed 1 --no-cuda --train-batch-size 32 --train-loader-workers 0 --epochs 10 --lr 1e-2 --warmup-steps 20 --test-batch-size 16 --print-freq 40"
gr() { $PY "$here/gnmt_run.py" "$@"; }

# --- DeepLearningExamples ---
rm -rf "$work/dle" && mkdir -p "$work/dle"
gr dle "$DLE_DIR" train.py --dataset-dir "$work/data" --src-lang en --tgt-lang de \
	--vocab vocab.bpe --bpe-codes bpe.codes \
	--train-src train.bpe.en --train-tgt train.bpe.de --val-src dev.bpe.en --val-tgt dev.bpe.de \
	--test-src test.bpe.en --test-tgt test.raw.de \
	--save-dir "$work/dle" --num-layers 4 --math tf32 --no-env --affinity disabled --prealloc-mode off \
	$common > "$work/dle/train.out" 2>&1
out="$here/gnmt-dle"
rm -rf "$out" && mkdir -p "$out/expected"
cp "$work/dle/model_best.pth" "$out/"
cp test.raw.en test.raw.de vocab.bpe bpe.codes "$out/"
grep -E 'Summary|Number of parameters|Size of vocabulary' "$work/dle/train.out" | sed -e 's/^.*- //' > "$out/train.log"
dle_translate() { # name flags...
	local name=$1
	shift
	gr dle "$DLE_DIR" translate.py -m "$out/model_best.pth" -i "$out/test.raw.en" -r "$out/test.raw.de" \
		-o "$out/expected/$name.txt" --no-cuda --math fp32 --affinity disabled --save-dir "$work/dle-translate" "$@" \
		2>&1 | grep -E 'BLEU|Translated|math:' | sed -e 's/^.*- //' > "$out/expected/$name.log"
}
dle_translate beam5 --beam-size 5
dle_translate greedy --beam-size 1
# What its Tokenizer, restored from the checkpoint, makes of the test set.
$PY "$here/gnmt_segments.py" "$DLE_DIR" "$out/model_best.pth" "$out/test.raw.en" > "$out/expected/segments.tsv"
echo "NVIDIA/DeepLearningExamples ${DLE_COMMIT:-unknown} (PyTorch/Translation/GNMT), sacremoses 0.0.19 (98f9aa3c), subword-nmt 48ba99e, sacreBLEU 1.2.10, torch $($PY -c 'import torch; print(torch.__version__)'), made by testdata/toolkits/make_gnmt.sh" > "$out/VERSION"

# --- MLPerf rnn_translator ---
# Its tree is copied and one line changed: beam_search.py's
# "source_beam = index / beam_size" was integer division on the int64
# tensor under PyTorch 1.0.1 (its Dockerfile's), true division since
# PyTorch 1.5; "//" computes what 1.0.1 computed (DLE's copy of the same
# code has "//").
rm -rf "$work/mlperf-src" && cp -r "$MLPERF_DIR" "$work/mlperf-src"
sed -i 's#^\( *source_beam = index\) / beam_size$#\1 // beam_size#' "$work/mlperf-src/seq2seq/inference/beam_search.py"
grep -q '^ *source_beam = index // beam_size$' "$work/mlperf-src/seq2seq/inference/beam_search.py"
MLPERF_DIR=$work/mlperf-src
rm -rf "$work/mlperf" && mkdir -p "$work/mlperf"
gr mlperf "$MLPERF_DIR" train.py --dataset-dir "$work/data" --results-dir "$work/mlperf" --save gnmt \
	--num-layers 3 --no-share-embedding --math fp32 --target-bleu 100 \
	$common > "$work/mlperf/train.out" 2>&1
out="$here/gnmt-mlperf"
rm -rf "$out" && mkdir -p "$out/expected"
cp "$work/mlperf/gnmt/model_best.pth" "$out/"
cp test.bpe.en test.raw.de vocab.bpe "$out/"
grep -E 'Summary|Number of parameters|Size of vocabulary' "$work/mlperf/train.out" | sed -e 's/^.*- //' > "$out/train.log"
mlperf_translate() { # name flags...
	local name=$1
	shift
	gr mlperf "$MLPERF_DIR" translate.py -m "$out/model_best.pth" -i "$out/test.bpe.en" -r "$out/test.raw.de" \
		-o "$out/expected/$name.txt" --dataset-dir "$work/data" --no-cuda --math fp32 "$@" \
		2>&1 | grep -E 'BLEU|math:|beam size' | sed -e 's/^.*- //' > "$out/expected/$name.log"
	cp "$out/expected/$name.txt.detok" "$out/expected/$name.detok.txt" && rm "$out/expected/$name.txt.detok"
}
mlperf_translate beam5 --beam-size 5
mlperf_translate greedy --beam-size 1
echo "mlcommons/training ${MLPERF_COMMIT:-unknown} (retired_benchmarks/gnmt/pytorch), mosesdecoder detokenizer.perl ${MOSES_COMMIT:-unknown}, sacremoses 0.0.19 (98f9aa3c), subword-nmt 48ba99e, sacreBLEU 1.2.10, torch $($PY -c 'import torch; print(torch.__version__)'), made by testdata/toolkits/make_gnmt.sh" > "$out/VERSION"
