#!/usr/bin/env bash
# quant-accuracy.sh: the accuracy table of the reduced-precision exports
# (`make quant-accuracy`). For each demo model (testdata/demo/*.pt) and each
# weights precision (fp32, int8, int4) it exports the model, scores the
# held-out set (exact match, greedy decoding, at batch 1 and at batch 64 as
# scripts/demo.sh does: int8 quantizes activations per batch), and runs
# attnx verify on 1,000 random sentences against the float32 PyTorch model:
# sentences and tokens identical, largest log-prob deviation. Prints a
# Markdown table. Expects `make deps build` to have run.
set -euo pipefail
cd "$(dirname "$0")/.."
attnx=bin/attnx
demo=testdata/demo
out=${QUANT_ACCURACY_DIR:-out/quant-accuracy}
mkdir -p "$out"

heldout() { # model dir, batch -> "N/200"
	cut -f1 "$demo/heldout.txt" | $attnx translate --model "$1" --json --batch "$2" |
		/usr/bin/python3 -c '
import json, sys
want = [l.rstrip("\n").split("\t")[1] for l in open(sys.argv[1], encoding="utf-8")]
got = [json.loads(l)["text"] for l in sys.stdin]
print("%d/%d" % (sum(g == w for g, w in zip(got, want)), len(want)))
' "$demo/heldout.txt"
}

echo "| model | weights | decoder.onnx + encoder.onnx | held-out exact (batch 1) | held-out exact (batch 64) | random sentences identical to fp32 PyTorch | tokens identical | largest log-prob deviation | verify |"
echo "|---|---|---|---|---|---|---|---|---|"
for model in bahdanau luong; do
	for w in fp32 int8 int4; do
		dir="$out/$model-$w"
		$attnx export "$demo/$model.pt" -o "$dir" --greedy --force --weights "$w" \
			--src-vocab "$demo/src_vocab.json" --tgt-vocab "$demo/tgt_vocab.json" >/dev/null
		bytes=$(($(stat -c %s "$dir/encoder.onnx") + $(stat -c %s "$dir/decoder.onnx")))
		h1=$(heldout "$dir" 1)
		h64=$(heldout "$dir" 64)
		set +e
		$attnx verify --model "$dir" --checkpoint "$demo/$model.pt" --batch 1000 --src-len 12 --steps 20 --json >"$dir/verify.json" 2>"$dir/verify.err"
		code=$?
		set -e
		if [ "$code" -gt 1 ]; then
			cat "$dir/verify.err" >&2
			exit 1
		fi
		/usr/bin/python3 - "$dir/verify.json" "$model" "$w" "$bytes" "$h1" "$h64" <<'PY'
import json, sys
path, model, w, nbytes, h1, h64 = sys.argv[1:]
o = json.load(open(path))
verdict = "OK" if o["ok"] else "exit 1"
if o.get("agreement"):
    a = o["agreement"][0]
    sent = "%d/%d (%.1f%%)" % (a["sentences_identical"], a["sentences"], 100 * a["sentence_rate"])
    tok = "%d/%d (%.2f%%)" % (a["tokens_identical"], a["tokens"], 100 * a["token_rate"])
    dev = "%.3g" % a["max_log_prob_dev"] if a.get("max_log_prob_dev") is not None else "not finite"
    verdict += " (>= %g)" % o["min_agreement"]
else:
    same = all(g["identical"] for g in o["greedy"])
    n = o["batch"]
    sent = "%d/%d (float32 tolerance)" % (n if same else 0, n)
    tok = "identical" if same else "differ"
    lp = [s for s in o["outputs"] if s["output"] == "log_probs"][0]
    dev = "%.2g" % lp["max_abs_err"]
    bad = ["%s in %d of %d steps" % (s["output"], s["failed_steps"], s["steps"]) for s in o["outputs"] if not s["ok"]]
    if bad:
        verdict += ": float32 tolerance exceeded by " + ", ".join(bad)
print("| %s | %s | %.0f KiB | %s | %s | %s | %s | %s | %s |" % (model, w, int(nbytes) / 1024, h1, h64, sent, tok, dev, verdict))
PY
	done
done
