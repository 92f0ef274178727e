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
#   curl (a test runs the README's serve example as written)
#   ko (github.com/google/ko, built with go install) -> .deps/bin/ko: make
#   image builds the static image with it, and a test checks that image
set -euo pipefail

cd "$(dirname "$0")/.."
ORT_VERSION=1.24.1
ORT_DIR=.deps/onnxruntime/lib
ORT_LIB=$ORT_DIR/libonnxruntime.so.1
ORT_TGZ_SHA256=57181cf6e6e711b155c5b942d591fd63ded0b5de5c4922d51fd994e7f6ac2772
ORT_LIB_SHA256=53ef1ac028dd1b05554b8da28d9159eb3876f99868193d2aaa6e67f0243c23d4
ORT_LIB_SHA256_ARM64=7954e8bdedb497f830c6a679e818d98399b7f4d81ade1126c3e0be74d28111ab
case "$(uname -m)" in
x86_64) ORT_ARCH=x64 ;;
aarch64 | arm64) ORT_ARCH=arm64 ORT_LIB_SHA256=$ORT_LIB_SHA256_ARM64 ;;
*) ORT_ARCH="" ;;
esac

say() { echo "install-deps: $*" >&2; }

# --- Debian packages -------------------------------------------------------
need=()
for pkg in protobuf-compiler python3-onnx libonnx-testdata python3-torch chromium sentencepiece curl libicu-dev g++; do
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

# --- ko ----------------------------------------------------------------------
KO_VERSION=v0.19.1
if [ "$(.deps/bin/ko version 2>/dev/null)" != "$KO_VERSION" ]; then
	say "installing ko $KO_VERSION into .deps/bin (go install github.com/google/ko@$KO_VERSION)"
	GOBIN="$PWD/.deps/bin" go install "github.com/google/ko@$KO_VERSION"
fi

# --- ONNX Runtime ----------------------------------------------------------
if [ -z "$ORT_ARCH" ]; then
	say "no ONNX Runtime package for $(uname -m): attnx runs on its native backend (--backend go; CGO_ENABLED=0 builds need nothing else)"
	exit 0
fi
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
lib=package/bin/napi-v6/linux/$ORT_ARCH/libonnxruntime.so.1
tar -xzf "$tgz" -C "$tmp" "$lib"
echo "$ORT_LIB_SHA256  $tmp/$lib" | sha256sum -c --status ||
	{ say "checksum mismatch for libonnxruntime.so.1 ($ORT_ARCH)"; exit 1; }
mkdir -p "$ORT_DIR"
cp "$tmp/$lib" "$ORT_LIB.tmp"
mv "$ORT_LIB.tmp" "$ORT_LIB"
say "ONNX Runtime installed at $ORT_LIB"
