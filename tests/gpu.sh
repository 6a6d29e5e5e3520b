#!/bin/bash
# gpu.sh: the GPU check of mate, prepared here and run on a lent GPU machine in one command.
#
# When a GPU machine is lent (the device tool: 15 minutes of device time a session, a bare
# machine with the CUDA driver, nvcc, PyTorch and compute-sanitizer but none of Debian's -dev
# packages and no registry), do exactly this:
#
#   1. here:   tests/gpu.sh --pack _gpu-pack       (a CUDA build, its libraries, a manifest)
#   2. there:  one `device run` with carry ["_gpu-pack"] and the command
#                  tests/gpu.sh --run _gpu-pack
#              (timeout_s 600: --run stops itself after 8 minutes; the report and the
#              logs come back in $OUT: gpu-report.txt, gpu-logs.tar.gz)
#   3. here:   `device give_back`, then put gpu-report.txt in the issue's note.
#
# --pack DIR [BUILDDIR]  builds mate with CUDA in BUILDDIR (default _build-gpu; configured when
#       it has no Makefile) with its test programs, and writes DIR/mate-gpu-pack.tar.gz (the
#       programs and libraries of that build, libtool's wrappers replaced by the programs
#       themselves, every shared library they need that a bare CUDA machine may lack, taken
#       from this machine's Debian packages, FlashInfer's api_logging.py when PYTHON_PEERS
#       has it) and DIR/MANIFEST; each packed ELF file finds its libraries through its own
#       RPATH ($ORIGIN), so no LD_LIBRARY_PATH leaks into the Python or shell the tests run.
#       It then checks the pack as --run does without a GPU. DIR must be ignored by git
#       (_gpu-pack and any _build* folder are).
# --run DIR  extracts the pack, checks that every binary loads with nothing from outside the
#       pack but glibc, libstdc++ and the CUDA driver, runtime and cuBLAS, and stops there
#       (exit 77, "no GPU here") without an NVIDIA GPU. With one: every GPU test (each CUDA
#       kernel against its CPU twin, the CUDA recorder with the real runtime and cuBLAS,
#       mate-record of a real CUDA program, --export's repro.cu built by nvcc and run, the
#       torch comparison on the CUDA kernels, replay --device cuda of FlashInfer's recorded
#       calls), compute-sanitizer memcheck over the CUDA kernel tests, and the figures (the
#       demo's dumps replayed on the CPU and on the GPU, a decode step against torch on the
#       same GPU, the allocation replay); one report.
#       Exits 0 when everything passed, 1 when something failed.
# --rehearse DIR  (CI, on a machine without a GPU) --run must load every binary of the pack in
#       an empty environment and stop at the device check, and a pack less one library must
#       be refused naming it.
# [BUILDDIR]  (no option; a machine with both a GPU and the build dependencies) --pack into
#       BUILDDIR/pack, then --run it.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
PACK=mate-gpu-pack.tar.gz
# What a bare CUDA machine has: glibc, the C++ runtime, the CUDA driver, runtime and cuBLAS.
DEVICE_HAS='ld-linux-x86-64.so.2 linux-vdso.so.1 libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0
librt.so.1 libresolv.so.2 libutil.so.1 libstdc++.so.6 libgcc_s.so.1 libcuda.so.1 libcudart.so.13
libcublas.so.13 libcublasLt.so.13'
# The size the pack must stay under: what travels is the working tree and the carried pack,
# 64 MiB together.
PACK_MAX_BYTES=$((56 * 1024 * 1024))

