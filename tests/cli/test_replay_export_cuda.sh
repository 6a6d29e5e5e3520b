#!/bin/sh
# test_replay_export_cuda.sh: mate-replay --export of a cublasSgemm_v2 call (recorded by mate-record from the fake-cuBLAS program) writes repro.cu and a Makefile that nvcc builds against the real cuBLAS; on a machine with a GPU the program gives mate-replay's verdict; a float16 and a bfloat16 cublasGemmEx are written with their CUDA types and reproduce mate-replay's pass and planted mismatch on the fake cuBLAS, and one of a dtype it does not write (int8) is refused (exit 1), nothing written; a float32 one in TF32 is written with its compute type and TF32's bound, and its repro passes on the fake cuBLAS and fails against a wrong expected C; a strided-batched one likewise, per matrix. Skips without nvcc.
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

# a GemmEx whose A is a dtype --export does not write (the record's Atype made int8): refused
# (exit 1), saying why; nothing written
d=$(ls -d dumps/*_cublasGemmEx_call0001)
mkdir int8 && cp -r "$d" int8/
python3 - "int8/$(basename "$d")/metadata.jsonl" <<'PY'
import json, sys
rec = json.loads(open(sys.argv[1]).read().splitlines()[-1])
rec["input_metadata"]["arg_8"] = {"type": "torch.dtype", "value": "torch.int8"}
open(sys.argv[1], "w").write(json.dumps(rec) + "\n")
PY
"$REPLAY" --export "int8/$(basename "$d")" -o ex2 >out.txt 2>&1
expect_status 1 $? "export of an int8 cublasGemmEx"
check grep -q "cublasGemmEx (cublas): --export writes cublasGemmEx calls of float32, float16 or bfloat16 A, B and C; this one's A is int8" out.txt ||
	fail "no reason: $(cat out.txt)"
check [ ! -e ex2 ] || fail "ex2 was written"

# A float32 cublasGemmEx in TF32 (RECORD_CUDA_TF32): repro.cu makes the same call, compute
# type and algorithm, and bounds C as mate-replay does (TF32's u); built with nvcc, it runs
# here on the fake cuBLAS (which rounds to TF32 as the tensor cores do) and passes, and a
# wrong C_expected.bin is a Mismatch
LD_LIBRARY_PATH="$top_builddir/tests/fakes/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    RECORD_CUDA_TF32=1 "$RECORD" -l 10 --safetensors -d tf32 -o /dev/null -- "$PROG" >/dev/null 2>err.txt
expect_status 0 $? "recorded run in TF32: $(cat err.txt)"
d=$(ls -d tf32/*_cublasGemmEx_call0001)
out=$("$REPLAY" --export "$d" -o ex3 2>&1)
expect_status 0 $? "export of a float32 cublasGemmEx: $out"
check grep -q "st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 64, 48, 32, &alpha, da, CUDA_R_32F, 32, db, CUDA_R_32F, 32, &beta, dc, CUDA_R_32F, 64," ex3/repro.cu &&
    grep -q "(cublasComputeType_t)77 /\* CUBLAS_COMPUTE_32F_FAST_TF32 \*/, (cublasGemmAlgo_t)-1);" ex3/repro.cu ||
	fail "repro.cu does not make the recorded call: $(grep -A1 'st = ' ex3/repro.cu)"
check grep -q "^#define U 0x1p-11$" ex3/repro.cu || fail "repro.cu bounds C by TF32's u: $(grep '#define U' ex3/repro.cu)"
if command -v make >/dev/null 2>&1; then
	(cd ex3 && clean_env make NVCC="$nvcc" >make.log 2>&1)
else
	(cd ex3 && clean_env "$nvcc" -O2 -g -lineinfo -o repro repro.cu -lcublas -lcudart >make.log 2>&1)
fi
expect_status 0 $? "make with nvcc: $(cat ex3/make.log)"
# the fake libraries are the build's (instrumented in a sanitizer build): the test's own
# environment (its LD_PRELOAD of the sanitizer runtime) runs them
fakes() { env LD_LIBRARY_PATH="$top_builddir/tests/fakes/.libs" "$@"; }
got=$(cd ex3 && fakes ./repro 2>/dev/null)
expect_status 0 $? "ex3/repro on the fake cuBLAS: $got"
check echo "$got" | grep -q "^cublasGemmEx ($(basename "$d")): Passed" || fail "repro says: $got"
python3 -c "
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
v = struct.unpack_from('<f', b, 4 * 7)[0]
struct.pack_into('<f', b, 4 * 7, v + 100)
open(sys.argv[1], 'wb').write(b)" ex3/C_expected.bin
got=$(cd ex3 && fakes ./repro 2>/dev/null)
expect_status 1 $? "ex3/repro against a wrong C_expected.bin: $got"
check echo "$got" | grep -q "Mismatch: arg_14\[7, 0\]" || fail "the wrong element is named: $got"

