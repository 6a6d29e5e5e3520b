#!/bin/sh
# test_replay_cublas_tf32.sh: a cublasGemmEx made with CUBLAS_COMPUTE_32F_FAST_TF32 (the fake cuBLAS rounds its FP32 operands to TF32 as the tensor cores do; PyTorch's float32 matmuls under allow_tf32 are such calls) replays as Passed within the reduction bound of TF32 products, not as a Mismatch by FP32's; an error past that bound is still a Mismatch.
. "$top_srcdir/tests/tools/record-common.sh"
REPLAY="$top_builddir/src/replay/mate-replay"
PROG="$top_builddir/tests/record-cuda-prog"
cd "$WORK" || exit 99

LD_LIBRARY_PATH="$top_builddir/tests/fakes/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    RECORD_CUDA_TF32=1 "$RECORD" -l 10 --safetensors -d dumps -o log.txt -- "$PROG" \
    >/dev/null 2>err.txt
expect_status 0 $? "recorded run: $(cat err.txt)"
check grep -q "CUBLAS_COMPUTE_32F_FAST_TF32" dumps/*_cublasGemmEx_call0001/metadata.jsonl ||
	fail "the GemmEx call is recorded with its TF32 compute type"
d=$(ls -d dumps/*_cublasGemmEx_call0001)

# B holds thirds (23 bits of mantissa): its TF32 products differ from FP32's by about
# 2^-11 relative, past FP32's bound (the old verdict: Mismatch)
"$REPLAY" "$d" >out.txt 2>&1
expect_status 0 $? "the TF32 GemmEx replays: $(cat out.txt)"
check grep -q "cublasGemmEx (.*): Passed (max abs err [0-9.e-]*, max rel err [0-9.e-]*; within the reduction bound" out.txt ||
	fail "Passed within the reduction bound: $(cat out.txt)"
cat out.txt

# an error of 100 in C[3, 5] is past the TF32 bound (K 32, about 4 there): still a Mismatch
python3 "$top_srcdir/tests/tools/st-set.py" "$d/inplace.safetensors" arg_14 3 5 100 ||
	fail_stop "planting an error"
"$REPLAY" "$d" >bad.txt 2>&1
expect_status 1 $? "the planted error: $(cat bad.txt)"
check grep -q "Mismatch: arg_14\[3, 5\]" bad.txt || fail "the planted element is named: $(cat bad.txt)"
finish
