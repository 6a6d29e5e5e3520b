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

/* FlashInfer's chain_speculative_sampling: the drafts (B, n, V) and their
 * tokens (B, n), the target's probabilities (B, n + 1, V); the recorded
 * tokens and accepted counts (NULL: none, or not of the shape); the
 * counters the call adds to (NULL: zeros). */
typedef struct mate_chain_spec {
	const mate_tensor *draft_probs, *draft_ids, *target_probs;
	const mate_tensor *rec_ids, *rec_accepted;
	const mate_tensor *accepted_in, *emitted_in;
} mate_chain_spec;

/*! mate_cpu_chain_spec_check() : the recorded tokens of each row checked
 * by property (the uniforms are Philox draws, not recorded): the drafts
 * kept, up to the last token that is not -1, each had a nonzero target
 * probability; that token is one a rejection there could give (the
 * draft's target probability at most its draft probability, the token of
 * positive target - draft, in float32) or, every draft kept, a bonus token
 * of positive target probability; -1 after it. out_ids (B, n + 1) gets
 * the recorded token where it fits, -1 where it does not (V where -1 was
 * recorded); out_emitted (B) the counter plus the drafts kept, exactly;
 * out_accepted (B) the recorded count where the draws allow it (the kept
 * drafts, plus from the first one redrawn on at least those whose target
 * probability exceeds the draft's and at most those of nonzero target
 * probability), else the nearest bound. Every draft token is checked
 * against V first. */
int mate_cpu_chain_spec_check(const mate_chain_spec *s, const mate_tensor *out_ids,
    const mate_tensor *out_accepted, const mate_tensor *out_emitted, mate_error *err);
/*! mate_cpu_top_k_check() : FlashInfer's top_k(input (B, V), k): whether
 * each row of indices (B, k) holds k distinct tokens none of which is
 * smaller than a token left out (sorted: in non-increasing order);
 * out_idx gets the indices, -1 in a row's first bad place, and out_val
 * input's values at them. */
int mate_cpu_top_k_check(const mate_tensor *input, const mate_tensor *indices, int sorted,
    const mate_tensor *out_val, const mate_tensor *out_idx, mate_error *err);

/* FlashInfer's top_k_ragged_transform and top_k_page_table_transform: scores
 * input (rows, max_len), each row's window [row_starts[i], + lengths[i])
 * (row_starts NULL: 0); a window position l becomes l + offsets[i] (ragged;
 * page_table NULL) or page_table[row_to_batch[i] (NULL: i), pt_starts[i]
 * (NULL: the row's start) + l / page_size] * page_size + l % page_size;
 * the recorded indices rec (rows, k), NULL: none. */
typedef struct mate_topk_ragged {
	const mate_tensor *input, *offsets, *lengths, *row_starts, *rec;
	const mate_tensor *page_table, *row_to_batch, *pt_starts;
	int64_t k, page_size;
} mate_topk_ragged;

/*! mate_cpu_top_k_ragged_check() : whether each row of rec holds, in any
 * order, what min(k, length) top positions of its window become (none of
 * a smaller score than a position left out; ties at the boundary either
 * way; NaN the smallest), and -1 in the other places. out (rows, k) gets
 * rec, with the first bad place of a row -1 (-2 where -1 was recorded);
 * without rec, what the top positions become, largest score first. Every
 * length and start, the page table's rows, columns and pages in each
 * window, and page_size are checked first. */
int mate_cpu_top_k_ragged_check(const mate_topk_ragged *a, const mate_tensor *out,
    mate_error *err);

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
/*! mate_cpu_layernorm() : FlashInfer's layernorm: out (rows, H) = (x -
 * mean) / sqrt(var + eps) * gemma + beta per row of x (rows, H), the
 * mean and the (biased) variance in double, rounded once to out's dtype;
 * gemma and beta (H). */
int mate_cpu_layernorm(const mate_tensor *x, const mate_tensor *gemma, const mate_tensor *beta,
    double eps, const mate_tensor *out, mate_error *err);
