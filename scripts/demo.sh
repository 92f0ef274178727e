#!/usr/bin/env bash
# demo.sh: the README's first command (`make demo`). Exports the two demo
# date-normalisation models (trained with PyTorch, committed in
# testdata/demo/), translates a few inputs with each, draws attention heat
# maps, measures held-out accuracy of greedy decoding and of beam search
# (width 4, beam.onnx) and verifies the ONNX graphs, beam search included,
# against PyTorch, on the native Go backend (the default) and on ONNX
# Runtime. Expects `make deps build` to have run (make demo does that).
set -euo pipefail
cd "$(dirname "$0")/.."
attnx=bin/attnx
out=out/demo
mkdir -p "$out"
demo=testdata/demo

# heldout MODEL LABEL TRANSLATE-FLAGS...: exact match of the 200 held-out
# inputs, decoded with the flags given.
heldout() {
	local model=$1 label=$2
	shift 2
	cut -f1 "$demo/heldout.txt" | $attnx translate --model "$out/$model" --json --batch 64 "$@" |
		/usr/bin/python3 -c '
import json, sys
want = [l.rstrip("\n").split("\t")[1] for l in open(sys.argv[1], encoding="utf-8")]
got = [json.loads(l)["text"] for l in sys.stdin]
ok = sum(g == w for g, w in zip(got, want))
print("%-28s %d of %d exact (%.1f%%)" % (sys.argv[2] + ":", ok, len(want), 100.0 * ok / len(want)))
' "$demo/heldout.txt" "$label"
}

for model in bahdanau luong; do
	echo
	echo "=== $model: export testdata/demo/$model.pt -> $out/$model"
	$attnx export "$demo/$model.pt" -o "$out/$model" --greedy --beam --force \
		--src-vocab "$demo/src_vocab.json" --tgt-vocab "$demo/tgt_vocab.json"

	echo
	echo "=== $model: translate (greedy.onnx, the whole decoding in one run per batch)"
	$attnx translate --model "$out/$model" --plot "$out/$model-attention.png" <"$demo/examples.txt"

	echo
	echo "=== $model: held-out exact match (200 inputs the model never saw)"
	heldout "$model" "greedy (greedy.onnx)"
	heldout "$model" "beam 4 (beam.onnx)" --engine loop --beam 4

	echo
	echo "=== $model: verify against PyTorch (every output of every step, greedy decoding and beam search of width 4)"
	$attnx verify --model "$out/$model" --checkpoint "$demo/$model.pt" --batch 4 --steps 12 --beam 4
done

# The same task trained as an OpenNMT-py model (bidirectional 2-layer LSTM
# encoder, 2-layer input-feeding decoder, general attention), saved as
# OpenNMT-py 3 saves a checkpoint: no flags, the vocabularies and special
# tokens come from the file.
echo
echo "=== onmt: export testdata/demo/onmt_dates.pt (an OpenNMT-py 3 checkpoint) -> $out/onmt, no flags"
$attnx export "$demo/onmt_dates.pt" -o "$out/onmt" --greedy --beam --force
$attnx export "$demo/onmt_dates.pt" -o "$out/onmt-int8" --weights int8 --greedy --force >/dev/null

echo
echo "=== onmt: translate raw text, with no flags: onmt_translate's defaults (beam 5, OpenNMT-py's beam search; attnx.json \"defaults\")"
head -4 "$demo/examples.txt" | $attnx translate --model "$out/onmt"

echo
echo "=== onmt: held-out exact match"
heldout onmt "onmt_translate's defaults"
heldout onmt "greedy (greedy.onnx)" --beam 1
heldout onmt "beam 4 (beam.onnx)" --engine loop --beam 4 --rules spec
heldout onmt-int8 "int8, greedy" --beam 1

echo
echo "=== onmt: verify against PyTorch (the reference's OpenNMT-py model), and the int8 export's agreement"
$attnx verify --model "$out/onmt" --checkpoint "$demo/onmt_dates.pt" --batch 4 --steps 12 --beam 4
$attnx verify --model "$out/onmt-int8" --checkpoint "$demo/onmt_dates.pt" --batch 200 --steps 12 | tail -1

# The same model shape trained on SentencePiece pieces (a unigram model for
# the sources, a BPE model for the ISO dates), its opt naming them as
# OpenNMT-py's sentencepiece transform does: export finds them beside the
# checkpoint and copies them into the model directory; translate takes
# raw text and gives raw text back, with the pieces in the heat map.
echo
echo "=== onmt-spm: export testdata/demo/onmt_dates_spm.pt (OpenNMT-py 3, SentencePiece transform) -> $out/onmt-spm, no flags"
$attnx export "$demo/onmt_dates_spm.pt" -o "$out/onmt-spm" --greedy --beam --force

echo
echo "=== onmt-spm: translate raw text (pieces in $out/onmt-spm-attention.png)"
head -4 "$demo/examples.txt" | $attnx translate --model "$out/onmt-spm" --plot "$out/onmt-spm-attention.png"
heldout onmt-spm "greedy (greedy.onnx)" --beam 1
$attnx verify --model "$out/onmt-spm" --checkpoint "$demo/onmt_dates_spm.pt" --batch 4 --steps 12 --beam 4 | tail -1

echo
echo "=== onmt-spm: the held-out set as a file: translate --src, score, verify --src (PyTorch on the same text)"
cut -f1 "$demo/heldout.txt" >"$out/heldout.src"
cut -f2 "$demo/heldout.txt" >"$out/heldout.ref"
$attnx translate --model "$out/onmt-spm" --src "$out/heldout.src" --output "$out/heldout.onmt-spm.txt" --beam 4
$attnx score --ref "$out/heldout.ref" "$out/heldout.onmt-spm.txt"
$attnx verify --model "$out/onmt-spm" --checkpoint "$demo/onmt_dates_spm.pt" --src "$out/heldout.src" --ref "$out/heldout.ref"

echo
echo "=== ONNX Runtime (--backend ort) on the same models: the runs above were on the native Go backend, the default"
if $attnx version 2>/dev/null | grep -q '^  backends     .*ort'; then
	for model in luong bahdanau onmt onmt-int8 onmt-spm; do
		cut -f1 "$demo/heldout.txt" | $attnx translate --model "$out/$model" --batch 64 --beam 4 --backend ort >"$out/heldout.$model.ort.txt"
		cut -f1 "$demo/heldout.txt" | $attnx translate --model "$out/$model" --batch 64 --beam 4 --backend go >"$out/heldout.$model.native.txt"
		# The backends round differently in the last bits: a near tie may go
		# either way, so a few lines may differ; more means a bug.
		same=$(paste -d '\n' "$out/heldout.$model.ort.txt" "$out/heldout.$model.native.txt" | awk 'NR % 2 { a = $0; next } $0 == a { n++ } END { print n + 0 }')
		echo "$model: $same of 200 held-out translations (beam 4) identical on ort and go"
		if [ "$same" -lt 198 ]; then
			echo "$model: the native backend's translations differ from ONNX Runtime's" >&2
			exit 1
		fi
	done
	$attnx verify --backend ort --model "$out/luong" --checkpoint "$demo/luong.pt" --batch 4 --steps 12 --beam 4 | tail -1
	$attnx verify --backend ort --model "$out/onmt-spm" --checkpoint "$demo/onmt_dates_spm.pt" --src "$out/heldout.src" --ref "$out/heldout.ref" | tail -1
else
	echo "this attnx was built without cgo: ONNX Runtime is not in it"
fi

echo
echo "Heat maps: $(ls "$out"/*attention*.png | head -4 | tr '\n' ' ')..."
