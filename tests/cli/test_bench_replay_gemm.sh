#!/bin/sh
# bench_replay_gemm.sh: bench/replay-gemm stops with exit 1 when the mm kernel fails in its timed loop.
set -u
b=$top_builddir
. "$top_srcdir/tests/checks.sh"
out=$("$b/tests/replay-gemm-fail" 64 3 2>&1)
rc=$?
check [ $rc -eq 1 ] || fail "a failing mm exits 1, got $rc: $out"
checks_ran
echo "$out" | grep -q "^replay-gemm: mm, repetition 1: mm: failing on purpose (call 2)$" ||
	fail "the failure is named: $out"
checks_ran
echo "$out" | grep -q "GFLOP/s" && fail "no speed is reported for a failing kernel: $out"
checks_done
