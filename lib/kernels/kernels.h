/* kernels.h: libmate's compute kernels for the replayable operations of spec/ops.md (private). */
#ifndef MATE_KERNELS_H_INCLUDED
#define MATE_KERNELS_H_INCLUDED

#include <stdint.h>
#include "mate_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Conventions shared by every kernel:
 * - Inputs and outputs are mate_tensor views with any non-negative strides;
 *   outputs are allocated by the caller, and their dtype is the output dtype
 *   (so `out_dtype`, `o_dtype` and `dtype` arguments are the out tensor's).
 *   Outputs must not overlap inputs, except where a kernel works in place
 *   (and rmsnorm with out == input). Every view must lie within its
 *   storage: the file readers check that; the kernels check shapes, dtypes
 *   and that element counts do not overflow.
 * - Arithmetic is float32 (float64 when the inputs are float64); f16, bf16
 *   and f8 inputs are widened exactly, results are rounded once to the
 *   output dtype (round to nearest even).
 * - Each returns MATE_OK or a negative mate_status with err set:
 *   MATE_ERR_ARGUMENT for shapes or dtypes that do not fit together,
 *   MATE_ERR_UNSUPPORTED for a valid mode a kernel does not implement,
 *   MATE_ERR_NOMEM, or (CUDA) MATE_ERR_IO for a failed device call.
 * - CPU kernels need host tensors. CUDA kernels take device tensors and
 *   also host tensors, which they stage through device memory (inputs are
 *   copied in, outputs copied back), so one call works on either.
 */

enum mate_kv_layout { MATE_KV_NHD = 0, MATE_KV_HND = 1 };        /* FlashInfer's TensorLayout */
enum mate_pos_encoding {                                          /* FlashInfer's PosEncodingMode */
	MATE_POS_NONE = 0,
	MATE_POS_ROPE_LLAMA = 1,
	MATE_POS_ALIBI = 2
};

/*! mate_kv_layout_from_name() : "NHD"/"HND" -> enum, -1 when unknown. */
int mate_kv_layout_from_name(const char *name);
/*! mate_pos_encoding_from_name() : "NONE", "ROPE_LLAMA", "ALIBI" (also
 * "PosEncodingMode.ROPE_LLAMA") -> enum; -1 when unknown (e.g. "ROPE_LLAMA_INTERLEAVED"). */
int mate_pos_encoding_from_name(const char *name);

/* Parameters of single_decode_with_kv_cache / single_prefill_with_kv_cache. */
typedef struct mate_attn_params {
	int kv_layout;             /* enum mate_kv_layout */
	int pos_encoding_mode;     /* enum mate_pos_encoding */
	int causal;                /* prefill: row i sees j <= i + (Lk - Lq) */
	int64_t window_left;       /* >= 0: only kv positions >= qpos - window_left */
	double logits_soft_cap;    /* > 0: z = c * tanh(z / c) */
	double sm_scale;           /* > 0, else 1/sqrt(D) */
	double rope_scale;         /* > 0, else 1 */
	double rope_theta;         /* > 0, else 1e4 */
	double q_scale, k_scale, v_scale;    /* 1 when absent */
	const mate_tensor *custom_mask;      /* prefill: (Lq, Lk), nonzero keeps; overrides causal */
	const mate_tensor *packed_custom_mask; /* prefill: u8, Lq*Lk bits, little bit order */
	int lse_base_e;            /* 0: lse in log2 units as FlashInfer returns it; 1: natural log */
	const mate_tensor *sinks;  /* (Hq) host float: exp(sinks[h]) joins head h's softmax
	                            * denominator (attention sinks; CPU only), or NULL */
} mate_attn_params;

/*! mate_attn_params_init() : FlashInfer's defaults (NHD, NONE, no mask, no
 * window, no soft cap, default scales). */
void mate_attn_params_init(mate_attn_params *p);

/* CBLAS constants, so recorded arguments pass through unchanged. */
enum mate_blas_order { MATE_BLAS_ROW_MAJOR = 101, MATE_BLAS_COL_MAJOR = 102 };
enum mate_blas_trans { MATE_BLAS_NO_TRANS = 111, MATE_BLAS_TRANS = 112, MATE_BLAS_CONJ_TRANS = 113 };

/* A recorded GEMM call: C = alpha op(A) op(B) + beta C (cblas_?gemm, ?gemm_,
 * cuBLAS). a, b and c are the recorded buffers (any shape: only their
 * elements in row-major order matter, and there must be enough of them for
 * the leading dimensions); c is read and written. With batch > 1 the
 * operands of batch i start stride_{a,b,c} * i elements in. f32 (or f64)
 * buffers go to sgemm (dgemm) with the recorded arguments, so a replay on
 * the same BLAS is bit-exact; other dtypes (cuBLAS GemmEx) are widened to
 * f32 and the result rounded to c's dtype. */
typedef struct mate_gemm_call {
	int order;                 /* enum mate_blas_order; Fortran and cuBLAS: column major */
	int transa, transb;        /* enum mate_blas_trans, or 'N'/'T'/'C' */
	int64_t m, n, k;
	double alpha, beta;
	const mate_tensor *a, *b, *c;
	int64_t lda, ldb, ldc;
	int fortran;               /* CPU: call sgemm_/dgemm_ rather than cblas_ */
	int64_t batch;             /* <= 1: one product */
	int64_t stride_a, stride_b, stride_c;
} mate_gemm_call;

struct mate_batch_attn;   /* kernels_paged.h */

/* The kernel table of a backend. Every entry is set. */
typedef struct mate_kernels {
	const char *name;          /* "cpu" or "cuda" */
	/* rmsnorm(input (..., H), weight (H), eps) -> out (..., H). */
	int (*rmsnorm)(const mate_tensor *input, const mate_tensor *weight,
	    double eps, const mate_tensor *out, mate_error *err);
	/* In place: residual += input; input = rmsnorm(residual) * weight. */
	int (*fused_add_rmsnorm)(const mate_tensor *input, const mate_tensor *residual,
	    const mate_tensor *weight, double eps, mate_error *err);
	/* As rmsnorm, with (weight + 1). */
	int (*gemma_rmsnorm)(const mate_tensor *input, const mate_tensor *weight,
	    double eps, const mate_tensor *out, mate_error *err);
	int (*gemma_fused_add_rmsnorm)(const mate_tensor *input, const mate_tensor *residual,
	    const mate_tensor *weight, double eps, mate_error *err);
	/* act(x[..., :D]) * x[..., D:]: input (..., 2D) -> out (..., D). */
	int (*silu_and_mul)(const mate_tensor *input, const mate_tensor *out, mate_error *err);
	int (*gelu_and_mul)(const mate_tensor *input, const mate_tensor *out, mate_error *err);
	int (*gelu_tanh_and_mul)(const mate_tensor *input, const mate_tensor *out, mate_error *err);
	/* softmax(logits / t, -1), logits (B, V); t is temperature_t[b] when
	 * temperature_t (B elements, or 1) is given, else temperature. */
	int (*softmax)(const mate_tensor *logits, double temperature,
	    const mate_tensor *temperature_t, const mate_tensor *out, mate_error *err);
	/* a (M, K) @ b (K, N) -> out (M, N), through BLAS. */
	int (*mm)(const mate_tensor *a, const mate_tensor *b, const mate_tensor *out,
	    mate_error *err);
	/* a (B, M, K) @ b (B, K, N) -> out (B, M, N). */
	int (*bmm)(const mate_tensor *a, const mate_tensor *b, const mate_tensor *out,
	    mate_error *err);
	/* (A * A_scale) @ (B * B_scale), fp8 A (b, m, k), B (b, k, n); scales
	 * are one-element tensors or NULL (1). */
	int (*bmm_fp8)(const mate_tensor *A, const mate_tensor *B, const mate_tensor *A_scale,
	    const mate_tensor *B_scale, const mate_tensor *out, mate_error *err);
	/* alpha * (a @ b), a (m, k), b (k, n); alpha one element or NULL. */
	int (*mm_fp8)(const mate_tensor *a, const mate_tensor *b, const mate_tensor *alpha,
	    const mate_tensor *out, mate_error *err);
	/* q (Hq, D), k/v (L, Hk, D) NHD or (Hk, L, D) HND -> out (Hq, Dv);
	 * lse (Hq) float when not NULL. */
	int (*single_decode)(const mate_tensor *q, const mate_tensor *k, const mate_tensor *v,
	    const mate_attn_params *p, const mate_tensor *out, const mate_tensor *lse,
	    mate_error *err);
	/* q (Lq, Hq, D), k/v (Lk, Hk, D) or (Hk, Lk, D) -> out (Lq, Hq, Dv);
	 * lse (Lq, Hq) when not NULL. A row with every position masked gives
	 * zeros and lse = -inf. */
	int (*single_prefill)(const mate_tensor *q, const mate_tensor *k, const mate_tensor *v,
	    const mate_attn_params *p, const mate_tensor *out, const mate_tensor *lse,
	    mate_error *err);
	/* A recorded BLAS/cuBLAS GEMM call, see mate_gemm_call. */
	int (*gemm)(const mate_gemm_call *call, mate_error *err);
	/* FlashInfer's batch attention on a paged or ragged KV cache, see
	 * kernels_paged.h (mate_batch_attention() calls it). */
	int (*batch_attention)(const struct mate_batch_attn *a, const mate_attn_params *p,
	    mate_error *err);
} mate_kernels;

/*! mate_kernels_cpu() : the CPU reference kernels (OpenBLAS for GEMMs,
 * multi-threaded; see mate_parallel_threads()). Never NULL. */
const mate_kernels *mate_kernels_cpu(void);
#ifdef HAVE_CUDA
/*! mate_kernels_cuda() : the CUDA kernels (cuBLAS for GEMMs), from the CUDA
 * module (mate-cuda.so, opened on the first call); NULL when it cannot be
 * loaded. Each kernel fails with MATE_ERR_UNSUPPORTED when no device is
 * present. */
const mate_kernels *mate_kernels_cuda(void);
#endif

/* FlashInfer's SegmentGEMMWrapper.run: for each segment i < batch_size,
 * rows [indptr[i], indptr[i+1]) of x (rows, d_in) times W =
 * weights[weight_indices[i]] (weights[i] when weight_indices is NULL),
 * stored (d_out, d_in) when column_major (x W^T) and (d_in, d_out) when
 * not, into the same rows of out (rows, d_out); other rows of out are left
 * as they are. indptr is seg_indptr when given, else the running sum of
 * seg_lens from 0; those and weight_indices are 1-D integer host tensors. */
typedef struct mate_segment_gemm_args {
	const mate_tensor *x, *weights, *out;
	int64_t batch_size;
	int column_major;
	const mate_tensor *seg_lens, *seg_indptr, *weight_indices;  /* NULL: not given */
} mate_segment_gemm_args;

/*! mate_segment_gemm() : the segment GEMM through k's mm, one call per
 * non-empty segment. Every bound and index is checked before the first
 * product. @return MATE_OK; MATE_ERR_UNSUPPORTED for dtypes other than
 * float32, float16 and bfloat16 (x and weights alike); MATE_ERR_ARGUMENT
 * for shapes, bounds or indices that do not fit. */
int mate_segment_gemm(const mate_kernels *k, const mate_segment_gemm_args *a, mate_error *err);

/* ---- helpers shared by the kernel files -------------------------------- */

/*! mate_kernel_scalar() : the value of a one-element host tensor widened
 * to double; def when t is NULL. @return MATE_OK or MATE_ERR_ARGUMENT. */
int mate_kernel_scalar(const mate_tensor *t, double def, double *out,
    const char *what, mate_error *err);

/*! mate_gemm_check() : validates a recorded GEMM call; sets *ta, *tb to 0
 * (N), 1 (T) or 2 (C) and need[] to the elements A, B and C must hold. */
int mate_gemm_check(const mate_gemm_call *g, int *ta, int *tb, int64_t need[3],
    mate_error *err);
/*! mate_attn_keep_mask() : the Lq x Lk keep mask (1 keeps) from p's
 * custom_mask or packed_custom_mask (host tensors); *keep is NULL when
 * there is neither, else malloc'ed (caller frees). */
int mate_attn_keep_mask(const mate_attn_params *p, int64_t Lq, int64_t Lk, uint8_t **keep,
    mate_error *err);
/*! mate_alibi_slope() : FlashInfer's ALiBi slope of head h of heads. */
double mate_alibi_slope(int64_t h, int64_t heads);
/*! mate_kernel_out_dtype_ok() : whether the kernels write dt (a mate_dtype):
 * f16, bf16, f32, f64, f8 e4m3fn and e5m2; the CPU kernels' outputs and
 * every tensor of the CUDA ones. */
static inline int
mate_kernel_out_dtype_ok(int dt)
{
	switch (dt) {
	case MATE_F16: case MATE_BF16: case MATE_F32: case MATE_F64:
	case MATE_F8_E4M3FN: case MATE_F8_E5M2:
		return 1;
	default:
		return 0;
	}
}

#ifdef __cplusplus
}
#endif
#endif /* MATE_KERNELS_H_INCLUDED */
