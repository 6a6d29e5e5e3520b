#!/bin/bash
# tests/ci.sh: the full test run: make check, the main job (examples/run-demo.sh), make install,
# make distcheck, make check under ASan/UBSan (static, and shared for the preload library),
# and the fuzz targets on their seed corpora (fuzz/corpus/NAME for fuzz/fuzz_NAME.c).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
fuzz_seconds=${MATE_FUZZ_SECONDS:-60}

step() { printf '\n==== %s ====\n' "$*"; }

# The tests that need libmate-preload.so (or libmate.so itself, through ctypes, or a shim
# that only a shared build makes): a static build has none, so they run in the shared
# sanitizer step below, not in the static one.
preload_tests="tests/cli/test_record_cblas.sh tests/cli/test_recorder_log_extra.sh tests/cli/test_record_exit.sh
	tests/cli/test_record_fakecuda.py tests/cli/test_record_gpu.sh tests/cli/test_record_man.sh
	tests/cli/test_record_memevents.py tests/cli/test_record_numpy.py tests/cli/test_record_profile.py
	tests/cli/test_record_callprofile.py tests/cli/test_record_benchlog.py tests/cli/test_name_filter.py
	tests/cli/test_record_signals.py tests/cli/test_record_static.sh tests/interop/test_memlog_rmm.py
	tests/interop/test_flashinfer_logtext.py tests/interop/test_peers_zmq_pandas.py tests/test_dlclose
	tests/cli/test_recorder_enospc.sh tests/cli/test_recorder_enospc_pt.sh
	tests/cli/test_libmate_openblas_lazy.sh tests/cli/test_record_summary.sh tests/cli/test_doc_examples.py
	tests/cli/test_dump_keys_work.py tests/cli/test_replay_export_blas.sh
	tests/cli/test_replay_shrink_blas.sh tests/cli/test_replay_shrink_cublas.sh
	tests/cli/test_record_torch_blas.py
	tests/cli/test_replay_cublas_tf32.sh
	tests/cli/test_replay_export_cuda.sh tests/cli/test_top_gpu.sh tests/cli/test_ring_fakecuda.py
	tests/cli/test_record_nccl.sh tests/cli/test_events_early_subscriber.sh"

# Only the GPU tests may skip (no GPU here, or a build without CUDA); any other skip is a
# test that did not run, and fails CI.
gpu_tests="tests/test_kernels_cuda tests/test_recorder_cuda tests/cli/test_cuda_module.sh
	tests/interop/test_kernels_torch_cuda.sh tests/cli/test_record_gpu.sh
	tests/cli/test_replay_export_cuda.sh"
no_skips() {
	local trs t bad=
	# automake's tests/NAME.trs: NAME without a .sh or .py extension
	for trs in $(find tests -name '*.trs'); do
		grep -q '^:test-result: SKIP' "$trs" || continue
		t=${trs%.trs}
		case " $(echo $gpu_tests | sed 's/\.\(sh\|py\)\>//g') " in
		*" $t "*) ;;
		*) bad="$bad $t" ;;
		esac
	done
	[ -z "$bad" ] || {
		for t in $bad; do echo "==== $t.log (skipped)"; cat "$t.log" 2>/dev/null; done
		echo "ci: tests skipped that must run here:$bad"; exit 1; }
}

# A test that skips without libmate-preload.so (mate_test.need_preload, record-common.sh)
# and is not in $preload_tests would skip in the static sanitizer step and fail it an hour
# in: say so now.
step "the preload tests are listed"
for t in $(grep -rl --include='*.py' -e '^need_preload()' tests) \
    $(grep -rl --include='*.sh' -e 'tools/record-common.sh' tests/cli); do
	case " $(echo $preload_tests) " in
	*" $t "*) ;;
	*) echo "ci: $t needs libmate-preload.so but is not in tests/ci.sh's preload_tests"; exit 1 ;;
	esac
done

step "autoreconf"
autoreconf -fi

step "build and make check"
rm -rf _build && mkdir _build && cd _build
../configure
make -j"$jobs"
make -j"$jobs" check || { cat test-suite.log; exit 1; }
no_skips

