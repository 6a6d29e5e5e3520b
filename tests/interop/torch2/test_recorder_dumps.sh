#!/bin/sh
# test_recorder_dumps.sh: tests/interop/test_recorder_dumps.py again, under the current peers' Python (torch 2.x, PYTHON_PEERS).
exec "$top_srcdir/tests/run-python.sh" --peers "$top_srcdir/tests/interop/test_recorder_dumps.py"
