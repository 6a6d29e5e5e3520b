#!/bin/sh
# test_recorder_inplace.sh: tests/interop/test_recorder_inplace.py again, under the current peers' Python (torch 2.x, PYTHON_PEERS).
exec "$top_srcdir/tests/run-python.sh" --peers "$top_srcdir/tests/interop/test_recorder_inplace.py"
