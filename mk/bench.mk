## mk/bench.mk: `make bench` builds every benchmark program (areas add to BENCH_BINS).
EXTRA_PROGRAMS = $(BENCH_BINS)
CLEANFILES += $(BENCH_BINS)
.PHONY: bench
bench: $(BENCH_BINS) libmate.la

## tests/replay-gemm-fail: bench/replay-gemm built with a kernel table whose
## mm fails after the warm-up; tests/cli/test_bench_replay_gemm.sh checks it exits 1
## rather than report the failing kernel's time as a speed.
check_PROGRAMS += tests/replay-gemm-fail
tests_replay_gemm_fail_SOURCES = bench/replay-gemm.c tests/fakes/failing-mm.c tests/fakes/failing-mm.h
tests_replay_gemm_fail_CPPFLAGS = $(AM_CPPFLAGS) -include $(top_srcdir)/tests/fakes/failing-mm.h
tests_replay_gemm_fail_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
tests_replay_gemm_fail_LDADD = libmate_impl.la $(OPENBLAS_LIBS)
SCRIPT_TESTS += tests/cli/test_bench_replay_gemm.sh
EXTRA_DIST += bench/README.md bench/bench_util.h tests/bench-smoke.sh
EXTRA_DIST += bench/replay-decode.py bench/replay-mixed.py
