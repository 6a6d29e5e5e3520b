#!/bin/sh
# test_recorder_crash_pt.sh: the crash-safety cases with .pt dumps (77 while the .pt writer is missing).
exec "${top_builddir:-.}/tests/test_recorder_crash" pt
