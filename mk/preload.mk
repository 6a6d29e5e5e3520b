## mk/preload.mk: lib/preload, the interposers mate-record preloads (libmate-preload.so),
## and mate-record itself, with their tests (fake CUDA runtime, cuBLAS and driver).


## Unit tests of the memory log, the reader and the replay engine.
C_TESTS += tests/test_memlog
tests_test_memlog_SOURCES = tests/unit/test_memlog.c


## libmate-preload.so: the interposer (installed in pkglibdir). It does not
## link libmate, libcudart or libcublas: it loads libmate RTLD_LOCAL when
## recording is on and finds the real functions with dlsym().
pkglib_LTLIBRARIES += libmate-preload.la
libmate_preload_la_SOURCES = lib/preload/interpose_private.h lib/preload/interpose.c \
	lib/preload/interpose_blas.c lib/preload/interpose_cuda.c \
	lib/preload/interpose_cublas.c lib/preload/interpose_nccl.c lib/preload/nccl_abi.h \
	lib/core/logfile.h lib/core/logfile.c lib/core/util.h \
	lib/core/util_warn.c
libmate_preload_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden -DMATE_LIBDIR='"$(libdir)"'
libmate_preload_la_LDFLAGS = -module -avoid-version $(AM_LDFLAGS)
libmate_preload_la_LIBADD = -ldl -lm

## mate-record: the launcher.
bin_PROGRAMS += src/record/mate-record
src_record_mate_record_SOURCES = src/record/mate-record.c
src_record_mate_record_LDADD = src/fe/libmate_fe.la libmate.la

## Test-only fake CUDA runtime and cuBLAS (real sonames, computing on the
## CPU) and a CUDA program linked against them.
check_LTLIBRARIES += tests/fakes/libcudart.la tests/fakes/libcublas.la
tests_fakes_libcudart_la_SOURCES = tests/fakes/cudart.c tests/fakes/fake_cuda.h
tests_fakes_libcudart_la_LDFLAGS = -version-info 13:0:0 -rpath /nowhere $(AM_LDFLAGS)
tests_fakes_libcublas_la_SOURCES = tests/fakes/cublas.c tests/fakes/fake_cuda.h
tests_fakes_libcublas_la_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
tests_fakes_libcublas_la_LDFLAGS = -version-info 13:0:0 -rpath /nowhere $(AM_LDFLAGS)
tests_fakes_libcublas_la_LIBADD = $(OPENBLAS_LIBS)
check_PROGRAMS += tests/record-cuda-prog
tests_record_cuda_prog_SOURCES = tests/fakes/record-cuda-prog.c
tests_record_cuda_prog_LDFLAGS = -no-install -export-dynamic
tests_record_cuda_prog_LDADD = tests/fakes/libcublas.la tests/fakes/libcudart.la

## Test-only fake NCCL (the real soname, one rank's share of the arithmetic on the CPU) and
## a program that makes NCCL calls as one rank of a job.
check_LTLIBRARIES += tests/fakes/libnccl.la
tests_fakes_libnccl_la_SOURCES = tests/fakes/nccl.c lib/preload/nccl_abi.h
tests_fakes_libnccl_la_LDFLAGS = -version-info 2:0:0 -rpath /nowhere $(AM_LDFLAGS)
check_PROGRAMS += tests/nccl-prog
tests_nccl_prog_SOURCES = tests/fakes/nccl-prog.c
tests_nccl_prog_LDFLAGS = -no-install
tests_nccl_prog_LDADD = tests/fakes/libnccl.la
## NCCL's calls recorded: the log text, the ranks out of step, the rank from ncclCommInitRank.
SCRIPT_TESTS += tests/cli/test_record_nccl.sh

## Tests of mate-record: exit status and signals, the fake-CUDA program.
SCRIPT_TESTS += tests/cli/test_record_exit.sh tests/cli/test_record_signals.py \
	tests/cli/test_record_fakecuda.py tests/interop/test_memlog_rmm.py \
	tests/cli/test_record_memevents.py tests/cli/test_ring_fakecuda.py