# The FlashInfer peer tests once more, on the newest flashinfer-python beside the pinned one
# (tests/peers-venv.sh keeps it in VENV/flashinfer-newest), so a new release's drift shows here.
fi_newest=${PYTHON_PEERS:+$(dirname "$(dirname "$PYTHON_PEERS")")/flashinfer-newest}
if [ -n "$fi_newest" ] && [ -d "$fi_newest/flashinfer" ]; then
	step "the FlashInfer peer tests on the newest flashinfer-python," \
		"$(cd "$fi_newest" && ls -d flashinfer_python-*.dist-info | sed 's/^flashinfer_python-//; s/\.dist-info$//')"
	fi_tests=$(cd .. && ls tests/interop/test_fi_*.py tests/interop/test_flashinfer_*.py)
	rm -f $(for t in $fi_tests; do echo "${t%.py}.log" "${t%.py}.trs"; done)
	MATE_FLASHINFER="$fi_newest" make -j"$jobs" check TESTS="$(echo $fi_tests)" ||
		{ cat test-suite.log; exit 1; }
	no_skips
elif [ -n "${CI:-}" ]; then
	echo "ci: no flashinfer-newest beside $PYTHON_PEERS (tests/peers-venv.sh makes it)"; exit 1
fi

step "the GPU pack: tests/gpu.sh --pack of this build, --rehearse (no GPU here)"
# What a developer carries to a lent GPU machine: every binary must load there with nothing
# but glibc, libstdc++ and CUDA's own libraries, and --run must get as far as the device check.
if grep -q '#define HAVE_CUDA 1' config.h; then
	../tests/gpu.sh --pack ../_gpu-pack . && ../tests/gpu.sh --rehearse ../_gpu-pack ||
		{ cat ../_gpu-pack/pack.log 2>/dev/null; exit 1; }
	cat ../_gpu-pack/MANIFEST | head -n 4
else
	echo "ci: configure found no nvcc: no CUDA build to pack"
fi

step "the main job (examples/run-demo.sh) in this build, into a scratch folder"
demo_out=$(mktemp -d "${TMPDIR:-/tmp}/mate-ci-demo.XXXXXX")
../examples/run-demo.sh --no-install --build . --out "$demo_out/demo" ||
	{ cat "$demo_out/demo/run-demo.log"; exit 1; }
rm -rf "$demo_out"

step "every benchmark once, in its short mode (tests/bench-smoke.sh): none rots"
# each must run and print its ratio; no time is judged
../tests/bench-smoke.sh .

step "install: make install with DESTDIR, then with prefix= (nothing left half done)"
rm -rf _destdir _prefix
make install DESTDIR="$PWD/_destdir" > /dev/null
make install prefix="$PWD/_prefix" > /dev/null
for d in "_destdir/usr/local" _prefix; do
	for f in bin/mate bin/mate-record bin/mate-replay lib/pkgconfig/libmate.pc \
		lib/mate/libmate-preload.so share/man/man1/mate.1; do
		[ -e "$d/$f" ] || { echo "ci: make install left no $d/$f"; exit 1; }
	done
done
rm -rf _destdir _prefix

step "make distcheck"
make -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS="--without-cuda" || {
	find mate-*/_build -name test-suite.log -exec cat {} + 2>/dev/null; exit 1; }
cd ..

step "sanitizers (ASan + UBSan, clang)"
rm -rf _build-san && mkdir _build-san && cd _build-san
../configure CC=clang --enable-sanitizers --without-cuda --disable-shared
make -j"$jobs"
static_tests=$(make -s print-tests | grep -v -x -F "$(printf '%s\n' $preload_tests)")
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	make -j"$jobs" check TESTS="$(echo $static_tests)" || { cat test-suite.log; exit 1; }
no_skips

step "stress: the tests that depend on time, 10 runs each, sanitizer build, 2 busy loops"
# Screens, sockets, signals, timers, child processes and monitors: each of these tests waits
# for the state it checks (checks.sh's wait_until, mate_test.wait_until, TEST_WAIT_UNTIL)
# and must pass every time on a loaded machine under a build several times slower than a
# plain one; a failing run's log is printed whole.
stress_tests="tests/test_wqueue tests/test_recorder_crash tests/test_events tests/test_events_stall
	tests/test_events_frames tests/test_events_bignum tests/test_events_budget tests/test_events_spoof tests/test_events_fork
	tests/cli/test_recorder_crash_pt.sh tests/cli/test_profile.py tests/cli/test_bench_log.py
	tests/cli/test_events_demo.py tests/cli/test_events_hostile_name.py tests/cli/test_events_flood.py
	tests/cli/test_events_curve.py tests/cli/test_events_ilog_trace.sh tests/cli/test_events_stale.sh
	tests/cli/test_events_top_batch.sh tests/cli/test_events_cli.sh tests/cli/test_events_tcp.sh
	tests/cli/test_events_announce.py tests/cli/test_events_top_tmux.sh
	tests/cli/test_trace_desync.sh tests/cli/test_top_ranks.sh tests/cli/test_top_all.sh
	tests/cli/test_top_hosts.sh"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	../tests/stress.sh -n "${MATE_STRESS_RUNS:-10}" -l 2 . $stress_tests