/* fused_qk_rmsnorm_rope's parameters (FlashInfer's names, shortened). */
typedef struct mate_qk_norm_rope {
	int64_t ppf, pph, ppw, frame_channels, height_channels, width_channels;
	int64_t heads_q, heads_k, heads_v, head_dim;
	double eps, base, factor, low, high, attention_factor, out_scale, v_scale;
	int interleave, qk_norm, output_fp8;
} mate_qk_norm_rope;

/*! mate_cpu_qk_norm_rope() : FlashInfer's fused_qk_rmsnorm_rope on qkv
 * (num_tokens, (heads_q + heads_k + heads_v) * head_dim) bfloat16: per
 * token, all Q heads RMS-normed together with q_weight (K with k_weight;
 * bf16-rounded unless output_fp8), then rotated at the token's (frame,
 * height, width) position within ppf x pph x ppw, channels [0, frame),
 * [frame, + height), [height end, head_dim) taking each coordinate, with
 * the kernel's float32 frequency table (YaRN when factor != 1, times
 * attention_factor); V copied. Out (num_tokens, heads * head_dim) each,
 * bfloat16 or float8 e4m3 (Q, K times out_scale, V times v_scale,
 * saturated). Every count is checked against the tensors first. */
int mate_cpu_qk_norm_rope(const mate_tensor *qkv, const mate_tensor *q_weight,
    const mate_tensor *k_weight, const mate_qk_norm_rope *p, const mate_tensor *q_out,
    const mate_tensor *k_out, const mate_tensor *v_out, mate_error *err);

/* Scale-factor layouts of FlashInfer's block quantization (its SfLayout values):
 * 128x4 and 8x4 swizzled tiles, rows padded to 128 (8) and blocks to 4, or linear. */
enum { MATE_SF_128X4 = 0, MATE_SF_8X4 = 1, MATE_SF_LINEAR = 2 };
/*! mate_sf_rows(), mate_sf_cols() : the scale tensor's rows and block columns for
 * rows x cols scales, padded as the layout pads them. */
int64_t mate_sf_rows(int layout, int64_t rows);
int64_t mate_sf_cols(int layout, int64_t cols);
/*! mate_sf_offset() : the byte of the scale of (row, block col) of cols blocks a row
 * (quantization_utils.cuh's get_sf_out_offset_128x4 / _8x4, or row-major). */
int64_t mate_sf_offset(int layout, int64_t row, int64_t col, int64_t cols);

/* A block quantization: NVFP4 (16 e2m1 values per e4m3 scale times global_scale),
 * MXFP4 (32 e2m1 per ue8m0 scale) or MXFP8 (32 e4m3 per ue8m0 scale). */
typedef struct mate_block_quant {
	int block;               /* elements per scale: 16 or 32 */
	int ue8m0;               /* ue8m0 scales (power of two, rounded up); else e4m3 */
	int fp8;                 /* e4m3 elements (MXFP8, ue8m0 scales); else e2m1 pairs */
	int fp8_in;              /* set by the kernel: a float8_e4m3fn input (its fp8 recipe) */
	int layout;              /* MATE_SF_* */
	float global_scale;      /* the e4m3 scales' factor (already inverted if asked) */
	int64_t kpad;            /* elements a row of the output (>= K; zeros past K) */
	const mate_tensor *rec_q, *rec_sf;  /* the recorded outputs, or NULL */
} mate_block_quant;
/*! mate_cpu_block_quantize() : FlashInfer's fp4_quantize / mxfp8_quantize of x
 * (..., K) float16 or bfloat16 (fp4_quantize: or float8_e4m3fn): per block the scale from max |x| (e4m3: global_scale
 * * max / 6 rounded to nearest; ue8m0: max / 6 or / 448 rounded up to a power of
 * two), the elements times its reciprocal rounded to nearest even (e2m1 saturated at
 * 6, packed low nibble first; e4m3 clamped to 448) into q (..., kpad / 2 or kpad)
 * bytes, the scale codes into sf (any shape, its row-major bytes in the layout,
 * padding zero). An e2m1 output of a float8_e4m3fn x takes the fp8 recipe
 * (cvt_warp_fp8_to_fp4): the values times 6 / global_scale rounded to float16, the
 * scale global_scale * max / 6 (e4m3 or ue8m0), the values times global_scale / scale.
 * Where a recorded output is given and its code differs from this
 * kernel's by one step across a boundary the value lies on within 2^-20 (the
 * kernel's approximate reciprocals), the recorded code is taken. */
