#!/bin/sh
# test_recorder_crash_pt.sh: the crash-safety cases with .pt dumps (libmate writes and reads .pt: never skipped).
exec "${top_builddir:-.}/tests/test_recorder_crash" pt
