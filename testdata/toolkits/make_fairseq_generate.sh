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
# The moses part: fairseq-moses's checkpoint with --tokenizer moses --bpe
# subword_nmt on its own data-bin-moses (see below).
#
# Needs (nothing of it in CI) what make_fairseq.sh needs (FAIRSEQ_DIR with
# fairseq's libbleu built in place as well: its BLEU scorer loads it;
# HYDRA_DIR, OMEGACONF_DIR, SUBWORD_NMT_DIR, ONMT_DIR), SACREMOSES_DIR
# (hplt-project/sacremoses 0.1.1, 8358ea2a3f481621139d2018a37836fd03192e9b)
# for the moses part, and SACREBLEU_DIR,
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
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 PYTHONPATH=$SUBWORD_NMT_DIR:$SACREMOSES_DIR SACREBLEU_DIR SACREBLEU_VERSION=2.6.0
PY=/usr/bin/python3
fs() { $PY "$here/fairseq_run.py" "$@"; }
model="$here/fairseq-long"
mm="$here/fairseq-moses"
out="$here/fairseq-generate"
# FAIRSEQ_GENERATE_ONLY=moses remakes only the moses part (data-bin-moses
# and the variants with --tokenizer moses); =align only the variants with
# --print-alignment (on the committed data-bin); =search only the variants
# with --match-source-len, --diverse-beam-groups or --diversity-rate (the
# same); =lstm the rest and those.
part() { [[ -z ${FAIRSEQ_GENERATE_ONLY:-} || $FAIRSEQ_GENERATE_ONLY == "$1" ]]; }
cd "$work"

paste -d '\t' "$ONMT_DIR/data/src-train.txt" "$ONMT_DIR/data/tgt-train.txt" |
	awk -F'\t' '{n=split($1,a," "); m=split($2,b," "); if (n<=20 && m<=20 && n>=3) print}' > pairs.tsv
if part lstm; then
# The test pairs as make_fairseq.sh cuts them (its test.raw.en is the
# source side), BPE'd with the fixtures' codes.
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
fi

if part moses; then
# fairseq-moses (trained on text tokenized by sacremoses, then BPE'd):
# its test set, 32 pairs of the corpus and 4 lines of hyphens and
# characters Moses escapes, with German references written for them,
# tokenized and BPE'd as its training text was (make_fairseq_text.sh),
# binarized with its dictionaries into data-bin-moses.
rm -rf "$out/data-bin-moses" moses && mkdir -p "$out/expected" moses
(
	cd moses
	sed -n 3101,3132p ../pairs.tsv | cut -f1 > test.raw.en
	sed -n 3101,3132p ../pairs.tsv | cut -f2 > test.raw.de
	tail -n 4 "$mm/test.raw.en" >> test.raw.en
	cat >> test.raw.de <<'REF'
Die bekannte E-Mail-Adresse ist nicht auf dem neuesten Stand.
Eine sogenannte "gemeinnützige" Organisation & ihre Zusammenarbeit.
Die langfristige Strategie der Mitgliedstaaten: 2008-2012 <Entwurf> [Anhang] | Hinweis.
Es ist eine Folgemaßnahme zu den Maßnahmen gegen Betrug.
REF
	cmp test.raw.en "$mm/test.raw.en"
	cat > tok.py <<'PY'
import sys
from sacremoses import MosesTokenizer
tok = MosesTokenizer(sys.argv[1])
for line in sys.stdin:
    print(tok.tokenize(line.strip(), aggressive_dash_splits=True, return_str=True, escape=True))
PY
	for l in en de; do
		$PY tok.py $l < test.raw.$l > test.tok.$l
		$PY "$SUBWORD_NMT_DIR/subword_nmt/apply_bpe.py" -c "$mm/moses.codes" < test.tok.$l > test.$l
	done
	fs preprocess --source-lang en --target-lang de --testpref test --srcdict "$mm/data-bin/dict.en.txt" \
		--tgtdict "$mm/data-bin/dict.de.txt" --destdir "$out/data-bin-moses" --workers 1
	rm -f "$out/data-bin-moses/preprocess.log"
	cp test.raw.de "$out/moses-test.raw.de"
)
fi

while IFS=$'\t' read -r vname vflags _; do
	[[ -z $vname || $vname == \#* ]] && continue
	data=data-bin m=$model
	case $vflags in *"--dataset-impl lazy"*) data=data-bin-lazy ;; *"--dataset-impl raw"*) data=data-bin-raw ;; esac
	case $vflags in
	*"--tokenizer moses"*)
		part moses || continue
		data=data-bin-moses m=$mm vflags=${vflags//..\/fairseq-moses\//$mm/}
		;;
	*"--print-alignment"*) part lstm || part align || continue ;;
	*"--match-source-len"* | *"--diverse-beam-groups"* | *"--diversity-rate"*) part lstm || part search || continue ;;
	*) part lstm || continue ;;
	esac
	# shellcheck disable=SC2086
	FAIRSEQ_GAPS="$out/expected/$vname.gaps.json" fs generate "$out/$data" --path "$m/checkpoint_best.pt" --cpu $vflags \
		> "$work/$vname.stdout" 2> "$work/$vname.stderr" || { cat "$work/$vname.stderr"; exit 1; }
	grep -v -E -e '^ANTLR runtime and generated code versions disagree' -e '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} \| ' \
		"$work/$vname.stdout" > "$out/expected/$vname.out"
done < "$here/fairseq_generate_variants.tsv"
echo "fairseq 0.12.2 (4a388e64cd646ed7d7ad8de8fae55df2b8eea91d), hydra-core 1.0.7, omegaconf 2.0.6, subword-nmt v0.3.8, sacremoses 0.1.1, sacreBLEU 2.6.0 (f591c7e4eb631ff11b740da2100ae6f33af4ae0a), torch $($PY -c 'import torch; print(torch.__version__)'), models ../fairseq-long/checkpoint_best.pt and (data-bin-moses) ../fairseq-moses/checkpoint_best.pt, made by testdata/toolkits/make_fairseq_generate.sh" > "$out/VERSION"
part lstm || exit 0
# --max-tokens below the longest pair's tokens: fairseq-generate's
# batch_by_size asserts; the message in expected/maxtokens50.err.
if FAIRSEQ_GAPS= fs generate "$out/data-bin" --path "$model/checkpoint_best.pt" --cpu --max-tokens 50 > /dev/null 2> "$work/mt50.stderr"; then
	echo "fairseq-generate --max-tokens 50 did not fail" >&2; exit 1
fi
grep '^AssertionError' "$work/mt50.stderr" > "$out/expected/maxtokens50.err"
echo "wrote $out"
