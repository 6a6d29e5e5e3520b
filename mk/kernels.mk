## mk/kernels.mk: libmate's compute kernels (CPU through OpenBLAS, CUDA through cuBLAS), their tests and benchmark.
libmate_la_SOURCES += \
	lib/kernels.h \
	lib/kernels.c \
	lib/kernels_cpu.h \
	lib/kernels_cpu_util.c \
	lib/kernels_cpu_norm.c \
	lib/kernels_cpu_norm_tmpl.h \
	lib/kernels_cpu_gemm.c \
	lib/kernels_segment.c \
	lib/blas.h \
	lib/blas.c \
	lib/kernels_cpu_attn.c \
	lib/kernels_cpu_attn_tmpl.h \
	lib/kernels_paged.h \
	lib/kernels_cpu_paged.c \
	lib/parallel.h \
	lib/parallel.c
## CPU kernels of FlashInfer's RoPE, sampling filters and bit packing
libmate_la_SOURCES += lib/kernels_fi.h lib/kernels_cpu_rope.c
libmate_la_SOURCES += lib/kernels_cpu_sampling.c
libmate_la_SOURCES += lib/kernels_cpu_bits.c
## OpenBLAS is opened on first use (lib/blas.c), not linked: only its headers here
libmate_la_CFLAGS += $(OPENBLAS_CFLAGS) -DMATE_BLAS_SONAME='"$(OPENBLAS_SONAME)"'
libmate_la_LIBADD += -lm

check_PROGRAMS += tests/test_kernels
TESTS += tests/test_kernels
tests_test_kernels_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
tests_test_kernels_LDADD = libmate.la $(OPENBLAS_LIBS)

## tests/kernel-run: runs one kernel on tensors from a safetensors file, for the torch test.
check_PROGRAMS += tests/kernel-run
tests_kernel_run_LDADD = libmate.la
TESTS += tests/test_kernels_torch.py
EXTRA_DIST += tests/test_kernels_torch.py

## bench/replay-gemm: 2048^3 f32 GEMM through the mm kernel vs cblas_sgemm (make bench).
BENCH_BINS += bench/replay-gemm
bench_replay_gemm_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
bench_replay_gemm_LDADD = libmate.la $(OPENBLAS_LIBS)

if HAVE_CUDA
## mate-cuda.so: the CUDA backend, kernels and allocators, in pkglibdir,
## opened by libmate when a device is first asked for (lib/cuda_module.c).
## It exports mate_cuda_module() alone.
pkglib_LTLIBRARIES += mate-cuda.la
mate_cuda_la_SOURCES = \
	lib/cuda_module.h \
	lib/cuda_module_entry.c \
	lib/backend_cuda.cu \
	lib/kernels_cuda.h \
	lib/kernels_cuda.cu \
	lib/kernels_cuda_gemm.cu \
	lib/kernels_cuda_attn.cu \
	lib/alloc_replay_cuda.c
mate_cuda_la_CFLAGS = $(AM_CFLAGS) $(CUDA_CFLAGS)
# libmate is linked as a plain shared object, not as libmate.la: libtool
# would relink the module at install time against $(libdir), and so fail
# on `make install prefix=DIR` after half the files were installed. The
# module needs libmate.so.0 (DT_NEEDED), which is the libmate that opens it.
mate_cuda_la_LDFLAGS = -module -avoid-version -shared \
	-export-symbols-regex '^mate_cuda_module$$' $(AM_LDFLAGS) \
	-Wl,$(abs_top_builddir)/.libs/libmate.so
# nvcc's stubs for template kernels use the C++ ABI (static guards)
mate_cuda_la_LIBADD = $(CUDA_LIBS) -lstdc++
mate_cuda_la_DEPENDENCIES = libmate.la
check_PROGRAMS += tests/test_kernels_cuda tests/test_cuda_module
## a module from another mate version or ABI, which libmate refuses
check_LTLIBRARIES += tests/cuda-module-other.la
tests_cuda_module_other_la_SOURCES = tests/cuda_module_other.c
tests_cuda_module_other_la_LDFLAGS = -module -avoid-version -rpath /nowhere $(AM_LDFLAGS)
tests_test_cuda_module_LDADD = libmate.la
TESTS += tests/test_kernels_cuda
tests_test_kernels_cuda_CFLAGS = $(AM_CFLAGS) $(CUDA_CFLAGS)
tests_test_kernels_cuda_LDADD = libmate.la $(CUDA_LIBS)
endif

## The module opened on first use, or a clear error (skipped without CUDA).
TESTS += tests/test_cuda_module.sh
EXTRA_DIST += tests/test_cuda_module.sh

## The torch comparison again on the CUDA kernels (skipped without a device).
TESTS += tests/test_kernels_torch_cuda.sh
EXTRA_DIST += tests/test_kernels_torch_cuda.sh

## fuzz/fuzz_kernels: CPU kernels on arbitrary shapes, strides, dtypes and parameters.
FUZZ_TARGETS += fuzz/fuzz_kernels
fuzz_fuzz_kernels_SOURCES = fuzz/fuzz_kernels.c
fuzz_fuzz_kernels_LDADD = libmate.la
fuzz_fuzz_kernels_LDFLAGS = $(FUZZER_LINK)

## libmate-openblas-lazy.sh: OpenBLAS is opened on first use, never linked into libmate.
TESTS += tests/libmate-openblas-lazy.sh
EXTRA_DIST += tests/libmate-openblas-lazy.sh
