#!/bin/bash
# Makes testdata/toolkits/onmt-server/exchanges.json with OpenNMT-py 3.5.1's
# own REST server (onmt/bin/server.py over onmt/translate/
# translation_server.py, run by onmt_run.py as onmt_server is): it serves
# onmt-sp's checkpoint with onmt-server/conf.json, and
# onmt_server_client.py sends it each request of onmt-server/requests.json
# and records the answers byte for byte. serve's TestOnmtServerToolkit
# serves onmt-sp's attnx export with the same conf.json (its model paths
# mapped to the export) and compares every answer.
#
# What it needs (nothing of it in CI, which reads the files it wrote):
#   ONMT_DIR   OpenNMT-py v3.5.1 (3f0c5f7c24c0a26e7165e054cd8000e18b931799)
#   PYONMTTOK_DIR, TOKENIZER_LIB
#              pyonmttok 1.37.1, as make_onmt.sh (build_toolkit_deps.sh):
#              3.5.1 reads the checkpoint's vocabularies with it.
#   Debian: python3-torch 1.13, python3-sentencepiece 0.1.97,
#   python3-flask 2.2.2, python3-waitress, python3-configargparse.
# The stand-ins of onmt_run.py (onmt_standins.py) cover the modules the
# server imports and these requests never call.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
export LD_LIBRARY_PATH=${TOKENIZER_LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$PYONMTTOK_DIR
PY=/usr/bin/python3
port=${PORT:-5731}
cd "$here/onmt-server" # conf.json's models_root is relative to it
$PY "$here/onmt_run.py" server --model_config conf.json --ip 127.0.0.1 --port "$port" --url_root /translator > server.log 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
	if $PY -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/translator/health', timeout=2)" 2>/dev/null; then
		break
	fi
	kill -0 $pid || { cat server.log; exit 1; }
	sleep 1
done
$PY "$here/onmt_server_client.py" "http://127.0.0.1:$port" requests.json exchanges.json
echo "OpenNMT-py 3.5.1 (3f0c5f7c24c0a26e7165e054cd8000e18b931799) onmt/bin/server.py, flask $($PY -c 'import flask; print(flask.__version__)'), waitress $($PY -c 'import importlib.metadata as m; print(m.version("waitress"))'), sentencepiece $($PY -c 'import sentencepiece; print(sentencepiece.__version__)'), pyonmttok $($PY -c 'import pyonmttok; print(pyonmttok.__version__)'), torch $($PY -c 'import torch; print(torch.__version__)'), made by testdata/toolkits/make_onmt_server.sh" > VERSION
rm -f server.log