stage= work=
trap 'rm -rf ${stage:+"$stage"} ${work:+"$work"}' EXIT
die() { echo "gpu.sh: $*" >&2; exit 1; }
device_has() { case " $(echo $DEVICE_HAS) " in *" $1 "*) return 0 ;; esac; return 1; }
is_elf() { [ -f "$1" ] && [ ! -L "$1" ] && [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }
elfs() { find "$1" -type f | while read -r f; do is_elf "$f" && echo "$f"; done; }

# check_loads TREE: every ELF file under TREE resolves each library inside TREE or among the
# device's own (DEVICE_HAS), in an environment with no library path of ours.
check_loads() {
	local tree=$1 f n=0 bad=0 line name path
	for f in $(elfs "$tree"); do
		case $f in */tests/fakes/*) continue ;; esac   # the fake CUDA libraries of the CPU tests
		n=$((n + 1))
		while read -r line; do
			name=${line%% *}
			case $line in
			*"=> not found"*)
				device_has "$name" && [ -z "${CHECK_STRICT:-}" ] && continue
				echo "gpu.sh: ${f#$tree/}: $name not found" >&2; bad=$((bad + 1)) ;;
			*"=> "*)
				path=${line#*=> }; path=${path%% (*}
				case $path in "$tree"/*) continue ;; esac
				device_has "$name" && continue
				echo "gpu.sh: ${f#$tree/}: $name comes from $path, outside the pack" >&2; bad=$((bad + 1)) ;;
			esac
		done <<EOF
$(env -i PATH=/usr/bin:/bin ${LD_LIBRARY_PATH:+LD_LIBRARY_PATH=$LD_LIBRARY_PATH} ldd "$f" 2>&1 | sed 's/^[[:space:]]*//')
EOF
	done
	[ $bad -eq 0 ] || return 1
	echo "$n"
}

pack() {
	local dir=$1 build=${2:-$src/_build-gpu} f real rel lib name path n bytes fakes
	command -v patchelf >/dev/null || die "--pack needs patchelf (apt-get install patchelf)"
	command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] || die "--pack needs nvcc (the CUDA toolkit)"
	mkdir -p "$build" "$dir" || exit 1
	dir=$(cd "$dir" && pwd) build=$(cd "$build" && pwd)
	case $dir in "$src"/*)
		git -C "$src" check-ignore -q "$dir" || die "$dir is not ignored by git (use _gpu-pack)" ;;
	esac
	local log=$dir/pack.log
	: >"$log"
	if [ ! -f "$build/Makefile" ]; then
		[ -x "$src/configure" ] || (cd "$src" && autoreconf -fi) >>"$log" 2>&1 || die "autoreconf failed (see $log)"
		(cd "$build" && "$src/configure" --with-cuda) >>"$log" 2>&1 || die "configure failed (see $log)"
	fi
	grep -q '#define HAVE_CUDA 1' "$build/config.h" || die "$build is not a CUDA build (configure found no nvcc)"
	echo "gpu.sh: building in $build"
	make -C "$build" -j"$(nproc)" >>"$log" 2>&1 && make -C "$build" -j"$(nproc)" check TESTS= >>"$log" 2>&1 ||
		die "the build failed (see $log)"

	stage=$(mktemp -d "${TMPDIR:-/tmp}/mate-gpu-stage.XXXXXX") || exit 1
	mkdir -p "$stage/build" "$stage/lib" "$stage/py"
	# The build tree without objects, archives, makefiles and test results.
	tar -C "$build" --exclude='*.o' --exclude='*.lo' --exclude='*.a' --exclude=.deps \
	    --exclude='Makefile*' --exclude='*.log' --exclude='*.trs' --exclude=config.status \
	    --exclude=./pack --exclude='./_*' --exclude='./mate-*.tar.gz' -cf - . | tar -C "$stage/build" -xf - ||
		die "copying $build failed"
	# libtool's uninstalled programs are scripts that set the library path: the programs
	# themselves take their place (their RPATH finds the libraries instead).
	for f in $(grep -rl --include='*' -m 1 'temporary wrapper script for' "$stage/build" 2>/dev/null); do
		is_elf "$f" && continue
		real=$(dirname "$f")/.libs/lt-$(basename "$f")
		[ -f "$real" ] || real=$(dirname "$f")/.libs/$(basename "$f")
		[ -f "$real" ] && cp "$real" "$f"
	done
	# The libraries the programs need, other than the device's own, from this machine's
	# Debian packages; then every ELF file's RPATH: the build's .libs and the pack's lib/,
	# relative to itself, before what it had (the CUDA toolkit's folder).
	for f in $(elfs "$stage/build"); do
		LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$f" 2>/dev/null
	done | sed 's/^[[:space:]]*//' | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
	while read -r name path; do
		case $path in "$build"/*) continue ;; esac
		device_has "$name" && continue
		[ -f "$stage/lib/$name" ] || cp -L "$path" "$stage/lib/$name"
	done
	# A test program linked against a fake that the device has no real library for (the fake
	# NCCL of tests/nccl-prog) takes the fakes' folder too; one whose fakes stand for the
	# device's own libraries (the CUDA runtime, cuBLAS) gets the real ones there.
	for f in $(elfs "$stage"); do
		case $f in */tests/fakes/*) continue ;; esac
		rel=$(realpath --relative-to="$(dirname "$f")" "$stage")
		path=$(patchelf --print-rpath "$f" 2>/dev/null)
		fakes=
		for name in $(ldd "$f" 2>/dev/null | awk -v d="$build/tests/fakes/" '$2 == "=>" && index($3, d) == 1 { print $1 }'); do
			device_has "$name" || fakes=":\$ORIGIN/$rel/build/tests/fakes/.libs"
		done
		patchelf --force-rpath --set-rpath "\$ORIGIN/$rel/build/.libs:\$ORIGIN/$rel/build/tests/.libs:\$ORIGIN/$rel/lib$fakes${path:+:$path}" "$f" ||
			die "patchelf failed on $f"
	done
	# FlashInfer's own api_logging.py and the modules it imports, unmodified, for the
	# FlashInfer replay tests: the whole package is 0.5 GB.
	if [ -n "${PYTHON_PEERS:-}" ]; then
		path=$("$PYTHON_PEERS" -c 'import importlib.util as u; print(u.find_spec("flashinfer").submodule_search_locations[0])' 2>/dev/null)
		if [ -n "$path" ] && [ -f "$path/api_logging.py" ]; then
			# with what it imports when it decorates (version, fi_trace, trace/); not jit/,
			# whose level-5 statistics kernel it would build with nvcc (it warns instead)
			mkdir -p "$stage/py/flashinfer"
			for f in api_logging.py version.py _build_meta.py fi_trace.py trace; do
				[ -e "$path/$f" ] && tar -C "$path" --exclude=__pycache__ -cf - "$f" | tar -C "$stage/py/flashinfer" -xf -
			done
		fi
	fi
	{
		echo "mate GPU pack: $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?') $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "built with: $(nvcc --version 2>/dev/null | tail -n 1), $(cc --version | head -n 1)"
		echo "expects on the device: $(echo $DEVICE_HAS)"
		echo "flashinfer api_logging: $([ -f "$stage/py/flashinfer/api_logging.py" ] && echo packed || echo 'not packed (no PYTHON_PEERS)')"
		echo "files (bytes, path):"
		(cd "$stage" && find . -type f -printf '%s %P\n' | sort -k2)
	} >"$stage/MANIFEST"
	CHECK_STRICT= n=$(check_loads "$stage") || die "the pack does not load on its own (above)"
	rm -f "$dir/$PACK"
	tar -C "$stage" -czf "$dir/$PACK" . || die "writing $dir/$PACK failed"
	cp "$stage/MANIFEST" "$dir/MANIFEST"
	bytes=$(stat -c %s "$dir/$PACK")
	[ "$bytes" -le $PACK_MAX_BYTES ] || die "$dir/$PACK is $bytes bytes, over $PACK_MAX_BYTES"
	printf 'gpu.sh: packed %s: %d ELF files, %d libraries from Debian, %.1f MiB\n' "$dir/$PACK" "$n" \
	    "$(ls "$stage/lib" | wc -l)" "$(echo "$bytes" | awk '{ print $1 / 1048576 }')"
}

# ---- --run ------------------------------------------------------------------------------
# The tests that need a GPU: each CUDA kernel against its CPU twin, the CUDA module's loading,
# the CUDA recorder with the real runtime, mate-record of a real CUDA program with cuBLAS,
# the torch comparison on the CUDA kernels; with the peers, FlashInfer's recorded calls
# replayed on the device (mate-replay's default where one is present).
GPU_TESTS="tests/test_kernels_cuda tests/cli/test_cuda_module.sh tests/test_recorder_cuda
tests/interop/test_kernels_torch_cuda.sh tests/cli/test_record_gpu.sh tests/cli/test_replay_export_cuda.sh"
PEER_TESTS="tests/interop/test_flashinfer_attn.py tests/interop/test_fi_fp8_kv.py
tests/interop/test_fi_model_step.py tests/interop/test_fi_replay_gemm_bits.py"
BUDGET_S=${MATE_GPU_BUDGET_S:-480}
# limit MAX: the seconds a step may take, MAX at most, within what is left of the budget
# (0 when less than 20 s is left: the step is not started)
limit() {
	local left=$((BUDGET_S - ($(date +%s) - t0)))
	[ $left -gt "$1" ] && left=$1
	[ $left -ge 20 ] && echo $left || echo 0
}

run() {
	local dir=$1 out t0 n tb line res rc pass=0 fail=0 skip=0 t
	dir=$(cd "$dir" 2>/dev/null && pwd) || die "no pack folder $1"
	[ -f "$dir/$PACK" ] || die "no $PACK in $dir (make it with --pack $1 where the build is)"
	t0=$(date +%s)
	work=$(mktemp -d "${TMPDIR:-/tmp}/mate-gpu.XXXXXX") || exit 1
	tar -C "$work" -xzf "$dir/$PACK" || die "extracting $dir/$PACK failed"
	out=${OUT:-$work/out}
	mkdir -p "$out" "$work/logs"
	tb=$work/build
	# The CUDA runtime and cuBLAS: the toolkit's folder the build recorded, else wherever the
	# device keeps them (another toolkit folder, PyTorch's NVIDIA wheels).
	if env -i PATH=/usr/bin:/bin ldd "$tb/.libs/mate-cuda.so" 2>/dev/null | grep -q 'not found'; then
		local d found=
		for d in /usr/local/cuda/lib64 /usr/local/cuda-*/lib64 /usr/local/cuda*/targets/x86_64-linux/lib \
		    $(python3 -c 'import nvidia, os; [print(os.path.join(p, q, "lib")) for p in nvidia.__path__ for q in os.listdir(p)]' 2>/dev/null); do
			[ -f "$d/libcudart.so.13" ] || [ -f "$d/libcublas.so.13" ] || continue
			found="$found${found:+:}$d"
		done
		[ -n "$found" ] && export LD_LIBRARY_PATH="$found${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	fi
	if ! n=$(CHECK_STRICT=1 check_loads "$work" 2>&1); then
		if nvidia-smi -L >/dev/null 2>&1; then echo "$n"; die "the pack does not load here (above)"; fi
		# without a GPU machine's CUDA runtime, only the device's own libraries may be missing
		n=$(check_loads "$work" 2>&1) || { echo "$n"; die "the pack does not load here (above)"; }
	fi
	if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
		echo "gpu.sh: every binary of the pack loaded ($n ELF files); no GPU here (nvidia-smi -L finds none): nothing to verify"
		exit 77
	fi
	local report=$out/gpu-report.txt
	exec 3>&1 1> >(tee "$report" >&3)
	echo "==== mate GPU report ($(date -u '+%Y-%m-%d %H:%M UTC'), pack of $(head -n 1 "$work/MANIFEST" | cut -d' ' -f4-))"
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/device: /'
	echo "nvcc: $(nvcc --version 2>/dev/null | tail -n 1); python: $("${MATE_GPU_PYTHON:-python3}" -c 'import torch, sys; print(sys.version.split()[0], "torch", torch.__version__)' 2>&1 | tail -n 1)"
	echo "loaded: $n ELF files, ${LD_LIBRARY_PATH:+CUDA libraries from $LD_LIBRARY_PATH}"
	local py=${MATE_GPU_PYTHON:-python3}
	export top_srcdir=$src top_builddir=$tb PYTHON_TORCH=$py PYTHON_PEERS=$py \
	    PYTHONPATH="$src/tests:$src/tests/tools:$work/py" PYTHONDONTWRITEBYTECODE=1 MATE_LOGLEVEL=0 \
	    MATE_CUDA_MODULE="$tb/.libs/mate-cuda.so" TMPDIR="$work"
	local tests=$GPU_TESTS
	[ -f "$work/py/flashinfer/api_logging.py" ] && tests="$tests $PEER_TESTS" ||
		echo "note: the pack has no FlashInfer api_logging.py: FlashInfer's replay tests are left out"
	for t in $tests; do
		local lim=$(limit 180)
		if [ "$lim" -eq 0 ]; then
			echo "TIME  $t: not run, the ${BUDGET_S} s budget is spent"; fail=$((fail + 1)); continue
		fi
		local lf=$work/logs/$(echo "$t" | tr / _).log s0=$(date +%s)
		case $t in
		*.sh) (cd "$tb" && timeout "$lim" sh "$src/$t") >"$lf" 2>&1 ;;
		*.py) (cd "$tb" && timeout "$lim" sh "$src/tests/run-python.sh" "$src/$t") >"$lf" 2>&1 ;;
		*) (cd "$tb" && timeout "$lim" "$tb/$t") >"$lf" 2>&1 ;;
		esac
		rc=$?
		case $rc in 0) res=PASS; pass=$((pass + 1)) ;; 77) res=SKIP; skip=$((skip + 1)) ;; *) res=FAIL; fail=$((fail + 1)) ;; esac
		line=
		[ $rc -eq 0 ] || line=$(grep -m 1 -E 'SKIP|FAIL|rror|Timeout' "$lf")
		[ $rc -eq 124 ] && line="timed out after $lim s"
		printf '%-5s %s (%d s)%s\n' "$res" "$t" $(($(date +%s) - s0)) "${line:+: $line}"
	done

	# compute-sanitizer's memcheck over the CUDA kernel tests
	if command -v compute-sanitizer >/dev/null 2>&1 && [ "$(limit 150)" -gt 0 ]; then
		local lf=$work/logs/memcheck.log s0=$(date +%s)
		(cd "$tb" && timeout "$(limit 150)" compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
		    "$tb/tests/test_kernels_cuda") >"$lf" 2>&1
		rc=$?
		case $rc in 0) res=PASS; pass=$((pass + 1)) ;; *) res=FAIL; fail=$((fail + 1)) ;; esac
		printf '%-5s compute-sanitizer --tool memcheck tests/test_kernels_cuda (%d s): %s\n' "$res" \
		    $(($(date +%s) - s0)) "$(grep -m 1 'ERROR SUMMARY' "$lf" || tail -n 1 "$lf")"
	elif command -v compute-sanitizer >/dev/null 2>&1; then
		echo "TIME  compute-sanitizer: not run, the ${BUDGET_S} s budget is spent"; fail=$((fail + 1))
	else
		echo "FAIL  compute-sanitizer: not on this machine"; fail=$((fail + 1))
	fi

	# Figures: the demo's dumps replayed on the CPU and on the GPU (same dumps, one run).
	echo "---- figures"
	MATE_LOGLEVEL=10 MATE_DUMP_DIR="$work/demo" MATE_LOGDEST=/dev/null MATE_DEMO_THREADS=2 \
		MATE_DEMO_ROUNDS=2 "$tb/examples/mate-demo" >/dev/null 2>&1
	local dev s1
	for dev in cpu cuda; do
		s0=$(date +%s%N)
		"$tb/src/replay/mate-replay" --device "$dev" --status completed "$work/demo" >"$work/logs/demo-$dev.log" 2>&1
		rc=$?
		s1=$(date +%s%N)
		printf 'replay of the demo on %-4s: exit %d, %s, %s s\n' "$dev" "$rc" \
		    "$(tail -n 1 "$work/logs/demo-$dev.log")" "$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')"
		[ $rc -eq 0 ] && pass=$((pass + 1)) || fail=$((fail + 1))
	done
	# One decode step recorded by FlashInfer's decorator: mate-replay's CUDA and CPU kernels
	# against the torch reference on the same GPU.
	if [ -f "$work/py/flashinfer/api_logging.py" ]; then
		for dev in cuda cpu; do
			[ "$(limit 120)" -gt 0 ] || { echo "TIME  bench decode ($dev): not run, the budget is spent"; fail=$((fail + 1)); continue; }
			timeout "$(limit 120)" "$py" "$src/bench/replay-decode.py" "$tb" --device "$dev" --batch 32 --kv 2048 \
			    >"$work/logs/bench-decode-$dev.log" 2>&1
			rc=$?
			sed 's/^/bench decode ('"$dev"'): /' "$work/logs/bench-decode-$dev.log" | tail -n 4
			[ $rc -eq 0 ] && pass=$((pass + 1)) || fail=$((fail + 1))
		done
	fi
	# An allocation log replayed through the device allocators against malloc.
	awk 'BEGIN { print "Thread,Time,Action,Pointer,Size,Stream"
		for (i = 0; i < 2000; i++) {
			printf "1,00:00:00.%06d,allocate,0x%x,%d,0\n", i, 268435456 + i * 1048576, 4096 + i * 512
			if (i % 2) printf "1,00:00:00.%06d,free,0x%x,%d,0\n", i, 268435456 + (i - 1) * 1048576, 4096 + (i - 1) * 512
		} }' >"$work/mem.csv"
	"$tb/src/replay/mate-replay" --memlog "$work/mem.csv" --allocator malloc --allocator cuda \
		--allocator cuda-async >"$work/logs/memlog.log" 2>&1
	rc=$?
	sed 's/^/allocation replay: /' "$work/logs/memlog.log"
	[ $rc -eq 0 ] && pass=$((pass + 1)) || fail=$((fail + 1))
	echo "time: $(($(date +%s) - t0)) s"
	echo "$pass passed, $fail failed, $skip skipped"
	exec 1>&3 3>&-
	wait
	tar -C "$work/logs" -czf "$out/gpu-logs.tar.gz" . 2>/dev/null
	[ $fail -eq 0 ] && [ $skip -eq 0 ]
}

