#!/bin/bash
# Translates gnmt-dle's and gnmt-mlperf's test sets with their
# repositories' own translate.py (on CPU, fp32) under the settings of
# gnmt_variants.tsv: beam 10, other length normalization and coverage
# penalty factors, a short --max-seq-len, other batch sizes and sorting
# (translate.py's lines must not depend on them). Each variant NAME gives
# expected/NAME.txt (translate.py's output file; MLPerf's also
# NAME.detok.txt) and expected/NAME.log (its settings and BLEU lines).
# Reads the committed checkpoints: nothing is trained.
#
# Needs what make_gnmt.sh needs (DLE_DIR, MLPERF_DIR, SUBWORD_NMT_DIR,
# SACREMOSES_DIR, SACREBLEU_DIR, DETOKENIZER); MLPerf's tree gets the same
# one-line PyTorch 1.0 division fix.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-$(mktemp -d)}
PY=/usr/bin/python3
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 PYTHONPATH=$SUBWORD_NMT_DIR:$SACREMOSES_DIR
mkdir -p "$work/bin" "$work/data/mosesdecoder/scripts/tokenizer"
printf '#!/bin/sh\nexec %s %s/sacrebleu.py "$@"\n' "$PY" "$SACREBLEU_DIR" > "$work/bin/sacrebleu"
chmod +x "$work/bin/sacrebleu"
export PATH=$work/bin:$PATH
cp "$DETOKENIZER" "$work/data/mosesdecoder/scripts/tokenizer/detokenizer.perl"
rm -rf "$work/mlperf-src" && cp -r "$MLPERF_DIR" "$work/mlperf-src"
sed -i 's#^\( *source_beam = index\) / beam_size$#\1 // beam_size#' "$work/mlperf-src/seq2seq/inference/beam_search.py"
grep -q '^ *source_beam = index // beam_size$' "$work/mlperf-src/seq2seq/inference/beam_search.py"
gr() { $PY "$here/gnmt_run.py" "$@"; }

grep -v '^#' "$here/gnmt_variants.tsv" | while IFS=$'\t' read -r repo name flags; do
	# shellcheck disable=SC2086 # flags are words
	case $repo in
	dle)
		out="$here/gnmt-dle"
		gr dle "$DLE_DIR" translate.py -m "$out/model_best.pth" -i "$out/test.raw.en" -r "$out/test.raw.de" \
			-o "$out/expected/$name.txt" --no-cuda --math fp32 --affinity disabled --save-dir "$work/dle-translate" $flags \
			2>&1 | grep -E 'BLEU|Translated|math:' | sed -e 's/^.*- //' > "$out/expected/$name.log"
		;;
	mlperf)
		out="$here/gnmt-mlperf"
		gr mlperf "$work/mlperf-src" translate.py -m "$out/model_best.pth" -i "$out/test.bpe.en" -r "$out/test.raw.de" \
			-o "$out/expected/$name.txt" --dataset-dir "$work/data" --no-cuda --math fp32 $flags \
			2>&1 | grep -E 'BLEU|math:|beam size' | sed -e 's/^.*- //' > "$out/expected/$name.log"
		mv "$out/expected/$name.txt.detok" "$out/expected/$name.detok.txt"
		;;
	*)
		echo "gnmt_variants.tsv: unknown repository $repo" >&2
		exit 1
		;;
	esac
done
