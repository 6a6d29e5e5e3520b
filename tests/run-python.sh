#!/bin/sh
# run-python.sh [--peers] TEST.py: runs a Python test with the interpreter that has torch and
# numpy (Debian's torch 1.13), or with --peers (or a "# mate-python: peers" line among the
# test's first five) the one with the current peers (torch 2.x, safetensors, flashinfer);
# skips (77) naming what is missing.
peers=
if [ "$1" = --peers ]; then
	peers=1
	shift
elif head -n 5 "$1" 2>/dev/null | grep -q '^# mate-python: peers$'; then
	peers=1
fi
if [ -n "$peers" ]; then
	if [ -z "$PYTHON_PEERS" ]; then
		echo "SKIP: no Python with the current peers (configure PYTHON_PEERS=DIR/bin/python after tests/peers-venv.sh DIR)"
		exit 77
	fi
	exec "$PYTHON_PEERS" "$@"
fi
if [ -z "$PYTHON_TORCH" ]; then
	echo "SKIP: no Python with torch and numpy (apt-get install python3-torch python3-numpy)"
	exit 77
fi
exec "$PYTHON_TORCH" "$@"
