# record-blas.sh: shared setup of the tests on BLAS calls recorded by mate-record (sourced): record-common.sh, then tests/record-blas-prog recorded at level 10 into $WORK/dumps (safetensors, which tests/tools/st-set.py plants into), from $WORK; skips without make or cc, which build the exported repro.c.
. "$top_srcdir/tests/tools/record-common.sh"
REPLAY="$top_builddir/src/replay/mate-replay"
PROG="$top_builddir/tests/record-blas-prog"
SET="$top_srcdir/tests/tools/st-set.py"

command -v make >/dev/null 2>&1 && command -v cc >/dev/null 2>&1 || {
	echo "SKIP: no make or cc to build the exported repro.c"
	exit 77
}
cd "$WORK" || exit 99
"$RECORD" -l 10 --safetensors -d dumps -o log.txt -- "$PROG" >/dev/null 2>err.txt
expect_status 0 $? "recorded run"
