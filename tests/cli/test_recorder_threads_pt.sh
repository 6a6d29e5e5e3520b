#!/bin/sh
# test_recorder_threads_pt.sh: 32,000 .pt dumps from 16 threads (libmate writes and reads .pt: never skipped).
exec "${top_builddir:-.}/tests/test_recorder_threads" pt
