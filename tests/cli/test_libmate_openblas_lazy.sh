#!/bin/sh
# libmate-openblas-lazy.sh: libmate does not link OpenBLAS (lib/kernels/blas.c opens it when a GEMM first runs): libmate.so has no BLAS among its needed libraries, and mate-list-dumps never loads one. (A replayed GEMM loading it is test_record_cblas.sh.)
set -u
. "$top_srcdir/tests/checks.sh"
lib="$top_builddir/.libs/libmate.so"
list="$top_builddir/src/replay/mate-list-dumps"

work=$(mktemp -d "${TMPDIR:-/tmp}/mate-lazy.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/d"

# the libraries ld.so loads for mate-list-dumps (through libtool's wrapper, if any)
check env LD_DEBUG=files "$list" -q "$work/d" >/dev/null 2>"$work/ld.txt" || fail_stop "mate-list-dumps failed"
grep -q 'file=.*libc\.so' "$work/ld.txt" || { echo "SKIP: LD_DEBUG=files reports nothing here"; exit 77; }
checks_ran   # a pipeline
if grep 'file=' "$work/ld.txt" | grep -i 'blas' | grep -vqi 'cublas'; then
	fail_stop "mate-list-dumps loaded a BLAS: $(grep 'file=' "$work/ld.txt" | grep -i blas | grep -vi cublas | head -3)"
fi
if [ -f "$lib" ] && command -v readelf >/dev/null 2>&1; then
	checks_ran
	if readelf -d "$lib" | grep NEEDED | grep -i 'blas' | grep -vqi 'cublas'; then
		fail_stop "libmate.so links a BLAS: $(readelf -d "$lib" | grep NEEDED | grep -i blas)"
	fi
fi
checks_done
