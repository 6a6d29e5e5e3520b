#!/bin/sh
# record-overhead.sh: the interposer's overhead on a GEMM-heavy program (cblas_sgemm on 256x256
# f32 matrices in a loop) at levels 0, 1 and 3, as a ratio to the same program without the preload.
# Usage (in the build directory, after `make bench`):
#   sh $srcdir/bench/record-overhead.sh [GEMMS [ROUNDS [SIZE]]]
# OpenBLAS runs on one thread, so that the process's CPU time measures the work; rounds
# interleave the four runs and each figure is the best of its rounds (least disturbed by
# other load). Level 1 and 3 logs go to /dev/null.
n=${1:-2000}
rounds=${2:-7}
size=${3:-256}
prog=bench/record-gemm
record=src/record/mate-record
[ -x "$prog" ] || { echo "run 'make bench' first" >&2; exit 2; }
export OPENBLAS_NUM_THREADS=1
unset MATE_LOGLEVEL MATE_MEMLOG
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
r=0
while [ $r -lt $rounds ]; do
	# a run that fails has no time: it must not read as a ratio of 0
	$prog $n $size >> "$tmp/base" || exit 1
	$record -q -l 0 -- $prog $n $size >> "$tmp/l0" || exit 1
	$record -q -l 1 -o /dev/null -- $prog $n $size >> "$tmp/l1" || exit 1
	$record -q -l 3 -o /dev/null -- $prog $n $size >> "$tmp/l3" || exit 1
	r=$((r + 1))
done
# best CPU and wall times of a file
best() { awk 'NR == 1 || $1 < c { c = $1 } NR == 1 || $2 < w { w = $2 } END { print c, w }' "$1"; }
set -- $(best "$tmp/base")
bc=$1 bw=$2
printf "baseline: %d GEMMs of %dx%d in %.4f s CPU (%.1f us each), %.4f s wall\n" $n $size $size $bc \
    $(awk -v c=$bc -v n=$n 'BEGIN { print c / n * 1e6 }') $bw
for l in 0 1 3; do
	set -- $(best "$tmp/l$l")
	awk -v l=$l -v c=$1 -v w=$2 -v bc=$bc -v bw=$bw -v n=$n 'BEGIN {
		printf "level %d: ratio %.4f CPU (%+.2f us/call), %.4f wall\n", l, c / bc, (c - bc) / n * 1e6, w / bw }'
done
