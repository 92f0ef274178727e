#!/usr/bin/env bash
# Peak resident memory of `attnx translate --src` on each backend, one
# fresh process per row (GNU time's maximum RSS), for the models of an
# `attnx bench --work-dir DIR` run: DIR/ARCH/model-WEIGHTS. The source file
# is LINES lines of 12 random token ids. Usage:
#   scripts/peak-rss.sh ATTNX DIR [LINES]
set -euo pipefail
attnx=$1 dir=$2 lines=${3:-256}
src=$(mktemp)
trap 'rm -f "$src"' EXIT
awk -v n="$lines" 'BEGIN { srand(7); for (i = 0; i < n; i++) { s = ""; for (j = 0; j < 12; j++) s = s (j ? " " : "") int(4 + rand() * 9000); print s } }' >"$src"
printf '| arch | weights | decoding | ort peak RSS MB | go peak RSS MB | ort s | go s |\n|---|---|---|---|---|---|---|\n'
for m in "$dir"/*/model-*; do
	arch=$(basename "$(dirname "$m")") w=${m##*/model-}
	for beam in 1 4; do
		row="| $arch | $w | $([ "$beam" = 1 ] && echo greedy || echo "beam $beam") |"
		declare -A kb secs
		for be in ort go; do
			out=$( { /usr/bin/time -f '%M %e' "$attnx" translate --model "$m" --backend "$be" --threads 1 --lanes 1 \
				--batch 32 --beam "$beam" --max-len 20 --src "$src" >/dev/null; } 2>&1 | tail -1)
			kb[$be]=${out% *} secs[$be]=${out#* }
		done
		echo "$row $((kb[ort] / 1024)) | $((kb[go] / 1024)) | ${secs[ort]} | ${secs[go]} |"
	done
done
