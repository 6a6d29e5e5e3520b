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

#endif /* MATE_KERNELS_FI_H_INCLUDED */
