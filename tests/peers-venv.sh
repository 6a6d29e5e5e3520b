#!/bin/sh
# peers-venv.sh DIR: makes (or brings up to date) a Python virtual environment in DIR
# holding the interop peers: torch 2.x, safetensors, numpy, pyzmq, pandas from
# tests/peers-requirements.txt, and flashinfer-python without its dependencies (the tests
# load only its flashinfer/api_logging.py). Prints DIR/bin/python on success.
#
# The newest flashinfer-python on PyPI goes beside the pinned one, in DIR/flashinfer-newest
# (pip --target, no dependencies), looked up again on every run so that a new release's drift
# shows up in CI: tests/ci.sh runs the FlashInfer peer tests a second time with
# MATE_FLASHINFER=DIR/flashinfer-newest. Without the network, the one already there stays.
set -eu
dir=${1:?usage: peers-venv.sh DIR}
here=$(cd "$(dirname "$0")" && pwd)
req=$here/peers-requirements.txt
flashinfer=flashinfer-python==0.7.2.post1
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
stamp=$dir/.mate-peers
want=$(cat "$req"; echo "$flashinfer")
newest() {
	local pin
	pin=$("$dir/bin/python" -m pip index versions flashinfer-python 2>/dev/null |
		sed -n 's/^flashinfer-python (\(.*\))$/\1/p')
	[ -n "$pin" ] || { echo "peers-venv: PyPI did not answer; flashinfer-newest kept" >&2; return 0; }
	[ -f "$dir/flashinfer-newest/flashinfer_python-$pin.dist-info/METADATA" ] && return 0
	rm -rf "$dir/flashinfer-newest"
	"$dir/bin/python" -m pip install -q --no-deps --target "$dir/flashinfer-newest" \
		"flashinfer-python==$pin" >&2
}
if [ -x "$dir/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	newest
	echo "$dir/bin/python"
	exit 0
fi
"$py" -m venv "$dir" >&2
"$dir/bin/python" -m pip install -q --upgrade -r "$req" >&2
"$dir/bin/python" -m pip install -q --no-deps "$flashinfer" >&2
"$dir/bin/python" -c 'import torch, safetensors, numpy, zmq, pandas' >&2
printf '%s\n' "$want" > "$stamp"
newest
echo "$dir/bin/python"
