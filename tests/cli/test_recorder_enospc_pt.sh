#!/bin/sh
# test_recorder_enospc_pt.sh: the full-disk test with .pt dumps (libmate writes and reads .pt: never skipped).
FORMAT=pt exec sh "${top_srcdir:-.}/tests/cli/test_recorder_enospc.sh"
