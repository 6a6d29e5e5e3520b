## mk/cuda.mk: lib/cuda, everything nvcc builds: the module mate-cuda.so (the CUDA backend,
## kernels and allocators) and its tests. Built when configure finds nvcc.
if HAVE_CUDA
## mate-cuda.so: the CUDA backend, kernels and allocators, in pkglibdir,
## opened by libmate when a device is first asked for (lib/core/cuda_module.c).
## It exports mate_cuda_module() alone.
pkglib_LTLIBRARIES += mate-cuda.la
mate_cuda_la_SOURCES = lib/core/cuda_module.h lib/cuda/cuda_host.h \
	lib/cuda/cuda_module_entry.c lib/cuda/backend_cuda.cu lib/cuda/kernels_cuda.h \
	lib/cuda/kernels_cuda.cu lib/cuda/kernels_cuda_gemm.cu lib/cuda/kernels_cuda_attn.cu \
	lib/cuda/kernels_cuda_paged.cu lib/cuda/alloc_replay_cuda.c
mate_cuda_la_CFLAGS = $(AM_CFLAGS) $(CUDA_CFLAGS)
## nvcc's objects get no automatic dependency tracking: each is rebuilt when
## a header it may include changes.
mate_cuda_deps = lib/cuda/kernels_cuda.h lib/cuda/cuda_host.h lib/core/cuda_module.h \
	lib/core/backend.h lib/core/mate_private.h lib/core/util.h lib/kernels/kernels.h \
	lib/kernels/kernels_paged.h lib/include/mate.h lib/include/mate_core.h \
	lib/include/mate_record.h lib/include/mate_replay.h lib/include/mate_events.h
lib/cuda/backend_cuda.lo lib/cuda/kernels_cuda.lo lib/cuda/kernels_cuda_gemm.lo \
	lib/cuda/kernels_cuda_attn.lo lib/cuda/kernels_cuda_paged.lo: $(mate_cuda_deps) config.h
# The module links no libmate: it calls libmate through the table that
# mate_cuda_module() is given (struct mate_cuda_host), so it also works in
# a program that links libmate statically (the tests on libmate_impl.la).
mate_cuda_la_LDFLAGS = -module -avoid-version -shared \
	-export-symbols-regex '^mate_cuda_module$$' $(AM_LDFLAGS)
# cuBLASLt for the fp8 GEMMs; nvcc's stubs for template kernels use the C++
# ABI (static guards)
mate_cuda_la_LIBADD = $(CUDA_LIBS) -lcublasLt -lstdc++
check_PROGRAMS += tests/test_cuda_module
C_TESTS += tests/test_kernels_cuda
## a module from another mate version or ABI, which libmate refuses
check_LTLIBRARIES += tests/cuda-module-other.la
tests_cuda_module_other_la_SOURCES = tests/fakes/cuda_module_other.c
tests_cuda_module_other_la_LDFLAGS = -module -avoid-version -rpath /nowhere $(AM_LDFLAGS)
tests_test_cuda_module_SOURCES = tests/unit/test_cuda_module.c
tests_test_kernels_cuda_SOURCES = tests/unit/test_kernels_cuda.c
tests_test_kernels_cuda_CFLAGS = $(AM_CFLAGS) $(CUDA_CFLAGS)
tests_test_kernels_cuda_LDADD = libmate_impl.la $(CUDA_LIBS)
## Tests linked with libmate_impl.la have no libmate.so to find the module
## beside: they are told where it is (test_cuda_module.sh unsets it).
AM_TESTS_ENVIRONMENT += \
	MATE_CUDA_MODULE='$(abs_top_builddir)/.libs/mate-cuda.so'; export MATE_CUDA_MODULE;
endif

## The module opened on first use, or a clear error (skipped without CUDA).
SCRIPT_TESTS += tests/cli/test_cuda_module.sh

## The torch comparison again on the CUDA kernels (skipped without a device).
SCRIPT_TESTS += tests/interop/test_kernels_torch_cuda.sh
