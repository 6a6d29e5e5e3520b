/* kernels_cpu.h: helpers shared by the CPU kernel files: dtype-converting row loads and stores, checks. */
#ifndef MATE_KERNELS_CPU_H_INCLUDED
#define MATE_KERNELS_CPU_H_INCLUDED

#include "mate_private.h"
#include "kernels.h"
#include "parallel.h"

/* FN(name): name_f or name_d, the float or double instance of a helper or
 * of a *_tmpl.h function, by SFX (f or d) where the template is included. */
#define FN_(n, s) n##_##s
#define FN2(n, s) FN_(n, s)
#define FN(n) FN2(n, SFX)

/* Element size times offset: the address of element `off` of t's storage. */
static inline char *
kc_at(const mate_tensor *t, int64_t off)
{
	return (char *)t->data + off * (int64_t)mate_dtype_size(t->dtype);
}

/* The storage offset of row r of t, rows being the flattened first nlead
 * dimensions (includes t->offset). */
int64_t kc_row_offset(const mate_tensor *t, int nlead, int64_t r);

/* Real floating dtypes the kernels read (f16, bf16, f32, f64, every f8). */
int kc_is_float(mate_dtype dt);
/* The dtypes they write: mate_kernel_out_dtype_ok() (kernels.h). */

/* Loads n elements at base (stride in elements) widened to float / double. */
void kc_load_f(mate_dtype dt, const void *base, int64_t stride, int64_t n, float *dst);
void kc_load_d(mate_dtype dt, const void *base, int64_t stride, int64_t n, double *dst);
/* Stores n values rounded (RNE) to dt. */
void kc_store_f(mate_dtype dt, void *base, int64_t stride, int64_t n, const float *src);
void kc_store_d(mate_dtype dt, void *base, int64_t stride, int64_t n, const double *src);

/* Checks that t is a usable host tensor of ndim dims (ndim < 0: at least
 * one) with a readable float dtype (out: a writable one). */
int kc_check(const mate_tensor *t, const char *what, int ndim, int out, mate_error *err);
/* Checks a shape dimension. */
int kc_check_dim(const mate_tensor *t, const char *what, int d, int64_t want,
    mate_error *err);

/* 64-byte aligned scratch; NULL with err set on failure. Free with free(). */
void *kc_alloc(int64_t count, size_t size, mate_error *err);

/* Widens the rows x cols matrix at base (element strides s0, s1) into dst,
 * contiguous row-major, in parallel. */
void kc_gather_f(mate_dtype dt, const void *base, int64_t rows, int64_t cols,
    int64_t s0, int64_t s1, float *dst);
void kc_gather_d(mate_dtype dt, const void *base, int64_t rows, int64_t cols,
    int64_t s0, int64_t s1, double *dst);
/* Rounds the contiguous rows x cols matrix src into the matrix at base. */
void kc_scatter_f(mate_dtype dt, void *base, int64_t rows, int64_t cols,
    int64_t s0, int64_t s1, const float *src);
void kc_scatter_d(mate_dtype dt, void *base, int64_t rows, int64_t cols,
    int64_t s0, int64_t s1, const double *src);

/* Dot products and sums of squares with 8 partial sums (vectorisable). */
float kc_dot_f(const float *x, const float *y, int64_t n);
double kc_dot_d(const double *x, const double *y, int64_t n);

static inline float
kc_sumsq_f(const float *x, int64_t n)
{
	return kc_dot_f(x, x, n);
}

static inline double
kc_sumsq_d(const double *x, int64_t n)
{
	return kc_dot_d(x, x, n);
}

/* Per-file kernel entry points collected into the table (kernels_cpu.c). */
int mate_cpu_rmsnorm(const mate_tensor *, const mate_tensor *, double, const mate_tensor *, mate_error *);
int mate_cpu_gemma_rmsnorm(const mate_tensor *, const mate_tensor *, double, const mate_tensor *, mate_error *);
int mate_cpu_fused_add_rmsnorm(const mate_tensor *, const mate_tensor *, const mate_tensor *, double, mate_error *);
int mate_cpu_gemma_fused_add_rmsnorm(const mate_tensor *, const mate_tensor *, const mate_tensor *, double, mate_error *);
int mate_cpu_silu_and_mul(const mate_tensor *, const mate_tensor *, mate_error *);
int mate_cpu_gelu_and_mul(const mate_tensor *, const mate_tensor *, mate_error *);
int mate_cpu_gelu_tanh_and_mul(const mate_tensor *, const mate_tensor *, mate_error *);
int mate_cpu_softmax(const mate_tensor *, double, const mate_tensor *, const mate_tensor *, mate_error *);
int mate_cpu_mm(const mate_tensor *, const mate_tensor *, const mate_tensor *, mate_error *);
int mate_cpu_bmm(const mate_tensor *, const mate_tensor *, const mate_tensor *, mate_error *);
int mate_cpu_bmm_fp8(const mate_tensor *, const mate_tensor *, const mate_tensor *, const mate_tensor *, const mate_tensor *, mate_error *);
int mate_cpu_mm_fp8(const mate_tensor *, const mate_tensor *, const mate_tensor *, const mate_tensor *, mate_error *);
int mate_cpu_single_decode(const mate_tensor *, const mate_tensor *, const mate_tensor *, const mate_attn_params *, const mate_tensor *, const mate_tensor *, mate_error *);
int mate_cpu_single_prefill(const mate_tensor *, const mate_tensor *, const mate_tensor *, const mate_attn_params *, const mate_tensor *, const mate_tensor *, mate_error *);
int mate_cpu_gemm(const mate_gemm_call *, mate_error *);

#endif /* MATE_KERNELS_CPU_H_INCLUDED */