cd ..

step "sanitizers, shared (the preload library inside recorded programs, gcc)"
# The static build above has no libmate-preload.so, so its preload and
# mate-record tests ($preload_tests) run here: with an instrumented preload library
# inside uninstrumented programs (python, numpy, sh): ASan's runtime must be
# loaded before libc for its malloc to be used, hence LD_PRELOAD of libasan
# (and libstdc++, whose __cxa_throw ASan wraps), and
# verify_asan_link_order=0 since mate-record puts its library first.
# Leaks are the static build's job (python and sh do not free at exit);
# handle_segv=0 lets test_record_exit's SIGSEGV reach the program.
rm -rf _build-san-shared && mkdir _build-san-shared && cd _build-san-shared
../configure CC=gcc --enable-sanitizers --without-cuda
make -j"$jobs"
asan=$(readlink -f "$(gcc -print-file-name=libasan.so)")
cxx=$(readlink -f "$(gcc -print-file-name=libstdc++.so)")
LD_PRELOAD="$asan $cxx" \
	ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:abort_on_error=1:handle_segv=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	make -j"$jobs" check TESTS="$(echo $preload_tests)" || { cat test-suite.log; exit 1; }
no_skips
# None of them may have left its preload part out as in a static build.
if grep -rl --include='*.log' -e 'static-only' -e 'disable-shared' tests; then
	echo "ci: the preload library did not run in the shared sanitizer build"; exit 1
fi
cd ..

step "fuzz targets: every committed input, then ${fuzz_seconds}s of new ones each"
# Two parts. The committed corpus (fuzz/corpus/NAME: seeds and the inputs fuzzing found
# before) is replayed once, and any failure there fails CI: it is a regression, and the
# same on every run. The exploration after it starts from a fixed seed, but what a
# minute finds depends on the machine's speed: a new finding is printed whole, its input
# kept, and listed at the end, but CI does not fail by chance on it
# (MATE_FUZZ_STRICT=1 makes it fail). Fix it, and add the input to the corpus.
rm -rf _build-fuzz && mkdir _build-fuzz && cd _build-fuzz
../configure CC=clang --enable-fuzzing --without-cuda --disable-shared
make -j"$jobs" fuzz
found=""
for f in fuzz/fuzz_*; do
	[ -x "$f" ] || continue
	name=$(basename "$f")
	# fuzz/fuzz_NAME.c's seeds are in fuzz/corpus/NAME
	corpus="../fuzz/corpus/${name#fuzz_}"
	[ -d "$corpus" ] || { echo "ci: $name has no seed corpus $corpus"; exit 1; }
	echo "$name: the $(ls "$corpus" | wc -l) committed inputs of $corpus"
	if ! "$f" -runs=0 -rss_limit_mb=2048 -max_len=65536 "$corpus" > "$name-corpus.log" 2>&1; then
		cat "$name-corpus.log"
		echo "ci: $name fails on a committed input of $corpus (the log above names it)"
		exit 1
	fi
	mkdir -p "corpus-$name" "found-$name"
	echo "$name: new inputs for ${fuzz_seconds}s"
	# the whole output of a crash (its stack trace and the input that made it); the last
	# lines of a clean run
	if ! "$f" -seed=1 -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 -max_len=65536 \
		-artifact_prefix="found-$name/" "corpus-$name" "$corpus" > "$name.log" 2>&1; then
		cat "$name.log"
		echo "ci: $name found a new failing input: $PWD/found-$name/ (not a committed one)"
		found="$found $name"
		continue
	fi
	tail -n 3 "$name.log"
done
if [ -n "$found" ]; then
	echo "ci: the fuzz exploration found new failing inputs:$found (their logs are above)"
	[ "${MATE_FUZZ_STRICT:-0}" = 1 ] && exit 1
fi
echo "ci: all steps passed"
