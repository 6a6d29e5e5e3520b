#!/bin/sh
# test_recorder_threads_pt.sh: 32,000 .pt dumps from 16 threads (77 while the .pt writer is missing).
exec "${top_builddir:-.}/tests/test_recorder_threads" pt
