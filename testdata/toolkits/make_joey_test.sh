#!/bin/bash
# Makes testdata/toolkits/joey-{sp,bpe}/test with JoeyNMT 2.3's own
# `joeynmt test CONFIG -o hyp` on the models make_joey.sh trained: the dev
# set (valid.{en,de}, pairs 3001-3100 of make_joey.sh's corpus) and the
# test set (test.{en,de}, pairs 3101-3148), scored by sacreBLEU 2.6.0's own
# code, with each testing section of joey_test_variants.tsv (and data
# section changes in its third column). Kept for each
# variant: the config JoeyNMT ran (NAME.yaml), its output files
# (NAME/hyp.dev and hyp.test; hyp-0..dev and so on with n_best > 1, as
# save_hypothese names them) and its log (NAME/test.log, the model
# directory's test.log of that run). cmd/attnx TestJoeyTestCommand runs
# `attnx test` on the same configs.
#
# Needs (nothing of it in CI): JOEY_DIR, JoeyNMT v2.3
# (c19c6c8438263d3ad01054742bf98ab1f1fa61b3); SACREBLEU_DIR, sacreBLEU
# v2.6.0's tree (github mjpost/sacrebleu), whose sacrebleu/version.py this
# script writes (setuptools_scm writes it on install); SUBWORD_NMT_DIR,
# subword-nmt v0.3.8; ONMT_DIR, OpenNMT-py v3.5.1's data/ (the corpus, as
# make_joey.sh cuts it). Debian: what make_joey.sh needs, and
# python3-portalocker, python3-regex, python3-tabulate, python3-colorama,
# python3-lxml, python3-numpy for sacreBLEU.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-$(mktemp -d)}
PY=/usr/bin/python3
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 PYTHONPATH=$SUBWORD_NMT_DIR:$SACREBLEU_DIR
[ -f "$SACREBLEU_DIR/sacrebleu/version.py" ] || echo '__version__ = "2.6.0"' > "$SACREBLEU_DIR/sacrebleu/version.py"
mkdir -p "$JOEY_DIR/joeynmt-2.3.0.dist-info"
printf 'Metadata-Version: 2.1\nName: joeynmt\nVersion: 2.3.0\n' > "$JOEY_DIR/joeynmt-2.3.0.dist-info/METADATA"
cd "$work"
paste -d '\t' "$ONMT_DIR/data/src-train.txt" "$ONMT_DIR/data/tgt-train.txt" |
	awk -F'\t' '{n=split($1,a," "); m=split($2,b," "); if (n<=20 && m<=20 && n>=3) print}' > pairs.tsv
sed -n 3001,3100p pairs.tsv | cut -f1 > valid.en; sed -n 3001,3100p pairs.tsv | cut -f2 > valid.de
sed -n 3101,3148p pairs.tsv | cut -f1 > test.en; sed -n 3101,3148p pairs.tsv | cut -f2 > test.de
for kind in sp bpe; do
	fx="$here/joey-$kind"
	cmp test.en "$fx/test.en" # the corpus make_joey.sh cut
	out="$fx/test"
	rm -rf "$out" && mkdir -p "$out"
	cp valid.en valid.de test.en test.de "$out/"
	# The dev set with empty pairs (lines 3, 50 and 103 of 103): JoeyNMT's
	# plain dataset drops them.
	for l in en de; do awk 'NR==3 || NR==49 {print ""} {print} END {print ""}' valid.$l > "$out/validblank.$l"; done
	cp "$out/validblank.en" "$out/validblank.de" .
	while IFS=$'\t' read -r name testing data; do
		[[ $name == \#* || -z $name ]] && continue
		rm -rf "model_$kind" && cp -rP "$fx/model" "model_$kind"
		cp model_$kind/*.model model_$kind/*.codes . 2>/dev/null || true
		$PY - "$fx/model/config.yaml" "$out/$name.yaml" "$testing" "${data:-}" <<'PY'
import sys, yaml
cfg = yaml.safe_load(open(sys.argv[1]))
for section, settings in (("testing", sys.argv[3]), ("data", sys.argv[4])):
    for kv in filter(None, settings.split(";")):
        k, v = kv.split("=", 1)
        cfg[section][k] = yaml.safe_load(v)
yaml.safe_dump(cfg, open(sys.argv[2], "w"))
PY
		mkdir -p "$out/$name"
		$PY "$here/joey_run.py" test "$out/$name.yaml" -o "$out/$name/hyp" 2> "$work/$kind.$name.stderr"
		cp "model_$kind/test.log" "$out/$name/test.log"
	done < "$here/joey_test_variants.tsv"
	echo "JoeyNMT 2.3.0 (c19c6c8438263d3ad01054742bf98ab1f1fa61b3) joeynmt test, sacreBLEU 2.6.0, subword-nmt v0.3.8, torch $($PY -c 'import torch; print(torch.__version__)'), made by testdata/toolkits/make_joey_test.sh" > "$out/VERSION"
done
echo "wrote $here/joey-sp/test and joey-bpe/test"
