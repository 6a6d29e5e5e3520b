#!/bin/sh
# test_record_gpu.sh: on a machine with an NVIDIA GPU, a real CUDA program (cudaMalloc, copies,
# cuBLAS GEMMs) is recorded under mate-record and replayed; exits 77 without CUDA or a device.
. "$top_srcdir/tests/tools/record-common.sh"
REPLAY="$top_builddir/src/replay/mate-replay"
PROG="$top_builddir/tests/record-cuda-real"
if [ ! -x "$PROG" ]; then
	echo "SKIP: not a CUDA build"
	exit 77
fi
cd "$WORK" || exit 99
"$PROG" >plain.txt 2>&1
rc=$?
if [ $rc = 77 ]; then
	echo "SKIP: $(cat plain.txt)"
	exit 77
fi
expect_status 0 $rc "the program on its own"

"$RECORD" -l 10 -d dumps --memlog mem.csv -o log.txt -- "$PROG" >out.txt 2>err.txt
expect_status 0 $? "recorded run"
cat err.txt
check cmp -s plain.txt out.txt || fail "output changed: $(cat out.txt) vs $(cat plain.txt)"
check grep -q '3 calls recorded in 1 process; 3 dumps' err.txt || fail "summary: $(cat err.txt)"
check grep -q '4 device allocations' err.txt || fail "allocations: $(cat err.txt)"
check [ "$(grep -c ',allocate,' mem.csv)" = 4 ] && [ "$(grep -c ',free,' mem.csv)" = 4 ] ||
	fail "memory log: $(cat mem.csv)"
check grep -q 'cublas:0(cublasGemmEx)' log.txt || fail "no profile in the log"
grep -q 'static CUDA runtime' err.txt && fail "the shared runtime taken for a static one"

# on the GPU, through cuBLAS again
"$REPLAY" --device cuda dumps >replay.txt 2>&1
expect_status 0 $? "replay on the GPU"
cat replay.txt
check [ "$(grep -c 'Passed' replay.txt)" = 3 ] || fail "GPU replay: $(cat replay.txt)"
# on the CPU (OpenBLAS): within the dtype's tolerance
"$REPLAY" --device cpu --rtol 1e-4 --atol 1e-4 dumps >replay-cpu.txt 2>&1
expect_status 0 $? "replay on the CPU"
cat replay-cpu.txt
"$REPLAY" --memlog mem.csv --allocator malloc --allocator pool --allocator cuda \
    --allocator cuda-async >memlog.txt 2>&1
expect_status 0 $? "memory log replay with the CUDA allocators"
cat memlog.txt
finish
