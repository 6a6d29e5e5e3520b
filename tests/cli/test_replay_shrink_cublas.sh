#!/bin/sh
# test_replay_shrink_cublas.sh: mate-replay --shrink of cuBLAS GEMMs recorded by mate-record from the fake-cuBLAS program (tests/record-cuda-prog): a cublasSgemm_v2 and a cublasGemmEx (A float16, transposed) with one planted wrong element of C are cut to that one row of A and column of B, K kept, m, n and the leading dimensions rebuilt in the record, A's dtype kept; the cut dump replays as the same mismatch at C[0, 0]; a transpose that is no cublasOperation_t is refused, saying why; a strided batch is not cut, and says so; a call that passes writes nothing.
. "$top_srcdir/tests/tools/record-common.sh"
REPLAY="$top_builddir/src/replay/mate-replay"
PROG="$top_builddir/tests/record-cuda-prog"
SET="$top_srcdir/tests/tools/st-set.py"

cd "$WORK" || exit 99
LD_LIBRARY_PATH="$top_builddir/tests/fakes/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$RECORD" -l 10 --safetensors -d dumps -o /dev/null -- "$PROG" >/dev/null 2>err.txt
expect_status 0 $? "recorded run: $(cat err.txt)"

# dtype FILE KEY: a safetensors tensor's dtype
dtype() {
	python3 - "$@" <<'PY'
import json, struct, sys
f = open(sys.argv[1], "rb")
n = struct.unpack("<Q", f.read(8))[0]
print(json.loads(f.read(n))[sys.argv[2]]["dtype"])
PY
}

# shrink_case CALL CKEY I J REPORT DIMKEYS DIMS: plants C[I, J] += 0.5 in CALL's dump (its
# own root) and shrinks it; the report holds REPORT, the cut record's m n k lda ldb ldc
# (under DIMKEYS) are DIMS, and mate-replay gives the cut dump's mismatch at C[0, 0]
shrink_case() {
	src=$(ls -d dumps/*_"$1")
	mkdir "root-$1" && cp -r "$src" "root-$1/"
	d="root-$1/$(basename "$src")"
	python3 "$SET" "$d/inplace.safetensors" "$2" "$3" "$4" 0.5 || fail "cannot plant a value"
	out=$("$REPLAY" --shrink "$d" -o "cut-$1" 2>&1)
	expect_status 0 $? "--shrink of $1: $out"
	check echo "$out" | grep -qxF "$5" || fail "$1: the report: $out"
	cut="cut-$1/$(basename "$src")"
	got=$(record_meta "$cut" $6)
	check [ "$got" = "$7" ] || fail "$1: m n k lda ldb ldc are '$got', not '$7'"
	got=$("$REPLAY" "$cut" 2>/dev/null | sed -n 's/^\[1\] //p')
	check echo "$got" | grep -q "Mismatch: $2\[0, 0\]" || fail "$1: mate-replay of the cut dump: $got"
}

# 64 x 48, K 32, no transposes
shrink_case cublasSgemm_v2_call0001 arg_12 40 17 \
	"row 40 of 64 of A and column 17 of 48 of B (K = 32 kept)" \
	"arg_3 arg_4 arg_5 arg_8 arg_10 arg_13" "1 1 32 1 32 1"
# A float16 and transposed (K x M), C float32
shrink_case cublasGemmEx_call0001 arg_14 3 5 \
	"row 3 of 64 of A and column 5 of 48 of B (K = 32 kept)" \
	"arg_3 arg_4 arg_5 arg_9 arg_12 arg_16" "1 1 32 32 32 1"
cut=$(ls -d cut-cublasGemmEx_call0001/*_call0001)
check [ "$(dtype "$cut/inputs.safetensors" arg_7)" = F16 ] || fail "the cut A is not float16"

# a transpose that is no cublasOperation_t: refused, saying why (once); nothing written
src=$(ls -d dumps/*_cublasSgemm_v2_call0001)
mkdir lying && cp -r "$src" lying/
python3 - "lying/$(basename "$src")/metadata.jsonl" <<'PY'
import json, sys
rec = json.loads(open(sys.argv[1]).read().splitlines()[-1])
rec["input_metadata"]["arg_2"] = {"type": "enum", "name": "cublasOperation_t.CUBLAS_OP_HERMITAN", "value": 7}
open(sys.argv[1], "w").write(json.dumps(rec) + "\n")
PY
python3 "$SET" "lying/$(basename "$src")/inplace.safetensors" arg_12 1 1 0.5
"$REPLAY" --shrink "lying/$(basename "$src")" -o from-lying >out.txt 2>&1
expect_status 1 $? "--shrink of a lying record"
check [ "$(cat out.txt)" = "mate-replay: cublasSgemm_v2 cannot be sliced: its transb is not a transpose" ] ||
	fail "no reason, or not once: $(cat out.txt)"
check [ ! -e from-lying ] || fail "something was written: $(ls)"

# a strided batch of GEMMs is not cut (its batches are not rows): said
d=$(ls -d dumps/*_cublasGemmStridedBatchedEx_call0001)
mkdir batch && cp -r "$d" batch/
python3 "$SET" "batch/$(basename "$d")/inplace.safetensors" arg_16 3 5 0.5
"$REPLAY" --shrink "batch/$(basename "$d")" -o from-batch >out.txt 2>&1
expect_status 1 $? "--shrink of a strided batch"
check grep -q "cublasGemmStridedBatchedEx cannot be sliced" out.txt || fail "no reason: $(cat out.txt)"
check [ ! -e from-batch ] || fail "from-batch was written"

# a call that passes: nothing to shrink, nothing written
d=$(ls -d dumps/*_cublasSgemm_v2_call0001)
"$REPLAY" --shrink "$d" -o passes >out.txt 2>&1
expect_status 1 $? "--shrink of a call that passes"
check grep -q "cublasSgemm_v2 passes on replay" out.txt || fail "no reason: $(cat out.txt)"
check [ ! -e passes ] || fail "passes/ was written"
finish
