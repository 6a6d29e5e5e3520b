#!/bin/sh
# test_replay_export_cuda.sh: mate-replay --export of a cublasSgemm_v2 call (recorded by mate-record from the fake-cuBLAS program) writes repro.cu and a Makefile that nvcc builds against the real cuBLAS; on a machine with a GPU the program gives mate-replay's verdict; a cublasGemmEx call is refused (exit 1), nothing written. Skips without nvcc.
. "$top_srcdir/tests/tools/record-common.sh"
REPLAY="$top_builddir/src/replay/mate-replay"
PROG="$top_builddir/tests/record-cuda-prog"

nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$nvcc" ]; then
	echo "SKIP: no nvcc to build the exported repro.cu"
	exit 77
fi
cd "$WORK" || exit 99
# the fake cuBLAS by its folder too: in tests/gpu.sh's pack the program's own path to it is
# gone, and the device's real cuBLAS would be found instead
LD_LIBRARY_PATH="$top_builddir/tests/fakes/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$RECORD" -l 10 --safetensors -d dumps -o log.txt -- "$PROG" >/dev/null 2>err.txt
expect_status 0 $? "recorded run"
d=$(ls -d dumps/*_cublasSgemm_v2_call0001)

out=$("$REPLAY" --export "$d" -o ex 2>&1)
expect_status 0 $? "export of cublasSgemm_v2: $out"
for file in repro.cu Makefile README A.bin B.bin C.bin C_expected.bin; do
	check [ -f "ex/$file" ] || fail "ex has no $file"
done
check grep -q 'cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 48, 32' ex/repro.cu ||
	fail "repro.cu does not make the recorded call: $(grep cublasSgemm ex/repro.cu)"
check grep -q 'compute-sanitizer ./repro' ex/README || fail "README: $(cat ex/README)"
# nvcc and the reproducer are the user's programs, not mate's: run without the
# sanitizer runtime CI's shared sanitizer step preloads into every test (nvcc
# crashed under it)
clean_env() { env -u LD_PRELOAD -u ASAN_OPTIONS -u UBSAN_OPTIONS "$@"; }
if command -v make >/dev/null 2>&1; then
	(cd ex && clean_env make NVCC="$nvcc" >make.log 2>&1)
else    # a bare GPU machine (tests/gpu.sh): the Makefile's one command
	(cd ex && clean_env "$nvcc" -O2 -g -lineinfo -o repro repro.cu -lcublas -lcudart >make.log 2>&1)
fi
expect_status 0 $? "make with nvcc: $(cat ex/make.log)"
check [ -x ex/repro ] || fail "no ex/repro"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
	got=$(cd ex && clean_env ./repro)
	expect_status 0 $? "ex/repro on the GPU: $got"
	check echo "$got" | grep -q "^cublasSgemm_v2 ($(basename "$d")): Passed" || fail "repro says: $got"
else
	echo "no GPU here: repro.cu compiled, not run"
fi

d=$(ls -d dumps/*_cublasGemmEx_call0001)
"$REPLAY" --export "$d" -o ex2 >out.txt 2>&1
expect_status 1 $? "export of cublasGemmEx"
check grep -q "cublasGemmEx (cublas): --export writes" out.txt || fail "no reason: $(cat out.txt)"
check [ ! -e ex2 ] || fail "ex2 was written"
finish
