#!/bin/sh
# test_cuda_module.sh: the CUDA module is found beside libmate and opened on
# first use (test_cuda_module); a missing one, a library that is not one, or
# one from another mate version or ABI (tests/fakes/cuda_module_other.c) is named in
# the error and the host backend is used.
set -eu
t="$top_builddir/tests/test_cuda_module"
[ -x "$t" ] || { echo "SKIP: built without CUDA"; exit 77; }
unset MATE_CUDA_MODULE || true
"$t"
"$t" /nonexistent/mate-cuda.so "no file /nonexistent/mate-cuda.so"
lib=$(ls "$top_builddir"/.libs/libmate.so.[0-9]* 2>/dev/null | head -n 1 || true)
[ -n "$lib" ] || { echo "no shared libmate in $top_builddir/.libs" >&2; exit 1; }
"$t" "$lib" "is not a mate CUDA module"
other="$top_builddir/tests/.libs/cuda-module-other.so"
[ -f "$other" ] || { echo "no $other" >&2; exit 1; }
"$t" "$other" "is from mate 0.0.0-other, not"
MATE_TEST_MODULE_ABI=1 "$t" "$other" "is from mate (another), not"
echo "ok"
