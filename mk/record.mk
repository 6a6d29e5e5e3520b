## mk/record.mk: lib/record, the recorder: configuration, the API log (levels 1-5), dumps
## (level 10), statistics, MATE_PROFILE, the memory log and recording sessions.
libmate_impl_la_SOURCES += lib/record/recorder_private.h lib/record/config.c \
	lib/record/logdest.c lib/record/profile.h lib/record/profile.c lib/record/recorder.c \
	lib/record/apilog.c lib/record/stats.c lib/record/pyfmt.c lib/record/dump_writer.c \
	lib/record/benchlog.h lib/record/benchlog.c lib/record/memlog.c \
	lib/record/record_summary.h lib/record/record_session.c lib/record/elf_cuda.c \
	lib/record/ring.h lib/record/ring.c
libmate_impl_la_CFLAGS += -DMATE_PKGLIBDIR='"$(pkglibdir)"' -DMATE_BINDIR='"$(bindir)"'

## recorder-golden: the reference program's calls through the C API.
check_PROGRAMS += tests/recorder-golden
tests_recorder_golden_SOURCES = tests/tools/recorder-golden.c
SCRIPT_TESTS += tests/cli/test_recorder_golden.sh
EXTRA_DIST += tests/tools/gen-golden-tensors.py

## test_recorder_dump: level-10 records, statuses, filters, limits, in-place outputs.
C_TESTS += tests/test_recorder_dump
tests_test_recorder_dump_SOURCES = tests/unit/test_recorder_dump.c
tests_test_recorder_dump_LDADD = libmate.la $(CJSON_LIBS)

## recorder-values: Python checks of float/string spelling in the log and records.
check_PROGRAMS += tests/recorder-values
tests_recorder_values_SOURCES = tests/tools/recorder-values.c
SCRIPT_TESTS += tests/cli/test_recorder_values.py
SCRIPT_TESTS += tests/interop/test_recorder_dumps.py tests/interop/torch2/test_recorder_dumps.sh
## In-place arguments: the outputs file holds the return value only, the
## in-place file the post-call values (libmate-example, mate-demo, torch.load).
SCRIPT_TESTS += tests/interop/test_recorder_inplace.py tests/interop/torch2/test_recorder_inplace.sh

## test_recorder_stats: level-5 statistics for every dtype.
C_TESTS += tests/test_recorder_stats
tests_test_recorder_stats_SOURCES = tests/unit/test_recorder_stats.c

## The man pages and libmate(3)'s example, built and checked by make check.
man_MANS += man/mate.7 man/libmate.3
EXTRA_DIST += man/mate.7 man/libmate.3 examples/libmate-example.c
check_PROGRAMS += examples/libmate-example
examples_libmate_example_SOURCES = examples/libmate-example.c
SCRIPT_TESTS += tests/cli/test_recorder_example.sh

## test_recorder_cuda: device tensors (CUDA builds; exits 77 without a device).
EXTRA_DIST += tests/unit/test_recorder_cuda.c
if HAVE_CUDA
C_TESTS += tests/test_recorder_cuda
tests_test_recorder_cuda_SOURCES = tests/unit/test_recorder_cuda.c
tests_test_recorder_cuda_CFLAGS = $(AM_CFLAGS) $(CUDA_CFLAGS)
tests_test_recorder_cuda_LDADD = libmate.la $(CUDA_LIBS)
endif

## crash safety and benchmark
## bench/recorder: level-0 overhead, calls/s at levels 1, 3, 10, large dumps against write().
BENCH_BINS += bench/recorder
bench_recorder_SOURCES = bench/recorder.c
## loops aligned alike, so that level 0 compares the instrumentation, not where the loops fall
bench_recorder_CFLAGS = $(AM_CFLAGS) -falign-loops=32 -falign-functions=64
## bench/dump-floor: the same files as a level-10 dump written and nothing else (plain libc),
## the floor bench/recorder's level-10 rows are measured against.
BENCH_BINS += bench/dump-floor
bench_dump_floor_SOURCES = bench/dump-floor.c

## test_recorder_fmt: float repr and fixed-point spellings against printf, vector float32
## statistics against the scalar path (pyfmt.c and stats.c linked in).
C_TESTS += tests/test_recorder_fmt
tests_test_recorder_fmt_SOURCES = tests/unit/test_recorder_fmt.c lib/record/pyfmt.c lib/record/stats.c lib/core/util_buf.c \
	lib/core/util_json.c
tests_test_recorder_fmt_LDADD = libmate.la $(CJSON_LIBS) -lm

## test_recorder_crash: abort() in an API, kill -9 at random instants (50 trials, 16 threads),
## fork() in the host; every dump parsed by tests/tools/dumpcheck.c. The _pt variant dumps .pt files.
C_TESTS += tests/test_recorder_crash
tests_test_recorder_crash_SOURCES = tests/unit/test_recorder_crash.c tests/tools/dumpcheck.c tests/tools/dumpcheck.h \
	tests/tools/recstress.c tests/tools/recstress.h
tests_test_recorder_crash_LDADD = libmate_impl.la $(CJSON_LIBS)
SCRIPT_TESTS += tests/cli/test_recorder_crash_pt.sh

