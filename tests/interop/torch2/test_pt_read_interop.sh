#!/bin/sh
# test_pt_read_interop.sh: tests/interop/test_pt_read_interop.py again, under the current peers' Python (torch 2.x, PYTHON_PEERS).
exec "$top_srcdir/tests/run-python.sh" --peers "$top_srcdir/tests/interop/test_pt_read_interop.py"
