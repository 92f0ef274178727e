#!/bin/bash
# Builds, from their own sources, the Python modules the fixture scripts
# need that Debian does not package: pyonmttok 1.37.1 (OpenNMT/Tokenizer)
# and safetensors 0.2.8 (huggingface/safetensors) for make_onmt.sh;
# fairseq 0.12.2 with its Cython extensions, hydra-core 1.0.7 with its
# grammar and omegaconf 2.0.6 for make_fairseq.sh; and unpacks subword-nmt.
# Nothing here runs in CI. Prints the variables make_onmt.sh reads.
#
#   TOKENIZER_GIT=... SAFETENSORS_GIT=... SUBWORD_NMT_GIT=... FAIRSEQ_GIT=... \
#   HYDRA_GIT=... OMEGACONF_GIT=... OUT=/tmp/deps \
#     bash testdata/toolkits/build_toolkit_deps.sh
#
# (each *_GIT a clone or bare mirror of the project). Debian packages it
# uses: cmake g++ libicu-dev libsentencepiece-dev pybind11-dev
# python3-pybind11 python3-setuptools cargo librust-pyo3-dev
# librust-memmap2-dev librust-serde-json-dev librust-libloading-dev
# librust-serde-dev librust-serde-derive-dev cython3 python3-dev antlr4
# python3-antlr4 python3-bitarray.
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

# fairseq 0.12.2: its sources (and scripts/average_checkpoints.py, for
# make_average.sh), and its two Cython extensions built in place.
rm -rf "$out/fairseq" && mkdir -p "$out/fairseq"
git --git-dir="$FAIRSEQ_GIT" archive v0.12.2 fairseq fairseq_cli scripts/average_checkpoints.py | tar x -C "$out/fairseq"
cd "$out/fairseq"
/usr/bin/python3 - <<'PY'
from setuptools import setup, Extension
from Cython.Build import cythonize
import numpy
ext = lambda n: Extension("fairseq.data." + n, ["fairseq/data/%s.pyx" % n], include_dirs=[numpy.get_include()],
                          language="c++", extra_compile_args=["-std=c++11"])
setup(name="fairseq-ext", ext_modules=cythonize([ext("data_utils_fast"), ext("token_block_utils_fast")], language_level=3),
      script_args=["build_ext", "--inplace"])
PY

# hydra-core 1.0.7 with its override grammar generated, and omegaconf 2.0.6.
rm -rf "$out/hydra" "$out/omegaconf" && mkdir -p "$out/hydra" "$out/omegaconf"
git --git-dir="$HYDRA_GIT" archive v1.0.7 hydra | tar x -C "$out/hydra"
(cd "$out/hydra/hydra/grammar" && antlr4 -Dlanguage=Python3 -visitor -o gen -Xexact-output-dir OverrideLexer.g4 OverrideParser.g4)
git --git-dir="$OMEGACONF_GIT" archive v2.0.6 omegaconf | tar x -C "$out/omegaconf"

echo "FAIRSEQ_DIR=$out/fairseq"
echo "HYDRA_DIR=$out/hydra"
echo "OMEGACONF_DIR=$out/omegaconf"
echo "PYONMTTOK_DIR=$out/tok/bindings/python"
echo "TOKENIZER_LIB=$out/tok/install/lib"
echo "SAFETENSORS_DIR=$out/st/bindings/python/py_src"
echo "SUBWORD_NMT_DIR=$out/subword-nmt"