## test_recorder_threads: 16 threads x 2,000 level-10 calls = 32,000 dumps and 64,000 lines
## (tmpfs at /dev/shm, else 77). The _pt variant dumps .pt files.
C_TESTS += tests/test_recorder_threads
tests_test_recorder_threads_SOURCES = tests/unit/test_recorder_threads.c tests/tools/dumpcheck.c tests/tools/dumpcheck.h \
	tests/tools/recstress.c tests/tools/recstress.h
tests_test_recorder_threads_LDADD = libmate.la $(CJSON_LIBS)
SCRIPT_TESTS += tests/cli/test_recorder_threads_pt.sh

## dump-check: the dump checker as a command for the shell tests.
check_PROGRAMS += tests/dump-check
tests_dump_check_SOURCES = tests/tools/dump-check.c tests/tools/dumpcheck.c tests/tools/dumpcheck.h
tests_dump_check_LDADD = libmate.la $(CJSON_LIBS)

## test_recorder_enospc: a full disk through an LD_PRELOAD shim (not built by --disable-shared
## builds, where the test skips with 77). The _pt variant dumps .pt files.
check_LTLIBRARIES += tests/enospc-shim.la
tests_enospc_shim_la_SOURCES = tests/fakes/enospc-shim.c
tests_enospc_shim_la_LDFLAGS = -module -avoid-version -rpath /nowhere
tests_enospc_shim_la_LIBADD = -ldl
SCRIPT_TESTS += tests/cli/test_recorder_enospc.sh tests/cli/test_recorder_enospc_pt.sh

## test_recorder_results: mate-demo's results and exit status are the same at every level.
SCRIPT_TESTS += tests/cli/test_recorder_results.sh

## examples/run-demo.sh: the main job (README): dependencies, build, mate-demo at level 10, what it recorded.
EXTRA_DIST += examples/run-demo.sh

## test_atomic_file: lib/core/error.c's atomic output (O_TMPFILE + link, or a named temporary + rename).
C_TESTS += tests/test_atomic_file
tests_test_atomic_file_SOURCES = tests/unit/test_atomic_file.c
tests_test_atomic_file_LDADD = libmate_impl.la

## test_pread_big: lib/core/error.c's split reads of large tensors, lib/core/value.c's storage padding.
C_TESTS += tests/test_pread_big
tests_test_pread_big_SOURCES = tests/unit/test_pread_big.c
tests_test_pread_big_LDADD = libmate_impl.la

## test_dlclose: a host that dlclose()s libmate while a recording thread still runs is not crashed.
C_TESTS += tests/test_dlclose
tests_test_dlclose_SOURCES = tests/unit/test_dlclose.c
tests_test_dlclose_LDADD = -ldl -lpthread

## recorder_logdest.sh: an unopenable MATE_LOGDEST: the log on stderr, one warning, as the pages say.
SCRIPT_TESTS += tests/cli/test_recorder_logdest.sh

## recorder_log_extra.sh: MATE_LOG_EXTRA=1: call ids and threads on the blocks, in-place tensors after the call.
SCRIPT_TESTS += tests/cli/test_recorder_log_extra.sh

## The stand-in "./program" of the documentation's examples: records rmsnorm, mm, decode and
## prefill through libmate, and a forked child that dies inside a call.
check_PROGRAMS += tests/doc-program
tests_doc_program_SOURCES = tests/fakes/doc-program.c
tests_doc_program_CPPFLAGS = $(MATE_LIB_CPPFLAGS)
tests_doc_program_LDADD = libmate.la -lm

## MATE_PROFILE and mate-list-dumps --unique agree; threads, a fork, SIGTERM and SIGINT
## leave whole files.
SCRIPT_TESTS += tests/cli/test_profile.py tests/cli/test_record_callprofile.py

## Every shell example of the man pages and the README runs as printed (tests/doc-program
## is their "./program").
SCRIPT_TESTS += tests/cli/test_doc_examples.py

## recorder_hostile_files.sh: FIFOs and symlinks planted at the log, instruction log and
## session.jsonl names neither block the host nor redirect its writes.
SCRIPT_TESTS += tests/cli/test_recorder_hostile_files.sh

## MATE_BENCH_LOG: a mate-bench line per distinct call, against the profile's entries in
## the command-line form; threads, forks, SIGTERM, unopenable and hostile paths.
check_PROGRAMS += tests/benchlog-calls
tests_benchlog_calls_SOURCES = tests/fakes/benchlog-calls.c
SCRIPT_TESTS += tests/cli/test_bench_log.py tests/cli/test_record_benchlog.py

## test_ring.py (peers): the flight recorder: 50 kill -9 at random instants, each ring written
## out as dumps that torch 2.x loads and mate-replay passes; forks, planted files, bad settings
## and damaged rings.
SCRIPT_TESTS += tests/cli/test_ring.py
check_PROGRAMS += tests/ring-threads
tests_ring_threads_SOURCES = tests/tools/ring-threads.c tests/tools/dumpcheck.c tests/tools/dumpcheck.h \
	tests/tools/recstress.c tests/tools/recstress.h
tests_ring_threads_LDADD = libmate.la $(CJSON_LIBS)

## Fuzz target for ring files (mate-list-dumps --ring): seeds are rings of killed recordings.
FUZZ_TARGETS += fuzz/fuzz_ring
fuzz_fuzz_ring_SOURCES = fuzz/fuzz_ring.c fuzz/fuzz_tmp.h
fuzz_fuzz_ring_LDADD = libmate_impl.la $(CJSON_LIBS)
fuzz_fuzz_ring_LDFLAGS = $(FUZZER_LINK)
