#!/bin/bash
# Makes testdata/toolkits/onmt-server*/exchanges.json with OpenNMT-py's own
# REST server (onmt/bin/server.py over onmt/translate/
# translation_server.py, run by onmt_run.py as onmt_server is), for each
# release: it serves a fixture checkpoint with the directory's conf.json,
# and onmt_server_client.py sends it each request of its requests.json and
# records the answers byte for byte.
#   onmt-server      3.5.1 on onmt-sp (SentencePiece tokenizer section)
#   onmt-server-230  2.3.0 on onmt-sum-reuse (no tokenizer: pieces in, out)
# serve's TestOnmtServerToolkit serves each checkpoint's attnx export with
# the same conf.json (its model paths naming the export) and compares every
# answer.
#
# What it needs (nothing of it in CI, which reads the files it wrote):
#   ONMT_DIR   OpenNMT-py v3.5.1 (3f0c5f7c24c0a26e7165e054cd8000e18b931799)
#   ONMT2_DIR  OpenNMT-py 2.3.0 (9311a9af8c03eed235117c92e7e9a7ae860a6553)
#   TORCHTEXT_DIR
#              torchtext 0.5.0's package (pure Python), which 2.3.0 imports
#   PYONMTTOK_DIR, TOKENIZER_LIB
#              pyonmttok 1.37.1, as make_onmt.sh (build_toolkit_deps.sh):
#              3.5.1 reads the checkpoint's vocabularies with it.
#   Debian: python3-torch 1.13, python3-sentencepiece 0.1.97,
#   python3-flask 2.2.2, python3-waitress, python3-configargparse,
#   python3-tqdm.
# The stand-ins of onmt_run.py (onmt_standins.py) cover the modules the
# server imports and these requests never call. ONLY=onmt-server (or
# onmt-server-230) makes one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
export LD_LIBRARY_PATH=${TOKENIZER_LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PY=/usr/bin/python3
port=${PORT:-5731}

# run DIR ONMT_TREE PYTHONPATH RELEASE FLAG: serves DIR/conf.json (FLAG:
# 3.5.1's --model_config, 2.3.0's --config), records DIR/exchanges.json.
run() {
	local dir=$1 tree=$2 pypath=$3 release=$4 flag=$5
	cd "$here/$dir" # conf.json's models_root is relative to it
	ONMT_DIR=$tree PYTHONPATH=$pypath $PY "$here/onmt_run.py" server "$flag" conf.json --ip 127.0.0.1 --port "$port" --url_root /translator > server.log 2>&1 &
	local pid=$!
	for _ in $(seq 1 300); do
		if $PY -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/translator/health', timeout=2)" 2>/dev/null; then
			break
		fi
		kill -0 $pid || { cat server.log; exit 1; }
		sleep 1
	done
	$PY "$here/onmt_server_client.py" "http://127.0.0.1:$port" requests.json exchanges.json
	kill $pid
	wait $pid || true
	local tok=""
	[ -n "$pypath" ] && tok=", $(PYTHONPATH=$pypath $PY -c 'import importlib, importlib.util; n = "pyonmttok" if importlib.util.find_spec("pyonmttok") else "torchtext"; print(n, importlib.import_module(n).__version__)')"
	echo "OpenNMT-py $release onmt/bin/server.py, flask $($PY -c 'import flask; print(flask.__version__)'), waitress $($PY -c 'import importlib.metadata as m; print(m.version("waitress"))'), sentencepiece $($PY -c 'import sentencepiece; print(sentencepiece.__version__)')$tok, torch $($PY -c 'import torch; print(torch.__version__)'), made by testdata/toolkits/make_onmt_server.sh" > VERSION
	rm -f server.log
}
if [ -z "${ONLY:-}" ] || [ "$ONLY" = onmt-server ]; then
	run onmt-server "$ONMT_DIR" "$PYONMTTOK_DIR" "3.5.1 (3f0c5f7c24c0a26e7165e054cd8000e18b931799)" --model_config
fi
if [ -z "${ONLY:-}" ] || [ "$ONLY" = onmt-server-230 ]; then
	run onmt-server-230 "$ONMT2_DIR" "$TORCHTEXT_DIR" "2.3.0 (9311a9af8c03eed235117c92e7e9a7ae860a6553)" --config
fi
