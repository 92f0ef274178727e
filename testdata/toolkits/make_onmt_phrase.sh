#!/bin/bash
# Makes testdata/toolkits/onmt-sum-unk-phrase with OpenNMT-py 2.3.0's own
# onmt_translate: -replace_unk -phrase_table on make_onmt_unk.sh's
# onmt-sum-unk (a copy-attention model that emits <unk>).
#
# phrase_table.txt gives every other source word that -replace_unk writes
# in onmt-sum-unk/expected/default-replaceunk.txt (sorted) a target word,
# PT_ and the word in capitals, so that both of translation.py's paths run: a word
# the table has becomes its entry, one it lacks is copied. Two more lines
# never match: a word with a space before "|||" (the table's words are
# kept exactly) and a word no output attends to. Each setting of
# variants.tsv translates onmt-sum-unk/test.src one sentence at a time
# (-batch_size 1, as make_onmt_unk.sh); cmd/attnx TestOpenNMTPhraseTable
# replays them with attnx translate --replace-unk --phrase-table.
#
# Needs ONMT2_DIR (OpenNMT-py tag 2.3.0) and TORCHTEXT_DIR (pytorch/text
# 0.5.0's tree) as make_onmt_unk.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
PY=/usr/bin/python3
onmt2() { ONMT_DIR=$ONMT2_DIR PYTHONPATH=$TORCHTEXT_DIR $PY "$here/onmt_run.py" "$@"; }
unk="$here/onmt-sum-unk"
out="$here/onmt-sum-unk-phrase"
rm -rf "$out" && mkdir -p "$out/expected"
# The words -replace_unk writes where the plain output has <unk>.
$PY - "$unk/expected/default.txt" "$unk/expected/default-replaceunk.txt" > "$out/phrase_table.txt" <<'PY'
import sys
plain, repl = (open(p).read().splitlines() for p in sys.argv[1:3])
words = set()
for p, r in zip(plain, repl):
    for pw, rw in zip(p.split(), r.split()):
        if pw == "<unk>":
            words.add(rw)
for i, w in enumerate(sorted(words)):
    if i % 2 == 0:
        print(w + "|||" + "PT_" + w.upper())
first = sorted(words)[1]
print(first + " |||never")
print("zzzunseen|||never")
PY
cp "$unk/test.src" "$out/test.src"
: > "$out/variants.tsv"
while IFS='|' read -r name flags aflags; do
	printf '%s\t%s\t%s\n' "$name" "$flags -replace_unk -phrase_table phrase_table.txt" "$aflags${aflags:+ }--replace-unk --phrase-table phrase_table.txt" >> "$out/variants.tsv"
	# shellcheck disable=SC2086
	(cd "$out" && ONMT_GAPS="$out/expected/$name.gaps.json" onmt2 translate -model "$unk/model.pt" -src test.src \
		-output "expected/$name.txt" -batch_size 1 $flags -replace_unk -phrase_table phrase_table.txt)
done <<'VARIANTS'
default||
greedy|-beam_size 1|--beam 1
nbest3|-n_best 3|--n-best 3
VARIANTS
sed -i 's/\t /\t/' "$out/variants.tsv"
torch=$($PY -c 'import torch; print(torch.__version__)')
echo "OpenNMT-py 2.3.0 (9311a9af8c03eed235117c92e7e9a7ae860a6553) onmt_translate on onmt-sum-unk/model.pt, torchtext 0.5.0 (0169cde2f1d446ae886ef0be07e9a673585ed256), torch $torch, made by testdata/toolkits/make_onmt_phrase.sh" > "$out/VERSION"
