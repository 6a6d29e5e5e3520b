/* kernels_fi.h: CPU reference kernels of FlashInfer's RoPE, sampling filters and bit packing (private; host tensors only). */
#ifndef MATE_KERNELS_FI_H_INCLUDED
#define MATE_KERNELS_FI_H_INCLUDED

#include "kernels.h"

/*! mate_kernel_int_at() : element i (row-major) of a host integer or bool
 * tensor, widened; unsigned 64-bit values past INT64_MAX read as -1. */
int64_t mate_kernel_int_at(const mate_tensor *t, int64_t i);
/*! mate_kernel_check_ints() : t is a 1-D integer host tensor of at least
 * need elements. @return MATE_OK or MATE_ERR_ARGUMENT naming what. */
int mate_kernel_check_ints(const mate_tensor *t, const char *what, int64_t need, mate_error *err);

/* How positions become angles (FlashInfer's pos_enc.cuh): for dimension d
 * < rotary_dim, pair index i (d / 2 interleaved, d mod rotary_dim/2
 * otherwise), freq = (1/theta)^(2i / rotary_dim) in float32, then with
 * the Llama 3.1 smoothing s = clamp(freq * a + b, 0, 1) (a = b = 0 for
 * plain RoPE) freq = (1 - s) * freq / rope_scale + s * freq; the angle is
 * float(pos) * freq. With cos_sin_cache (float32, (positions, rotary_dim),
 * cosines then sines) the table gives cos and sin instead. */
typedef struct mate_rope_params {
	int64_t rotary_dim;          /* even, <= head_dim; dimensions past it are copied */
	int interleave;              /* pairs (2i, 2i+1); else (i, i + rotary_dim/2) */
	double rope_scale, rope_theta;
	int llama31;
	double low_freq_factor, high_freq_factor, old_context_len;
	const mate_tensor *cos_sin_cache;   /* not NULL: the angles come from it */
} mate_rope_params;

/*! mate_cpu_rope() : in (nnz, H, D) rotated at positions pos[0..nnz) into
 * out (same shape; may be in itself). @return MATE_OK, MATE_ERR_ARGUMENT,
 * MATE_ERR_UNSUPPORTED (dtype) or MATE_ERR_NOMEM, with err. */
int mate_cpu_rope(const mate_tensor *in, const mate_tensor *out, const int64_t *pos,
    const mate_rope_params *p, mate_error *err);

/* A per-row parameter of FlashInfer's sampling APIs: a number, or a
 * tensor of one element or one per row (top_k int32, top_p float32). */
typedef struct mate_row_param {
	const mate_tensor *t;        /* NULL: v for every row */
	double v;
} mate_row_param;

/* The filters a sampler applies before drawing (sampling.py). top_k <= 0
 * or >= V, top_p >= 1 and min_p <= 0 filter nothing. */
typedef struct mate_sample_filter {
	int from_logits;             /* softmax the row first */
	mate_row_param top_k, top_p, min_p;
	int joint;                   /* top_p over the whole row ("joint"), else
	                                over the top-k survivors ("top_k_first") */
} mate_sample_filter;

/*! mate_cpu_top_k_renorm() : probs (B, V) keeping the values >= the k-th
 * largest of each row, renormalised to sum 1, others 0, into out. */
int mate_cpu_top_k_renorm(const mate_tensor *probs, const mate_row_param *top_k,
    const mate_tensor *out, mate_error *err);
/*! mate_cpu_top_p_renorm() : probs (B, V) keeping the largest values whose
 * mass above them is below top_p of the row's sum, renormalised. */
int mate_cpu_top_p_renorm(const mate_tensor *probs, const mate_row_param *top_p,
    const mate_tensor *out, mate_error *err);
/*! mate_cpu_top_k_mask_logits() : logits (B, V) with the values below each
 * row's k-th largest set to -inf, into out. */
int mate_cpu_top_k_mask_logits(const mate_tensor *logits, const mate_row_param *top_k,
    const mate_tensor *out, mate_error *err);
/*! mate_cpu_sample_check() : whether each recorded sample (samples (n),
 * from row indices[i] of x (B, V), or row i without indices) is a token
 * filter f allows (nonzero probability after the filters, with a relative
 * margin of 1e-5 at the top-p and min-p boundaries): out (n, an integer
 * tensor) gets the sample, or -1 where it is not allowed. @return MATE_OK
 * or an error; *first_bad the first such i, or -1. */
int mate_cpu_sample_check(const mate_tensor *x, const mate_tensor *indices,
    const mate_sample_filter *f, const mate_tensor *samples, const mate_tensor *out,
    int64_t *first_bad, mate_error *err);
/*! mate_cpu_top_k_check() : FlashInfer's top_k(input (B, V), k): whether
 * each row of indices (B, k) holds k distinct tokens none of which is
 * smaller than a token left out (sorted: in non-increasing order);
 * out_idx gets the indices, -1 in a row's first bad place, and out_val
 * input's values at them. */
int mate_cpu_top_k_check(const mate_tensor *input, const mate_tensor *indices, int sorted,
    const mate_tensor *out_val, const mate_tensor *out_idx, mate_error *err);

/*! mate_cpu_packbits() : elements [begin, end) of x (row-major, nonzero
 * is 1) packed 8 to a byte, the first in the high bit (big) or the low
 * bit (little), into bytes at, at+1, ... of out (uint8, 1-D). */
int mate_cpu_packbits(const mate_tensor *x, int64_t begin, int64_t end, int little,
    const mate_tensor *out, int64_t at, mate_error *err);
/*! mate_cpu_add_bias() : out (rows, N) = acc (float32) + bias (N), rounded
 * once to out's dtype. */
int mate_cpu_add_bias(const mate_tensor *acc, const mate_tensor *bias, const mate_tensor *out,
    mate_error *err);
/*! mate_cpu_silu_store() : out (rows, N) = silu(acc), rounded once to
 * out's dtype (float8 e4m3fn saturated to +-448 first). */
int mate_cpu_silu_store(const mate_tensor *acc, const mate_tensor *out, mate_error *err);

#endif /* MATE_KERNELS_FI_H_INCLUDED */
