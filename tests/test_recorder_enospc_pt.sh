#!/bin/sh
# test_recorder_enospc_pt.sh: the full-disk test with .pt dumps (77 while the .pt writer is missing).
FORMAT=pt exec sh "${top_srcdir:-.}/tests/test_recorder_enospc.sh"