# float16 and bfloat16 GemmEx (torch.half and torch.bfloat16 matmuls make such calls): the
# float16-A call of the first run (its B and C float32), and with RECORD_CUDA_BF16 one of
# bfloat16 A, B and C. repro.cu hands cuBLAS the buffers as stored, with their CUDA types,
# and widens them to float to compare at mate-replay's tolerance for C's dtype; on the fake
# cuBLAS each passes, and a planted wrong element of C is the same mismatch in mate-replay
# and in the repro
LD_LIBRARY_PATH="$top_builddir/tests/fakes/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    RECORD_CUDA_BF16=1 "$RECORD" -l 10 --safetensors -d bf16 -o /dev/null -- "$PROG" >/dev/null 2>err.txt
expect_status 0 $? "recorded run with a bfloat16 GemmEx: $(cat err.txt)"
SET="$top_srcdir/tests/tools/st-set.py"
narrow_case() {  # NAME DUMP TYPES... : exported, built, passes; a planted C[5, 3] fails alike
	name=$1 d=$2
	shift 2
	out=$("$REPLAY" --export "$d" -o "$name" 2>&1)
	expect_status 0 $? "export of $name: $out"
	check grep -q "d\[0\], $1, [0-9]*, d\[1\], $2, [0-9]*, &beta, d\[2\], $3, 64," "$name/repro.cu" ||
		fail "$name: repro.cu does not pass the recorded types: $(grep -A2 'st = ' "$name/repro.cu")"
	(cd "$name" && clean_env "$nvcc" -O2 -g -lineinfo -o repro repro.cu -lcublas -lcudart >make.log 2>&1)
	expect_status 0 $? "nvcc: $(cat "$name/make.log")"
	check [ -z "$(grep -i warning "$name/make.log")" ] || fail "nvcc warns: $(cat "$name/make.log")"
	got=$(cd "$name" && fakes ./repro 2>/dev/null)
	expect_status 0 $? "$name/repro on the fake cuBLAS: $got"
	check echo "$got" | grep -q "^cublasGemmEx ($(basename "$d")): Passed" || fail "$name: repro says: $got"
	mkdir "$name-bad" && cp -r "$d" "$name-bad/"
	bad="$name-bad/$(basename "$d")"
	python3 "$SET" "$bad/inplace.safetensors" arg_14 5 3 4 || fail "cannot plant a value"
	want=$("$REPLAY" "$bad" 2>/dev/null | sed -n 's/^\[1\] //p')
	check echo "$want" | grep -q "Mismatch: arg_14\[5, 3\]" || fail "$name: mate-replay: $want"
	"$REPLAY" --export "$bad" -o "$name-ex-bad" >/dev/null 2>&1
	(cd "$name-ex-bad" && clean_env "$nvcc" -O2 -o repro repro.cu -lcublas -lcudart >make.log 2>&1)
	got=$(cd "$name-ex-bad" && fakes ./repro 2>/dev/null)
	expect_status 1 $? "$name-ex-bad/repro: $got"
	check echo "$got" | grep -q "Mismatch: arg_14\[5, 3\]" ||
		fail "$name: the repro of the planted value says '$got', mate-replay '$want'"
}
narrow_case ex16 "$(ls -d dumps/*_cublasGemmEx_call0001)" CUDA_R_16F CUDA_R_32F CUDA_R_32F
narrow_case exbf "$(ls -d bf16/*_cublasGemmEx_call0002)" CUDA_R_16BF CUDA_R_16BF CUDA_R_16BF

# cublasGemmStridedBatchedEx (3 products of 8 x 8, 64 elements apart): the same, per matrix,
# the wrong element named by its batch, row and column as mate-replay names it
d=$(ls -d dumps/*_cublasGemmStridedBatchedEx_call0001)
out=$("$REPLAY" --export "$d" -o ex4 2>&1)
expect_status 0 $? "export of cublasGemmStridedBatchedEx: $out"
check grep -q "st = cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_T, 8, 8, 8, &alpha, da, CUDA_R_32F, 8, SA, db, CUDA_R_32F, 8, SB, &beta, dc, CUDA_R_32F, 8, SC, (int)BATCH," ex4/repro.cu &&
    grep -q "^#define BATCH 3LL$" ex4/repro.cu && grep -q "^#define SC 64LL$" ex4/repro.cu ||
	fail "repro.cu does not make the recorded call: $(grep -A1 'st = ' ex4/repro.cu)"
(cd ex4 && clean_env "$nvcc" -O2 -g -lineinfo -o repro repro.cu -lcublas -lcudart >make.log 2>&1)
expect_status 0 $? "nvcc: $(cat ex4/make.log)"
got=$(cd ex4 && fakes ./repro 2>/dev/null)
expect_status 0 $? "ex4/repro on the fake cuBLAS: $got"
check echo "$got" | grep -q "^cublasGemmStridedBatchedEx ($(basename "$d")): Passed" || fail "repro says: $got"
python3 -c "
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
at = 4 * (2 * 64 + 3 + 5 * 8)   # batch 2, row 3, column 5 (column major, ld 8)
struct.pack_into('<f', b, at, struct.unpack_from('<f', b, at)[0] + 100)
open(sys.argv[1], 'wb').write(b)" ex4/C_expected.bin
got=$(cd ex4 && fakes ./repro 2>/dev/null)
expect_status 1 $? "ex4/repro against a wrong C_expected.bin: $got"
check echo "$got" | grep -q "Mismatch: arg_16\[2, 3, 5\]" || fail "the wrong element is named: $got"
finish
