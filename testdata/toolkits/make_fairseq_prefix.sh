#!/bin/bash
# Makes testdata/toolkits/fairseq-prefix with fairseq 0.12.2's own
# fairseq-generate --prefix-size 2 on make_fairseq_generate.sh's data-bin
# and fairseq-long's checkpoint_best.pt: each sentence's first two
# reference tokens forced (SequenceGenerator._prefix_tokens: the other
# tokens -inf at those steps), the search going on from there, their
# log-probs in the H- score and the P- lines. At its defaults (beam 5:
# prefix2.out) and with --beam 1 (prefix2-beam1.out), its stdout less
# the logger's time-stamped lines. attnx's fairseqgen TestPrefixSize and
# cmd/attnx TestGeneratePrefixSize replay them.
#
# Needs what make_fairseq_generate.sh needs (FAIRSEQ_DIR with libbleu
# built in place, HYDRA_DIR, OMEGACONF_DIR).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$here/fairseq-prefix
mkdir -p "$out"
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
PY=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for v in "prefix2:" "prefix2-beam1:--beam 1"; do
	name=${v%%:*} flags=${v#*:}
	# shellcheck disable=SC2086
	FAIRSEQ_GAPS="$out/$name.gaps.json" $PY "$here/fairseq_run.py" generate "$here/fairseq-generate/data-bin" \
		--path "$here/fairseq-long/checkpoint_best.pt" --cpu --prefix-size 2 $flags > "$work/out" 2> "$work/err" || { cat "$work/err"; exit 1; }
	grep -v -E -e '^ANTLR runtime and generated code versions disagree' -e '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} \| ' "$work/out" > "$out/$name.out"
done
echo "fairseq 0.12.2 (4a388e64cd646ed7d7ad8de8fae55df2b8eea91d) fairseq-generate --prefix-size 2, hydra-core 1.0.7, omegaconf 2.0.6, torch $($PY -c 'import torch; print(torch.__version__)'), model ../fairseq-long/checkpoint_best.pt, data ../fairseq-generate/data-bin, made by testdata/toolkits/make_fairseq_prefix.sh" > "$out/VERSION"
