#!/usr/bin/env bash
# install-deps.sh installs what attnx needs on a fresh Debian machine and
# skips whatever is already there. It is idempotent: `make test` and
# `make demo` call it every time.
#
#   ONNX Runtime 1.24.1 (CPU shared library, from the npm package
#   onnxruntime-node, no install scripts run) -> .deps/onnxruntime/lib/
#   Debian packages: protobuf-compiler python3-onnx libonnx-testdata python3-torch
#   chromium (headless, for the attention viewer's browser test)
#   sentencepiece (spm_train/spm_encode/spm_decode: package subword's tests
#   compare with SentencePiece itself)
set -euo pipefail

cd "$(dirname "$0")/.."
ORT_VERSION=1.24.1
ORT_DIR=.deps/onnxruntime/lib
ORT_LIB=$ORT_DIR/libonnxruntime.so.1
ORT_TGZ_SHA256=57181cf6e6e711b155c5b942d591fd63ded0b5de5c4922d51fd994e7f6ac2772
ORT_LIB_SHA256=53ef1ac028dd1b05554b8da28d9159eb3876f99868193d2aaa6e67f0243c23d4

say() { echo "install-deps: $*" >&2; }

# --- Debian packages -------------------------------------------------------
need=()
for pkg in protobuf-compiler python3-onnx libonnx-testdata python3-torch chromium sentencepiece; do
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
		need+=("$pkg")
	fi
done
if ((${#need[@]})); then
	SUDO=""
	if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
	say "installing Debian packages: ${need[*]} (python3-torch is about 160 MB, chromium about 350 MB installed)"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# --- ONNX Runtime ----------------------------------------------------------
if [ -f "$ORT_LIB" ] && echo "$ORT_LIB_SHA256  $ORT_LIB" | sha256sum -c --status; then
	exit 0
fi
say "installing ONNX Runtime $ORT_VERSION from npm package onnxruntime-node@$ORT_VERSION"
command -v npm >/dev/null || { say "npm is required (apt-get install npm)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "onnxruntime-node@$ORT_VERSION" >/dev/null)
tgz="$tmp/onnxruntime-node-$ORT_VERSION.tgz"
echo "$ORT_TGZ_SHA256  $tgz" | sha256sum -c --status || { say "checksum mismatch for $tgz"; exit 1; }
tar -xzf "$tgz" -C "$tmp" package/bin/napi-v6/linux/x64/libonnxruntime.so.1
echo "$ORT_LIB_SHA256  $tmp/package/bin/napi-v6/linux/x64/libonnxruntime.so.1" | sha256sum -c --status ||
	{ say "checksum mismatch for libonnxruntime.so.1"; exit 1; }
mkdir -p "$ORT_DIR"
cp "$tmp/package/bin/napi-v6/linux/x64/libonnxruntime.so.1" "$ORT_LIB.tmp"
mv "$ORT_LIB.tmp" "$ORT_LIB"
say "ONNX Runtime installed at $ORT_LIB"
