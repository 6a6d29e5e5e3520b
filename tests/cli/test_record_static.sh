#!/bin/sh
# test_record_static.sh: a statically linked CUDA runtime is detected and named, before the run (the program file) and at its end (libcuda.so loaded without libcudart.so).
. "$top_srcdir/tests/tools/record-common.sh"

cd "$WORK" || exit 99
"$RECORD" -l 1 -o log.txt -- "$top_builddir/tests/static-cudart-prog" >out.txt 2>err.txt
expect_status 0 $? "static-cudart-prog"
check [ "$(cat out.txt)" = "static ok" ] || fail "program output: $(cat out.txt)"
check grep -q 'static-cudart-prog links the CUDA runtime statically' err.txt ||
	fail "no warning before the run: $(cat err.txt)"
check grep -q 'mate: this program uses the CUDA driver but loaded no libcudart.so' err.txt ||
	fail "no warning at exit: $(cat err.txt)"
check grep -q 'a static CUDA runtime was in use' err.txt || fail "no line in the summary: $(cat err.txt)"

# device code (.nv_fatbin) without an imported runtime is a static runtime too
if command -v objcopy >/dev/null 2>&1; then
	echo fatbin > fatbin.bin
	objcopy --add-section .nv_fatbin=fatbin.bin "$top_builddir/tests/record-blas-prog" fat-prog &&
	chmod +x fat-prog
	"$RECORD" -q -l 0 -- ./fat-prog >/dev/null 2>err.txt
	check grep -q 'fat-prog links the CUDA runtime statically' err.txt ||
		fail ".nv_fatbin not taken for a static runtime: $(cat err.txt)"
fi

# a program using the shared runtime gets no such warning
"$RECORD" -l 0 -- "$top_builddir/tests/record-cuda-prog" >/dev/null 2>err.txt
expect_status 0 $? "record-cuda-prog"
if grep -q 'static' err.txt; then fail "false alarm: $(cat err.txt)"; fi
finish
