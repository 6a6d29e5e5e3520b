## mk/kernels.mk: lib/kernels, libmate's CPU compute kernels (OpenBLAS opened on first use),
## their tests, fuzz target and benchmark. The CUDA kernels are mk/cuda.mk's.
libmate_impl_la_SOURCES += lib/kernels/kernels.h lib/kernels/kernels.c \
	lib/kernels/kernels_cpu.h lib/kernels/kernels_cpu_util.c \
	lib/kernels/kernels_cpu_norm.c lib/kernels/kernels_cpu_norm_tmpl.h \
	lib/kernels/kernels_cpu_gemm.c lib/kernels/kernels_segment.c lib/kernels/blas.h \
	lib/kernels/blas.c lib/kernels/kernels_cpu_attn.c lib/kernels/kernels_cpu_attn_tmpl.h \
	lib/kernels/kernels_paged.h lib/kernels/kernels_cpu_paged.c
## CPU kernels of FlashInfer's RoPE, sampling filters and bit packing
libmate_impl_la_SOURCES += lib/kernels/kernels_fi.h lib/kernels/kernels_cpu_rope.c
libmate_impl_la_SOURCES += lib/kernels/kernels_cpu_sampling.c
libmate_impl_la_SOURCES += lib/kernels/kernels_cpu_bits.c
## ... and of its layernorm and fused_qk_rmsnorm_rope
libmate_impl_la_SOURCES += lib/kernels/kernels_cpu_layernorm.c
libmate_impl_la_SOURCES += lib/kernels/kernels_cpu_qknorm.c
## ... and of its NVFP4, MXFP4 and MXFP8 block quantization
libmate_impl_la_SOURCES += lib/kernels/kernels_cpu_quant.c
## OpenBLAS is opened on first use (lib/kernels/blas.c), not linked: only its headers here
libmate_impl_la_CFLAGS += $(OPENBLAS_CFLAGS) -DMATE_BLAS_SONAME='"$(OPENBLAS_SONAME)"'
libmate_impl_la_LIBADD += -lm

C_TESTS += tests/test_kernels
tests_test_kernels_SOURCES = tests/unit/test_kernels.c
tests_test_kernels_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
tests_test_kernels_LDADD = libmate_impl.la $(OPENBLAS_LIBS)
C_TESTS += tests/test_kernels_quant
tests_test_kernels_quant_SOURCES = tests/unit/test_kernels_quant.c
tests_test_kernels_quant_LDADD = libmate_impl.la

## tests/kernel-run: runs one kernel on tensors from a safetensors file, for the torch test.
check_PROGRAMS += tests/kernel-run
tests_kernel_run_SOURCES = tests/tools/kernel-run.c
tests_kernel_run_LDADD = libmate_impl.la
SCRIPT_TESTS += tests/interop/test_kernels_torch.py

## bench/replay-gemm: 2048^3 f32 GEMM through the mm kernel vs cblas_sgemm (make bench).
BENCH_BINS += bench/replay-gemm
bench_replay_gemm_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
bench_replay_gemm_LDADD = libmate_impl.la $(OPENBLAS_LIBS)

## fuzz/fuzz_kernels: CPU kernels on arbitrary shapes, strides, dtypes and parameters.
FUZZ_TARGETS += fuzz/fuzz_kernels
fuzz_fuzz_kernels_SOURCES = fuzz/fuzz_kernels.c
fuzz_fuzz_kernels_LDADD = libmate_impl.la
fuzz_fuzz_kernels_LDFLAGS = $(FUZZER_LINK)

## libmate-openblas-lazy.sh: OpenBLAS is opened on first use, never linked into libmate.
SCRIPT_TESTS += tests/cli/test_libmate_openblas_lazy.sh
