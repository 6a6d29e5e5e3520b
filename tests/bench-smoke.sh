#!/bin/bash
# bench-smoke.sh BUILDDIR: runs every benchmark of bench/ once in its shortest mode (tiny
# sizes, one round, short seconds) so that none rots: each must exit 0 and print its
# ratios against its anchor (the lines checked below); its times are not judged. Builds
# `make bench` and the replay plugin first. Prints "bench-smoke: NAME ok (N s)" for each,
# or the benchmark's whole output and "bench-smoke: NAME FAILED"; exits 1 when one failed.
# The benchmarks that need torch or FlashInfer run under $PYTHON_PEERS (default
# ~/.cache/mate/peers-venv/bin/python, as tests/peers-venv.sh makes it); without it they fail.
# The programs that only a driver runs are run by it: bench/tensor-files (tensor-files.sh),
# bench_pt_read (pt_read_vs_torch.py), dump-floor (recorder), record-gemm
# (record-overhead.sh), events-overhead (events.py); and so are the helpers gen-dumps.py,
# gen-ilog.py, tensor-files-torch.py and visualize-matplotlib.py.
set -euo pipefail

[ $# = 1 ] || { echo "usage: bench-smoke.sh BUILDDIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
bench=$src/bench
peers=${PYTHON_PEERS:-$HOME/.cache/mate/peers-venv/bin/python}
tmp=$(mktemp -d)
shm=$tmp
trap 'rm -rf "$tmp" "$shm"' EXIT
# the recorder's dumps go to tmpfs, as it chooses by default (on disk its level-10 rows take
# seconds longer)
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	shm=$(mktemp -d -p /dev/shm)
fi
export TMPDIR=$tmp
mkdir "$tmp/out"
cd "$build"
failed=()

if ! out=$(make -s bench tests/plugin-reference.la tests/mate-replay-ref tests/rank-prog 2>&1); then
	printf '%s\n' "$out"
	echo "bench-smoke: make bench failed"
	exit 1
fi

# smoke NAME PATTERN... -- COMMAND...: runs COMMAND; it passes when it exits 0 and its output
# (stdout and stderr) has a line matching each PATTERN (grep -E).
smoke() {
	local name=$1 log=$tmp/out/$1 t0 rc=0 missing=
	local -a want=()
	shift
	while [ "$1" != -- ]; do
		want+=("$1")
		shift
	done
	shift
	t0=$EPOCHREALTIME
	"$@" > "$log" 2>&1 < /dev/null || rc=$?
	for p in "${want[@]}"; do
		grep -Eq -- "$p" "$log" || missing="$missing${missing:+, }/$p/"
	done
	if [ $rc = 0 ] && [ -z "$missing" ]; then
		echo "bench-smoke: $name ok ($(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s)"
		return
	fi
	cat "$log"
	[ $rc = 0 ] || echo "bench-smoke: $name exited $rc: $*"
	[ -z "$missing" ] || echo "bench-smoke: $name printed no line matching $missing"
	echo "bench-smoke: $name FAILED"
	failed+=("$name")
}

# with_peers COMMAND...: COMMAND, when the peers' Python is there; peers ARG...: that Python
with_peers() {
	if [ ! -x "$peers" ]; then
		echo "no peers Python at $peers (PYTHON_PEERS; tests/peers-venv.sh makes it)"
		return 1
	fi
	"$@"
}
peers() {
	with_peers "$peers" "$@"
}

n='[0-9]+(\.[0-9]+)?'   # a number, so that "nan", "inf" and "n/a" fail
smoke bench_safetensors "^one .* write +$n MB/s \(plain +$n, +$n%\) +read +$n MB/s \(plain +$n, +$n%\)" \
    "^1 GiB: .* read +$n MB/s \(plain +$n, +$n%\)" -- \
    bench/bench_safetensors "$tmp" 1
smoke events.py "^  one subscriber +$n +$n \(" "^  stalled subscriber +$n +$n \(" \
    "captured $n events in $n s" "\($n events seen\)" -- \
    env top_builddir="$build" python3 "$bench/events.py" --rounds 1 --flood 1 --top-n 5
smoke desync-latency.py "^  the call seen live .* +$n +$n$" "^  the rank named .* +$n +$n$" \
    "^  the rank shown .* +$n +$n$" "^  ratio named / seen +$n +$n$" \
    "^named within 1 s of the divergence in [0-9]+ of 1 rounds" -- \
    env top_builddir="$build" python3 "$bench/desync-latency.py" --rounds 1 --at 100
smoke list-details.sh "^mate-list-dumps -d: .* ratio $n, ${n}x the anchor" \
    "^mate-replay, in place: .* ratio $n, ${n}x the anchor" -- \
    sh "$bench/list-details.sh" "$build" 4
smoke list-dumps.sh "^ratio: +${n}x faster" "^against the floor: .* in CPU time, $n in wall time" -- \
    sh "$bench/list-dumps.sh" "$build" 10 1
smoke memlog-bench "CSV written: +$n ns/event" "^replay pool +4 threads: +$n M events/s" -- \
    bench/memlog-bench 1000
smoke nonfinite-scan "^ 1 thread : read\(\) .* ratio $n " "^ 2 threads: read\(\) .* ratio $n " -- \
    bench/nonfinite-scan -r 1 -j 2 "$tmp" 4
smoke pt_read_vs_torch.py "^speedup: best ${n}x, median ${n}x" -- \
    peers "$bench/pt_read_vs_torch.py" "$build" 1
smoke pt_write_bench "^10000 x 4 KiB +$n GB/s +$n GB/s +$n GB/s +$n%" -- \
    bench/pt_write_bench "$tmp" 1
smoke pt_write_torch.py "^10000 x 4 KiB +$n GB/s" -- peers "$bench/pt_write_torch.py" "$tmp" 1
smoke read-rss "^\.pt +anonymous memory mapped/read|anonymous memory mapped/read: $n " \
    "^safetensors +mapped \(default\): +peak RSS +$n MiB" -- bench/read-rss "$tmp" 4
smoke record-overhead.sh "^level 1: ratio $n CPU" "^level 3: ratio $n CPU" -- \
    sh "$bench/record-overhead.sh" 10 1 16
smoke recorder "^level 0 .* ratio $n +target" "profile ratio: +$n of level 1" \
    "bench log ratio: +$n of level 1" "floor ratio: +$n of the syscall floor" \
    "ring ratio: +$n of level 1" "in thread CPU time: +$n of level 1" \
    "^ring large: .* ratio $n " "^level 10 large: .* ratio $n " -- \
    bench/recorder --dir "$shm" --seconds 0.1 --large-mib 1
smoke replay-decode.py "^mate-replay run \(CPU kernels\): $n s  ratio ${n}x" \
    "^mate-replay process .* ratio ${n}x" -- \
    peers "$bench/replay-decode.py" "$build" --batch 2 --kv 20 --qo-heads 2 --kv-heads 1 \
    --head-dim 64 --page 16 --repeat 1
smoke replay-blas-call "call.s strides .* ratio $n \(target" "contiguous .* ratio $n \(target" -- \
    bench/replay-blas-call 3
smoke replay-gemm "ratio $n \(target" -- bench/replay-gemm 64 1
smoke replay-many.sh "^mate-replay -j 1 +10 dumps in $n s: $n dumps/s" \
    "^-j [0-9]+ against -j 1: ${n}x \(medians\)" -- \
    sh "$bench/replay-many.sh" "$build" 10 1
smoke replay-mixed.py "^mate-replay -j 1: .* ratio ${n}x" "^mate-replay -j 2: .* ratio ${n}x" -- \
    peers "$bench/replay-mixed.py" "$build" --steps 1 --repeat 1 --jobs 2
smoke tensor-files.sh "bit-identical" "^  pt +write vs torch.save +${n}x" \
    "^  safetensors +read vs torch.load +${n}x" -- \
    with_peers env BUILDDIR="$build" PYTHON_TORCH="$peers" sh "$bench/tensor-files.sh" --small --repeat 1
smoke visualize.py "speed-up: ${n}x wall, ${n}x CPU" "200 lines -> PNG: .* peak RSS" \
    "reading the file \(cat\): $n s wall" -- \
    python3 "$bench/visualize.py" --build "$build" --dir "$tmp/visualize" --lines 100 \
    --big-lines 200 --repeat 1

if [ ${#failed[@]} -gt 0 ]; then
	echo "bench-smoke: ${#failed[@]} failed: ${failed[*]}"
	exit 1
fi
echo "bench-smoke: all passed"
