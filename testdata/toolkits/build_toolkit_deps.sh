#!/bin/bash
# Builds, from their own sources, the Python modules make_onmt.sh needs that
# Debian does not package: pyonmttok 1.37.1 (OpenNMT/Tokenizer) and
# safetensors 0.2.8 (huggingface/safetensors), and unpacks subword-nmt.
# Nothing here runs in CI. Prints the variables make_onmt.sh reads.
#
#   TOKENIZER_GIT=... SAFETENSORS_GIT=... SUBWORD_NMT_GIT=... OUT=/tmp/deps \
#     bash testdata/toolkits/build_toolkit_deps.sh
#
# (each *_GIT a clone or bare mirror of the project). Debian packages it
# uses: cmake g++ libicu-dev libsentencepiece-dev pybind11-dev
# python3-pybind11 python3-setuptools cargo librust-pyo3-dev
# librust-memmap2-dev librust-serde-json-dev librust-libloading-dev
# librust-serde-dev librust-serde-derive-dev.
set -euo pipefail
out=${OUT:-/tmp/toolkit-deps}
mkdir -p "$out"

# pyonmttok: the Tokenizer links Debian's sentencepiece 0.1.97 in place of
# its bundled submodule (0.1.96), which needs C++17 for that header and
# string_views for 0.1.97's SetVocabulary (set_vocabulary is not used by
# OpenNMT-py's vocabulary building or transforms).
rm -rf "$out/tok" && mkdir -p "$out/tok"
git --git-dir="$TOKENIZER_GIT" archive v1.37.1 | tar x -C "$out/tok"
cd "$out/tok"
python3 - <<'PY'
s = open("CMakeLists.txt").read()
a = s.index("option(SPM_ENABLE_SHARED")
b = s.index("if(MSVC)\n  if(NOT BUILD_SHARED_LIBS)")
s = s[:a] + s[b:]
s = s.replace("set(CMAKE_CXX_STANDARD 11)", "set(CMAKE_CXX_STANDARD 17)")
s = s.replace("  ${CMAKE_CURRENT_SOURCE_DIR}/third_party/sentencepiece/src\n", "")
s = s.replace("  sentencepiece-static\n  sentencepiece_train-static\n  )", "  sentencepiece\n  sentencepiece_train\n  )")
open("CMakeLists.txt", "w").write(s)
c = open("src/SentencePiece.cc").read()
c = c.replace("    auto status = _processor->SetVocabulary(vocabulary);",
              "    std::vector<absl::string_view> views(vocabulary.begin(), vocabulary.end());\n"
              "    auto status = _processor->SetVocabulary(views);")
open("src/SentencePiece.cc", "w").write(c)
PY
mkdir -p build && cd build
cmake .. -DLIB_ONLY=ON -DCMAKE_INSTALL_PREFIX="$out/tok/install" > /dev/null
make -j"$(nproc)" install > /dev/null
cd ../bindings/python
sed -i 's/setup_requires=\["pytest-runner"\],\?//' setup.py
TOKENIZER_ROOT="$out/tok/install" /usr/bin/python3 setup.py build_ext --inplace > /dev/null

# safetensors 0.2.8: its Rust extension from Debian's crates, offline.
rm -rf "$out/st" && mkdir -p "$out/st/.cargo"
git --git-dir="$SAFETENSORS_GIT" archive v0.2.8 | tar x -C "$out/st"
printf '[source.crates-io]\nreplace-with = "debian"\n[source.debian]\ndirectory = "/usr/share/cargo/registry"\n[net]\noffline = true\n' > "$out/st/.cargo/config.toml"
cd "$out/st/bindings/python"
rm -f Cargo.lock
cargo build --release > /dev/null 2>&1
cp target/release/libsafetensors_rust.so py_src/safetensors/safetensors_rust.cpython-"$(/usr/bin/python3 -c 'import sys; print("%d%d" % sys.version_info[:2])')"-x86_64-linux-gnu.so

rm -rf "$out/subword-nmt" && mkdir -p "$out/subword-nmt"
git --git-dir="$SUBWORD_NMT_GIT" archive v0.3.8 | tar x -C "$out/subword-nmt"

echo "PYONMTTOK_DIR=$out/tok/bindings/python"
echo "TOKENIZER_LIB=$out/tok/install/lib"
echo "SAFETENSORS_DIR=$out/st/bindings/python/py_src"
echo "SUBWORD_NMT_DIR=$out/subword-nmt"
