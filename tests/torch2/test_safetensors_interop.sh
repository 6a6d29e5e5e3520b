#!/bin/sh
# test_safetensors_interop.sh: tests/test_safetensors_interop.py again, under the current peers' Python (torch 2.x, PYTHON_PEERS).
exec "$top_srcdir/tests/run-python.sh" --peers "$top_srcdir/tests/test_safetensors_interop.py"
