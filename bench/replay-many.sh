#!/bin/sh
# replay-many.sh: replays 10,000 small dumps (16x16 float32 gemm, safetensors) and reports dumps per second, on 1 thread and on all cores.
#
# usage: bench/replay-many.sh [BUILDDIR] [COUNT]   (BUILDDIR default ., COUNT default 10000)
# Uses the reference plugin (make check builds tests/plugin-reference.la), or
# tests/mate-replay-ref in static builds. The dumps are kept under
# $TMPDIR/mate-bench-replay-COUNT.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-.}
count=${2:-10000}
py=${PYTHON:-python3}
root=${TMPDIR:-/tmp}/mate-bench-replay-$count

if [ -f "$build/tests/.libs/plugin-reference.so" ]; then
	set -- "$build/src/replay/mate-replay" --plugin "$build/tests/.libs/plugin-reference.so"
elif [ -x "$build/tests/mate-replay-ref" ]; then
	set -- "$build/tests/mate-replay-ref"
else
	echo "build the test plugin first: make -C $build check TESTS=" >&2
	exit 2
fi
if [ ! -f "$root/.complete" ]; then
	rm -rf "$root"
	echo "generating $count dumps in $root ..." >&2
	"$py" "$here/gen-dumps.py" "$root" "$count" --tensors
	touch "$root/.complete"
fi

now() { date +%s.%N; }
run() {
	jobs=$1
	shift
	"$@" -j "$jobs" "$root" > "$root.out" 2>&1 || true
	t0=$(now)
	"$@" -j "$jobs" "$root" > "$root.out" 2>&1 || true
	t1=$(now)
	grep -q "^Summary: $count passed, 0 failed" "$root.out" ||
		{ echo "replay did not pass:" >&2; tail -3 "$root.out" >&2; exit 1; }
	t=$(echo "$t1 - $t0" | bc -l)
	printf 'mate-replay -j %-3s %d dumps in %.3f s: %.0f dumps/s\n' "$jobs" "$count" "$t" \
	    "$(echo "$count / $t" | bc -l)"
}
run 1 "$@"
cores=$(nproc 2>/dev/null || echo 2)
[ "$cores" -gt 1 ] && run "$cores" "$@"
rm -f "$root.out"