int mate_cpu_block_quantize(const mate_tensor *x, const mate_block_quant *p, const mate_tensor *q,
    const mate_tensor *sf, mate_error *err);
/*! mate_cpu_block_dequantize() : out (rows, K) = e2m1 value of q (rows, K / 2)
 * times its block's scale (ue8m0: the code as a float's exponent bits; else e4m3)
 * times global_scale; sf (any shape) read row-major in the layout. */
int mate_cpu_block_dequantize(const mate_tensor *q, const mate_tensor *sf, int block, int layout,
    int ue8m0, float global_scale, const mate_tensor *out, mate_error *err);
/*! mate_cpu_rmsnorm_quant() : FlashInfer's rmsnorm_quant (residual NULL) and
 * fused_add_rmsnorm_quant: per row of x (rows, H) (plus residual, which is then
 * written rounded to its dtype; the float sum is normed) x / sqrt(mean(x^2) + eps) *
 * weight / scale in float32, clamped to out's float8 range and rounded into out. */
int mate_cpu_rmsnorm_quant(const mate_tensor *x, const mate_tensor *residual, const mate_tensor *w,
    float scale, double eps, const mate_tensor *out, mate_error *err);
/*! mate_cpu_mxfp4_dequantize_host() : FlashInfer's mxfp4_dequantize_host: out (n, k)
 * = e2m1 value of q (n, k / 2) (code 8 is +0) times 2^(code - 127) of its group's byte of
 * sf (n, k / group) (0xff: NaN). */
int mate_cpu_mxfp4_dequantize_host(const mate_tensor *q, const mate_tensor *sf, int64_t group,
    const mate_tensor *out, mate_error *err);

/* One operand of a block-scaled GEMM (mm_fp4, mm_mxfp8): rows x K values along K,
 * e2m1 pairs (packed low nibble first, rows x K / 2 bytes) or float8_e4m3fn (rows x K),
 * one scale per block of `block` along a row, an e4m3 or a ue8m0 code in sf's bytes
 * (any shape, read row-major) at mate_sf_offset(layout, row, block col, K / block). */
typedef struct mate_scaled_operand {
	const mate_tensor *q;    /* (rows, K / 2) or (rows, K), any strides */
	const mate_tensor *sf;   /* the layout's bytes for rows x K / block scales */
	int fp4;                 /* e2m1 pairs; else e4m3 elements */
	int ue8m0;               /* 2^(code - 127), code 255 NaN; else e4m3 codes */
	int block;               /* 16 or 32 */
	int layout;              /* MATE_SF_* */
} mate_scaled_operand;
/*! mate_cpu_dequantize_operand() : out (rows, K) float32 = each value of op times its
 * block's scale (exact: a product of at most 4 and 4 significant bits); every size
 * (K a multiple of the block, the scale bytes the layout needs) checked first. */
int mate_cpu_dequantize_operand(const mate_scaled_operand *op, const mate_tensor *out,
    mate_error *err);
/*! mate_cpu_mm_row_scaled() : out (M, N) = alpha_i * (a (M, K) @ b (K, N)) in float32,
 * rounded once into out's dtype; alpha NULL (1), one element or M (one per row of a). */
int mate_cpu_mm_row_scaled(const mate_tensor *a, const mate_tensor *b, const mate_tensor *alpha,
    const mate_tensor *out, mate_error *err);

#endif /* MATE_KERNELS_FI_H_INCLUDED */
