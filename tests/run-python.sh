#!/bin/sh
# run-python.sh: runs a Python test with the interpreter that has torch and numpy, or skips (77).
if [ -z "$PYTHON_TORCH" ]; then
	echo "SKIP: no Python with torch and numpy (apt-get install python3-torch python3-numpy)"
	exit 77
fi
exec "$PYTHON_TORCH" "$@"
