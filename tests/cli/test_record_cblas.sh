#!/bin/sh
# test_record_cblas.sh: a C program linked against CBLAS and the Fortran BLAS, recorded at level 10, listed by its parameters' names with each GEMM's row-major product, and replayed bit-exactly through the same BLAS.
. "$top_srcdir/tests/tools/record-common.sh"
REPLAY="$top_builddir/src/replay/mate-replay"
PROG="$top_builddir/tests/record-blas-prog"

cd "$WORK" || exit 99
plain=$("$PROG") || fail "the program fails on its own"
out=$("$RECORD" -l 10 --safetensors -d dumps -o log.txt -- "$PROG" 2>err.txt)
expect_status 0 $? "recorded run"
check [ "$out" = "$plain" ] || fail "the recorded program printed '$out', not '$plain'"
check grep -q '6 calls recorded in 1 process; 6 dumps' err.txt || fail "summary: $(cat err.txt)"
# without -o the log goes to standard error: the program's own output, byte for byte, on its
# standard output (a pipe of it reads only the program); with MATE_LOGDEST the user's choice
"$RECORD" -l 3 -- "$PROG" >out1.txt 2>err1.txt
expect_status 0 $? "recorded run, no -o"
"$PROG" >plain.txt
check cmp -s out1.txt plain.txt || fail "mate-record -- prog | cmp - <(prog): $(head -c 300 out1.txt)"
check grep -q "MATE API Call: cblas_sgemm" err1.txt || fail "the log is not on standard error: $(head -c 300 err1.txt)"
MATE_LOGDEST=stdout "$RECORD" -l 1 -- "$PROG" >out2.txt 2>/dev/null
check grep -q "MATE API Call: cblas_sgemm" out2.txt || fail "MATE_LOGDEST=stdout is not kept"
for f in cblas_sgemm cblas_dgemm sgemm_ dgemm_; do
	check ls -d dumps/*_${f}_call0001 >/dev/null 2>&1 || fail "no dump of $f"
done
check grep -q "arg\[0\]:" log.txt && grep -q "CBLAS_ORDER.CblasColMajor (value=102)" log.txt ||
	fail "level-10 log lacks the arguments"

# the listing names the arguments by the record's signature, and shows a GEMM as the
# row-major product its caller wrote (PyTorch's x @ w is a column-major sgemm_)
"$top_builddir/src/replay/mate-list-dumps" --unique dumps >unique.txt 2>&1
check grep -q '^ *1  [0-9a-f]\{16\}  sgemm_(a=float32\[29, 17\] stride (1, 40), b=float32\[29, 23\] stride (1, 31), c=float32\[17, 23\] stride (1, 33), transa="T", transb="N", m=17, n=23, k=29, alpha=1.25, lda=40, ldb=31, beta=-0.5, ldc=33)  = \[23, 29\] @ \[29, 17\] -> \[23, 17\] row-major$' unique.txt ||
	fail "sgemm_ by its parameters' names, with its row-major product: $(grep sgemm_ unique.txt)"
check grep -q 'cblas_sgemm(A=float32\[30, 36\], .*, M=30, N=25, K=36, .*)  = \[30, 36\] @ \[36, 25\] -> \[30, 25\]$' unique.txt ||
	fail "CblasRowMajor's product as written: $(grep cblas_sgemm unique.txt)"
check grep -q 'arg_[0-9]' unique.txt && fail "arg_N left where the signature names them: $(cat unique.txt)"
"$REPLAY" dumps >replay.txt 2>&1
expect_status 0 $? "replay"
check [ "$(grep -c 'Passed (bit-exact)' replay.txt)" = 6 ] || fail "six bit-exact replays: $(cat replay.txt)"

# another BLAS through MATE_BLAS: one that cannot be opened, and one that
# is no BLAS, each a clear error and a failed replay (exit 1), no crash
MATE_BLAS=/nonexistent/libnoblas.so.0 "$REPLAY" dumps >noblas.txt 2>&1
expect_status 1 $? "replay with a missing MATE_BLAS"
check grep -q 'cannot use MATE_BLAS: /nonexistent/libnoblas.so.0' noblas.txt ||
	fail "no error naming MATE_BLAS: $(cat noblas.txt)"
check [ "$(grep -c 'Passed' noblas.txt)" = 0 ] || fail "a GEMM passed without a BLAS: $(cat noblas.txt)"
MATE_BLAS=libc.so.6 "$REPLAY" dumps >noblas.txt 2>&1
expect_status 1 $? "replay with a MATE_BLAS that is no BLAS"
check grep -q 'libc.so.6 has no cblas_sgemm' noblas.txt || fail "no missing symbol named: $(cat noblas.txt)"
# and the default again: all six pass
"$REPLAY" dumps >replay.txt 2>&1
expect_status 0 $? "replay with the default BLAS"

# Fortran's column-major operands are recorded as column-major views
check grep -q '"stride": \[1, 40\]' dumps/*_sgemm__call0001/metadata.jsonl ||
	fail "sgemm_'s A is not a (1, lda) view"

# a wrong recorded result is caught: exit 1, Mismatch
d=$(ls -d dumps/*_dgemm__call0001)
cp "$d/inplace.safetensors" orig.st
# flip one byte in the last element of C after the call (in-place file; its data ends the file)
size=$(wc -c < orig.st)
head -c $((size - 1)) orig.st > "$d/inplace.safetensors"
printf '\177' >> "$d/inplace.safetensors"
"$REPLAY" "$d" >replay.txt 2>&1
expect_status 1 $? "replay of a changed result"
check grep -q 'Mismatch' replay.txt || fail "no mismatch reported: $(cat replay.txt)"
finish
