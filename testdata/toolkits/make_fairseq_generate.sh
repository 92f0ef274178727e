#!/bin/bash
# Makes testdata/toolkits/fairseq-generate: fairseq 0.12.2's own
# fairseq-preprocess binarizes the fairseq fixtures' test set (the
# sentences make_fairseq.sh keeps as test.raw.en, with their German
# references, BPE'd with the fixtures' bpecodes by subword-nmt; and, in
# data-bin, make_fairseq.sh's valid set) with the
# fixtures' dictionaries (--srcdict/--tgtdict) into data-bin (the default
# mmap indexed dataset), data-bin-lazy (--dataset-impl lazy, the older
# TNTIDX index) and data-bin-raw (--dataset-impl raw, the text kept), and
# fairseq-generate decodes each with fairseq-long's checkpoint_best.pt and
# each setting of fairseq_generate_variants.tsv, its stdout (less the logger's
# time-stamped lines) in expected/NAME.out, each line's smallest score gap
# in expected/NAME.gaps.json (fairseq_run.py's FAIRSEQ_GAPS).
#
# Needs (nothing of it in CI) what make_fairseq.sh needs (FAIRSEQ_DIR with
# fairseq's libbleu built in place as well: its BLEU scorer loads it;
# HYDRA_DIR, OMEGACONF_DIR, SUBWORD_NMT_DIR, ONMT_DIR), and SACREBLEU_DIR,
# sacreBLEU v2.6.0 (f591c7e4eb631ff11b740da2100ae6f33af4ae0a) from its
# sources, for --scoring sacrebleu (Debian: python3-regex, python3-tabulate,
# python3-portalocker, python3-colorama, python3-lxml). libbleu, in the
# fairseq tree:
#
#   python3 -c 'from setuptools import setup, Extension; setup(name="b",
#     ext_modules=[Extension("fairseq.libbleu", ["fairseq/clib/libbleu/libbleu.cpp",
#     "fairseq/clib/libbleu/module.cpp"], extra_compile_args=["-std=c++11"])],
#     script_args=["build_ext", "--inplace"])'
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-$(mktemp -d)}
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 PYTHONPATH=$SUBWORD_NMT_DIR SACREBLEU_DIR SACREBLEU_VERSION=2.6.0
PY=/usr/bin/python3
fs() { $PY "$here/fairseq_run.py" "$@"; }
model="$here/fairseq-long"
out="$here/fairseq-generate"
cd "$work"

# The test pairs as make_fairseq.sh cuts them (its test.raw.en is the
# source side), BPE'd with the fixtures' codes.
paste -d '\t' "$ONMT_DIR/data/src-train.txt" "$ONMT_DIR/data/tgt-train.txt" |
	awk -F'\t' '{n=split($1,a," "); m=split($2,b," "); if (n<=20 && m<=20 && n>=3) print}' > pairs.tsv
sed -n 3101,3148p pairs.tsv | cut -f1 > test.raw.en
sed -n 3101,3148p pairs.tsv | cut -f2 > test.raw.de
cmp test.raw.en "$model/test.raw.en"
# The validation pairs too (make_fairseq.sh's valid set), for
# --gen-subset valid, which fairseq shuffles before sorting.
sed -n 3001,3100p pairs.tsv | cut -f1 > valid.raw.en
sed -n 3001,3100p pairs.tsv | cut -f2 > valid.raw.de
for s in test valid; do
	for l in en de; do $PY "$SUBWORD_NMT_DIR/subword_nmt/apply_bpe.py" -c "$model/bpecodes" < $s.raw.$l > $s.$l; done
done

rm -rf "$out" && mkdir -p "$out/expected"
for impl in mmap lazy raw; do
	d=data-bin valid=(--validpref valid)
	[[ $impl != mmap ]] && d=data-bin-$impl valid=()
	fs preprocess --source-lang en --target-lang de --testpref test "${valid[@]}" --srcdict "$model/data-bin/dict.en.txt" \
		--tgtdict "$model/data-bin/dict.de.txt" --destdir "$out/$d" --dataset-impl $impl --workers 1
	rm -f "$out/$d/preprocess.log"
done
cp test.raw.de "$out/test.raw.de"

while IFS=$'\t' read -r vname vflags _; do
	[[ -z $vname || $vname == \#* ]] && continue
	data=data-bin
	case $vflags in *"--dataset-impl lazy"*) data=data-bin-lazy ;; *"--dataset-impl raw"*) data=data-bin-raw ;; esac
	# shellcheck disable=SC2086
	FAIRSEQ_GAPS="$out/expected/$vname.gaps.json" fs generate "$out/$data" --path "$model/checkpoint_best.pt" --cpu $vflags \
		> "$work/$vname.stdout" 2> "$work/$vname.stderr" || { cat "$work/$vname.stderr"; exit 1; }
	grep -v -E -e '^ANTLR runtime and generated code versions disagree' -e '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} \| ' \
		"$work/$vname.stdout" > "$out/expected/$vname.out"
done < "$here/fairseq_generate_variants.tsv"
# --max-tokens below the longest pair's tokens: fairseq-generate's
# batch_by_size asserts; the message in expected/maxtokens50.err.
if FAIRSEQ_GAPS= fs generate "$out/data-bin" --path "$model/checkpoint_best.pt" --cpu --max-tokens 50 > /dev/null 2> "$work/mt50.stderr"; then
	echo "fairseq-generate --max-tokens 50 did not fail" >&2; exit 1
fi
grep '^AssertionError' "$work/mt50.stderr" > "$out/expected/maxtokens50.err"
echo "fairseq 0.12.2 (4a388e64cd646ed7d7ad8de8fae55df2b8eea91d), hydra-core 1.0.7, omegaconf 2.0.6, subword-nmt v0.3.8, sacreBLEU 2.6.0 (f591c7e4eb631ff11b740da2100ae6f33af4ae0a), torch $($PY -c 'import torch; print(torch.__version__)'), model ../fairseq-long/checkpoint_best.pt, made by testdata/toolkits/make_fairseq_generate.sh" > "$out/VERSION"
echo "wrote $out"
