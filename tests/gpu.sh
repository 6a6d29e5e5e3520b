#!/bin/sh
# gpu.sh [BUILDDIR]: builds mate with CUDA (in BUILDDIR, default _build-gpu) and runs every
# GPU test and benchmark, then prints one report: the device, each test's result, the figures.
# PYTHON_PEERS=DIR/bin/python adds the FlashInfer replay tests, replayed on the device.
# Exits 77 without an NVIDIA GPU, 1 when a GPU test fails or skips, 0 when all pass.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/_build-gpu}
jobs=$(nproc 2>/dev/null || echo 2)
GPU_TESTS="tests/test_kernels_cuda tests/cli/test_cuda_module.sh tests/test_recorder_cuda
tests/interop/test_kernels_torch_cuda.sh tests/cli/test_record_gpu.sh"
# With PYTHON_PEERS (a tests/peers-venv.sh venv), FlashInfer's recorded calls replay on the
# device too (mate-replay's default where one is present): the batch attention kernel and the
# GEMMs against FlashInfer's torch references.
[ -n "${PYTHON_PEERS:-}" ] && GPU_TESTS="$GPU_TESTS tests/interop/test_flashinfer_attn.py
tests/interop/test_fi_fp8_kv.py tests/interop/test_fi_model_step.py tests/interop/test_fi_replay_gemm_bits.py"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "gpu.sh: no NVIDIA GPU here (nvidia-smi -L finds none): nothing to verify"
	exit 77
fi
command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] || {
	echo "gpu.sh: a GPU but no CUDA toolkit (nvcc): the CUDA paths cannot be built"; exit 1; }

log=$build/gpu-report.log
mkdir -p "$build" || exit 1
: >"$log"
step() { printf '%s\n' "$*" >>"$log"; }
if [ ! -f "$build/Makefile" ]; then
	[ -x "$src/configure" ] || (cd "$src" && autoreconf -fi) >>"$log" 2>&1 || {
		echo "gpu.sh: autoreconf failed (see $log)"; exit 1; }
	(cd "$build" && "$src/configure" ${PYTHON_PEERS:+PYTHON_PEERS="$PYTHON_PEERS"}) >>"$log" 2>&1 ||
		{ echo "gpu.sh: configure failed (see $log)"; exit 1; }
fi
grep -q '#define HAVE_CUDA 1' "$build/config.h" || {
	echo "gpu.sh: $build is not a CUDA build (configure did not find nvcc)"; exit 1; }
make -C "$build" -j"$jobs" >>"$log" 2>&1 || { echo "gpu.sh: the build failed (see $log)"; exit 1; }
make -C "$build" -j"$jobs" check TESTS="$(echo $GPU_TESTS)" >>"$log" 2>&1

echo "==== mate GPU report ($(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?'))"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/device: /'
echo "nvcc: $(nvcc --version 2>/dev/null | tail -n 1)"
pass=0 fail=0
for t in $GPU_TESTS; do
	res=$(sed -n 's/^:test-result: //p' "$build/$t.trs" 2>/dev/null | head -n 1)
	[ -n "$res" ] || res=MISSING
	why=
	case $res in
	PASS) pass=$((pass + 1)) ;;
	*) fail=$((fail + 1)); why=$(grep -m 1 -E 'SKIP|FAIL|rror' "$build/$t.log" 2>/dev/null) ;;
	esac
	printf '%-5s %s%s\n' "$res" "$t" "${why:+: $why}"
done

# Figures: the demo's dumps replayed on the CPU and on the GPU (same dumps, one run),
# and an allocation log replayed through the device allocators against malloc.
work=$(mktemp -d "${TMPDIR:-/tmp}/mate-gpu.XXXXXX") && trap 'rm -rf "$work"' EXIT
MATE_LOGLEVEL=10 MATE_DUMP_DIR="$work/d" MATE_LOGDEST=/dev/null MATE_DEMO_THREADS=2 \
	MATE_DEMO_ROUNDS=2 "$build/examples/mate-demo" >/dev/null 2>&1
for dev in cpu cuda; do
	t0=$(date +%s%N)
	"$build/src/replay/mate-replay" --device "$dev" --status completed "$work/d" >"$work/$dev.out" 2>&1
	rc=$?
	t1=$(date +%s%N)
	printf 'replay of the demo on %-4s: exit %d, %s, %s s\n' "$dev" "$rc" \
	    "$(tail -n 1 "$work/$dev.out")" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')"
	[ $rc -eq 0 ] && pass=$((pass + 1)) || fail=$((fail + 1))
done
i=0
{
	echo "Thread,Time,Action,Pointer,Size,Stream"
	while [ $i -lt 2000 ]; do
		printf '1,00:00:00.%06d,allocate,0x%x,%d,0\n' $i $((0x10000000 + i * 1048576)) $((4096 + i * 512))
		[ $((i % 2)) -eq 1 ] && printf '1,00:00:00.%06d,free,0x%x,%d,0\n' $i $((0x10000000 + (i - 1) * 1048576)) $((4096 + (i - 1) * 512))
		i=$((i + 1))
	done
} >"$work/mem.csv"
"$build/src/replay/mate-replay" --memlog "$work/mem.csv" --allocator malloc --allocator cuda \
	--allocator cuda-async >"$work/mem.out" 2>&1
rc=$?
sed 's/^/allocation replay: /' "$work/mem.out"
[ $rc -eq 0 ] && pass=$((pass + 1)) || fail=$((fail + 1))
echo "build log: $log"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
