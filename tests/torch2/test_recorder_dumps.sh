#!/bin/sh
# test_recorder_dumps.sh: tests/test_recorder_dumps.py again, under the current peers' Python (torch 2.x, PYTHON_PEERS).
exec "$top_srcdir/tests/run-python.sh" --peers "$top_srcdir/tests/test_recorder_dumps.py"
