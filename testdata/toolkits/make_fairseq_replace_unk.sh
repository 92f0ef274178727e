#!/bin/bash
# Makes testdata/toolkits/fairseq-spm-replace-unk with fairseq 0.12.2's own
# fairseq-interactive: --replace-unk DICT on make_fairseq_text.sh's
# fairseq-spm (whose outputs hold <unk>), one sentence at a time
# (--buffer-size 1 --batch-size 1), with and without --print-alignment.
#
# fairseq 0.12.2 cannot replace an <unk> at all: utils.replace_unk indexes
# the hypothesis' alignment by output position (src_tokens[alignment[i]]),
# but without --print-alignment the search records no alignment (an empty
# tensor: IndexError) and with it the alignment is a list of (source,
# target) pairs (TypeError). Both runs stop at the first <unk>;
# fairseq-interactive-failure.txt keeps their tracebacks, and dict.txt
# the dictionary they were given (every other source piece of the test
# set, "PIECE PT_PIECE extra": load_align_dict takes the first two
# columns). attnx's --replace-unk-dict has no run of fairseq to compare
# with; translate's TestReplaceUnkDict holds it to utils.replace_unk's
# rule (the dictionary's entry for the aligned source token, else the
# token).
#
# Needs FAIRSEQ_DIR, HYDRA_DIR and OMEGACONF_DIR as make_fairseq_text.sh
# (build_toolkit_deps.sh), with Debian's python3-sentencepiece.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
PY=/usr/bin/python3
spm="$here/fairseq-spm"
out="$here/fairseq-spm-replace-unk"
rm -rf "$out" && mkdir -p "$out"
grep '^S-' "$spm/expected/default.out" | cut -f2 | tr ' ' '\n' | LC_ALL=C sort -u | awk 'NR % 2 == 1 {print $0 " PT_" $0 " extra"}' > "$out/dict.txt"
: > "$out/fairseq-interactive-failure.txt"
for flags in "" "--print-alignment"; do
	log=$(mktemp)
	if $PY "$here/fairseq_run.py" interactive "$spm/data-bin" --path "$spm/checkpoint_best.pt" --cpu --source-lang en --target-lang de \
		--buffer-size 1 --batch-size 1 --bpe sentencepiece --sentencepiece-model "$spm/spm.model" $flags --replace-unk "$out/dict.txt" \
		< "$spm/test.raw.en" > /dev/null 2> "$log"; then
		echo "fairseq-interactive --replace-unk dict.txt $flags did not fail" >&2
		exit 1
	fi
	echo "fairseq-interactive --replace-unk dict.txt${flags:+ $flags} (fairseq-spm, --buffer-size 1 --batch-size 1):" >> "$out/fairseq-interactive-failure.txt"
	grep -A100 '^Traceback' "$log" | sed "s#$FAIRSEQ_DIR/##; s#$here/##" >> "$out/fairseq-interactive-failure.txt"
	rm -f "$log"
done
echo "fairseq 0.12.2 (4a388e64cd646ed7d7ad8de8fae55df2b8eea91d) fairseq-interactive on fairseq-spm, hydra-core 1.0.7, omegaconf 2.0.6, torch $($PY -c 'import torch; print(torch.__version__)'), made by testdata/toolkits/make_fairseq_replace_unk.sh" > "$out/VERSION"
