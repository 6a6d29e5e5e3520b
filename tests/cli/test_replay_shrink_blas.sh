#!/bin/sh
# test_replay_shrink_blas.sh: mate-replay --shrink of cblas_sgemm, cblas_dgemm, sgemm_ and dgemm_ calls recorded by mate-record (row and column major, transposes, padded leading dimensions, beta != 0) with one planted wrong element of C: cut to that one row of A and column of B, K kept, M, N and the leading dimensions rebuilt in the record; the cut dump replays as the same mismatch in mate-replay and, exported with --export, in OpenBLAS itself (repro.c); a record whose transpose lies is refused, saying why once; a call that passes writes nothing.
. "$top_srcdir/tests/tools/record-blas.sh"


# shrink_case CALL CKEY I J REPORT DIMS: plants C[I, J] += 0.25 in CALL (its own root),
# shrinks it; the report holds REPORT, the cut record's M N lda ldb ldc are DIMS, and
# mate-replay and the exported repro.c both give the cut dump's mismatch at C[0, 0]
shrink_case() {
	src=$(ls -d dumps/*_"$1")
	mkdir "root-$1" && cp -r "$src" "root-$1/"
	d="root-$1/$(basename "$src")"
	python3 "$SET" "$d/inplace.safetensors" "$2" "$3" "$4" 0.25 || fail "cannot plant a value"
	out=$("$REPLAY" --shrink "$d" -o "cut-$1" 2>&1)
	expect_status 0 $? "--shrink of $1: $out"
	check echo "$out" | grep -qxF "$5" || fail "$1: the report: $out"
	cut="cut-$1/$(basename "$src")"
	check [ -f "$cut/inputs.safetensors" ] && [ -f "$cut/inplace.safetensors" ] ||
		fail "$1: the cut dump's files: $(ls "$cut")"
	case $1 in
	cblas*) got=$(record_meta "$cut" arg_3 arg_4 arg_5 arg_8 arg_10 arg_13) ;;
	*) got=$(record_meta "$cut" arg_2 arg_3 arg_4 arg_7 arg_9 arg_12) ;;
	esac
	check [ "$got" = "$6" ] || fail "$1: M N K lda ldb ldc are '$got', not '$6'"
	want=$("$REPLAY" "$cut" 2>/dev/null | sed -n 's/^\[1\] //p')
	check echo "$want" | grep -q "Mismatch: $2\[0, 0\]" || fail "$1: mate-replay of the cut dump: $want"
	"$REPLAY" --export "$cut" -o "ex-$1" >/dev/null 2>&1
	expect_status 0 $? "--export of the cut $1"
	(cd "ex-$1" && make >make.log 2>&1) || fail "make in ex-$1: $(cat "ex-$1/make.log")"
	got=$(cd "ex-$1" && ./repro)
	expect_status 1 $? "ex-$1/repro"
	check [ "$got" = "$want" ] || fail "$1: OpenBLAS on the cut inputs says '$got', mate-replay '$want'"
}

# row major, padded leading dimensions, beta -1: C is 30x25, K 36
shrink_case cblas_sgemm_call0001 arg_12 3 7 \
	"row 3 of 30 of A and column 7 of 25 of B (K = 36 kept)" "1 1 36 36 1 1"
# column major, A transposed (K x M), B conjugate-transposed (N x K)
shrink_case cblas_sgemm_call0002 arg_12 11 9 \
	"row 11 of 20 of A and column 9 of 15 of B (K = 12 kept)" "1 1 12 12 1 1"
# row major, A transposed, double
shrink_case cblas_dgemm_call0001 arg_12 20 0 \
	"row 20 of 21 of A and column 0 of 19 of B (K = 44 kept)" "1 1 44 1 1 1"
# Fortran: 'T', 'N' and 'n', 't'
shrink_case sgemm__call0001 arg_11 16 2 \
	"row 16 of 17 of a and column 2 of 23 of b (K = 29 kept)" "1 1 29 29 29 1"
shrink_case dgemm__call0001 arg_11 5 22 \
	"row 5 of 17 of a and column 22 of 23 of b (K = 29 kept)" "1 1 29 1 1 1"

# the report's last words
check echo "$out" | grep -q "^replays as mismatch: arg_11\[0, 0\]" || fail "the verdict line: $out"

# a record that lies (TransA says A is K x M: its 36 columns are not C's 30 rows): the call
# fails on replay, and it cannot be cut, saying why (once); nothing written
src=$(ls -d dumps/*_cblas_sgemm_call0001)
mkdir lying && cp -r "$src" lying/
python3 - "lying/$(basename "$src")/metadata.jsonl" <<'PY'
import json, sys
rec = json.loads(open(sys.argv[1]).read().splitlines()[-1])
rec["input_metadata"]["arg_1"] = {"type": "enum", "name": "CBLAS_TRANSPOSE.CblasTrans", "value": 112}
open(sys.argv[1], "w").write(json.dumps(rec) + "\n")
PY
"$REPLAY" --shrink "lying/$(basename "$src")" -o from-lying >out.txt 2>&1
expect_status 1 $? "--shrink of a lying record"
check [ "$(cat out.txt)" = "mate-replay: cblas_sgemm cannot be sliced: arg_12 has no dimension 0 of 36 to cut" ] ||
	fail "no reason, or not once: $(cat out.txt)"
check [ ! -e from-lying ] && [ -z "$(ls -a | grep '\.tmp-')" ] || fail "something was written: $(ls -a)"

# a call that passes: nothing to shrink, nothing written
d=$(ls -d dumps/*_cblas_dgemm_call0002)
"$REPLAY" --shrink "$d" -o passes >out.txt 2>&1
expect_status 1 $? "--shrink of a call that passes"
check grep -q "cblas_dgemm passes on replay" out.txt || fail "no reason: $(cat out.txt)"
check [ ! -e passes ] || fail "passes/ was written"
finish