EXTRA_DIST += tests/tools/record-common.sh tests/tools/rmm_log_parser.py
## What mate-record says after the run, and its --memlog of a run with no allocations.
SCRIPT_TESTS += tests/cli/test_record_summary.sh

## The memory-profile examples of the README and mate-record(1), run as printed.
SCRIPT_TESTS += tests/cli/test_record_profile.py

## A C program linked against CBLAS and Fortran BLAS, recorded and replayed.
check_PROGRAMS += tests/record-blas-prog
tests_record_blas_prog_SOURCES = tests/fakes/record-blas-prog.c
tests_record_blas_prog_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
tests_record_blas_prog_LDFLAGS = -no-install
tests_record_blas_prog_LDADD = $(OPENBLAS_LIBS)

## Benchmarks (make bench): interposer overhead (bench/record-overhead.sh runs it),
## cost per logged allocation, allocation replay events per second.
BENCH_BINS += bench/record-gemm
bench_record_gemm_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
bench_record_gemm_LDADD = $(OPENBLAS_LIBS)
EXTRA_DIST += bench/record-overhead.sh
BENCH_BINS += bench/memlog-bench

## The static CUDA runtime check: a stand-in program and a fake driver library.
check_LTLIBRARIES += tests/fakes/libcuda.la
tests_fakes_libcuda_la_SOURCES = tests/fakes/cuda_driver.c
tests_fakes_libcuda_la_LDFLAGS = -version-info 1:0:0 -rpath /nowhere $(AM_LDFLAGS)
check_PROGRAMS += tests/static-cudart-prog
C_TESTS += tests/test_elf_cuda
tests_static_cudart_prog_SOURCES = tests/fakes/static-cudart-prog.c
tests_static_cudart_prog_LDFLAGS = -no-install
tests_static_cudart_prog_LDADD = tests/fakes/libcuda.la
tests_test_elf_cuda_SOURCES = tests/unit/test_elf_cuda.c
SCRIPT_TESTS += tests/cli/test_record_static.sh

## Fuzz targets: the CSV reader and log check, the ELF check.
FUZZ_TARGETS += fuzz/fuzz_memlog fuzz/fuzz_elf_cuda
fuzz_fuzz_memlog_SOURCES = fuzz/fuzz_memlog.c
fuzz_fuzz_memlog_LDFLAGS = $(FUZZER_LINK)
fuzz_fuzz_elf_cuda_SOURCES = fuzz/fuzz_elf_cuda.c
fuzz_fuzz_elf_cuda_LDFLAGS = $(FUZZER_LINK)

## Man page (mate-replay(1) holds the --memlog section).
man_MANS += man/mate-record.1
EXTRA_DIST += man/mate-record.1

SCRIPT_TESTS += tests/cli/test_memlog_replay.sh

## numpy's matmul and a CBLAS program, recorded and replayed bit-exactly; torch 2.x's
## MKL products, within their reduction bound (PYTHON_PEERS).
SCRIPT_TESTS += tests/cli/test_record_numpy.py tests/cli/test_record_cblas.sh tests/cli/test_record_torch_blas.py

## A real CUDA program (CUDA builds), recorded and replayed on a GPU; skipped without one.
if HAVE_CUDA
check_PROGRAMS += tests/record-cuda-real
tests_record_cuda_real_SOURCES = tests/fakes/record-cuda-real.c
tests_record_cuda_real_CFLAGS = $(AM_CFLAGS) $(CUDA_CFLAGS)
tests_record_cuda_real_LDFLAGS = -no-install
tests_record_cuda_real_LDADD = $(CUDA_LIBS)
endif
SCRIPT_TESTS += tests/cli/test_record_gpu.sh
EXTRA_DIST += tests/fakes/record-cuda-real.c
SCRIPT_TESTS += tests/cli/test_record_man.sh