# ---- --rehearse -------------------------------------------------------------------------
# rehearse DIR: what CI checks of a pack on a machine without a GPU: --run, in an environment
# with nothing of ours (env -i), loads every binary and stops at the device check (exit 77);
# and the check itself works: the same pack less one of its libraries is refused by name.
rehearse() {
	local dir=$1 outp rc broken
	dir=$(cd "$dir" 2>/dev/null && pwd) || die "no pack folder $1"
	outp=$(env -i PATH=/usr/bin:/bin HOME="${HOME:-/}" bash "$src/tests/gpu.sh" --run "$dir" 2>&1)
	rc=$?
	echo "$outp"
	[ $rc -eq 77 ] || die "rehearsal: --run exited $rc, not 77 (no GPU here)"
	case $outp in *"every binary of the pack loaded"*) ;; *) die "rehearsal: --run did not load every binary" ;; esac
	work=$(mktemp -d "${TMPDIR:-/tmp}/mate-gpu-rehearse.XXXXXX") || exit 1
	mkdir -p "$work/t" "$work/broken"
	tar -C "$work/t" -xzf "$dir/$PACK" || die "extracting $dir/$PACK failed"
	[ -f "$work/t/lib/libcjson.so.1" ] || die "rehearsal: the pack has no lib/libcjson.so.1"
	rm "$work/t/lib/libcjson.so.1"
	tar -C "$work/t" -czf "$work/broken/$PACK" . || exit 1
	outp=$(env -i PATH=/usr/bin:/bin HOME="${HOME:-/}" bash "$src/tests/gpu.sh" --run "$work/broken" 2>&1)
	rc=$?
	case $rc:$outp in
	1:*"libcjson.so.1 comes from /"*"outside the pack"*) ;;
	*) echo "$outp"; die "rehearsal: a pack without libcjson.so.1 was not refused by name (exit $rc)" ;;
	esac
	echo "gpu.sh: rehearsal passed: the pack loads on its own, and one without libcjson.so.1 is refused"
}

case ${1:-} in
--rehearse) [ -n "${2:-}" ] || die "usage: gpu.sh --rehearse DIR"; rehearse "$2" ;;
--pack) [ -n "${2:-}" ] || die "usage: gpu.sh --pack DIR [BUILDDIR]"; pack "$2" "${3:-}" ;;
--run) [ -n "${2:-}" ] || die "usage: gpu.sh --run DIR"; run "$2" ;;
-h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
-*) die "unknown option $1 (see gpu.sh --help)" ;;
*)
	b=${1:-$src/_build-gpu}
	(pack "$b/pack" "$b") || exit 1
	run "$b/pack"
	;;
esac
