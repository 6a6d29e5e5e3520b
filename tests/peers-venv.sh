#!/bin/sh
# peers-venv.sh DIR: makes (or brings up to date) a Python virtual environment in DIR
# holding the interop peers: torch 2.x, safetensors, numpy, pyzmq, pandas from
# tests/peers-requirements.txt, and flashinfer-python without its dependencies (the tests
# load only its flashinfer/api_logging.py). Prints DIR/bin/python on success.
set -eu
dir=${1:?usage: peers-venv.sh DIR}
here=$(cd "$(dirname "$0")" && pwd)
req=$here/peers-requirements.txt
flashinfer=flashinfer-python==0.7.2.post1
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
stamp=$dir/.mate-peers
want=$(cat "$req"; echo "$flashinfer")
if [ -x "$dir/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	echo "$dir/bin/python"
	exit 0
fi
"$py" -m venv "$dir" >&2
"$dir/bin/python" -m pip install -q --upgrade -r "$req" >&2
"$dir/bin/python" -m pip install -q --no-deps "$flashinfer" >&2
"$dir/bin/python" -c 'import torch, safetensors, numpy, zmq, pandas' >&2
printf '%s\n' "$want" > "$stamp"
echo "$dir/bin/python"
