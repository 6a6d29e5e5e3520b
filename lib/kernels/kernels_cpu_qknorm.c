/* kernels_cpu_qknorm.c: CPU kernel of FlashInfer's fused_qk_rmsnorm_rope (norm/fused_qk_rmsnorm_rope.cuh): RMSNorm across all Q (and all K) heads of a token, 3-D (frame, height, width) RoPE, V copied; bf16 or float8 e4m3 out. */
#include "kernels_cpu.h"
#include "kernels_fi.h"

#include <math.h>
#include <stdlib.h>

/* The kernel's frequency of pair i of a section of dim_size channels (with YaRN when
 * factor != 1), in float32 as its host code computes it. */
static float
qk_freq(int64_t i, float base, int64_t dim_size, float factor, float low, float high)
{
	float f = powf(base, -2.0f * (float)i / (float)dim_size);

	if (factor != 1.0f) {
		float hi = fabsf(low - high) <= 1e-6f ? high + 0.001f : high;
		float ramp = fminf(fmaxf(((float)i - low) / (hi - low), 0.0f), 1.0f);

		f = f / factor * ramp + f * (1.0f - ramp);
	}
	return f;
}

/* v rounded to bfloat16. */
static float
to_bf16(float v)
{
	uint16_t b;

	kc_store_f(MATE_BF16, &b, 1, 1, &v);
	kc_load_f(MATE_BF16, &b, 1, 1, &v);
	return v;
}

/* Whether t is a 2-D (rows, cols) host tensor of dtype dt. */
static int
qk_2d(const mate_tensor *t, int64_t rows, int64_t cols, mate_dtype dt)
{
	return t != NULL && t->device_type == MATE_DEVICE_CPU && t->ndim == 2 && t->dtype == dt &&
	    t->shape[0] == rows && t->shape[1] == cols && t->data != NULL &&
	    mate_tensor_storage_extent(t) >= 0;
}

/* One token's Q or K heads (n heads, in at x[0 .. n D)) normed, rotated, into row r of out. */
static void
qk_heads(const mate_qk_norm_rope *p, float *x, int64_t n, const mate_tensor *w, const float *freq,
    const int64_t pos[3], const mate_tensor *out, int64_t r, float *tmp)
{
	int64_t D = p->head_dim, hs = p->frame_channels, ws = hs + p->height_channels;
	int fp8 = out->dtype != MATE_BF16;

	if (p->qk_norm) {
		double ss = 0;
		float rms;

		for (int64_t j = 0; j < n * D; j++)
			ss += (double)x[j] * x[j];
		rms = 1.0f / sqrtf((float)(ss / (double)(n * D)) + (float)p->eps);
		kc_load_f(w->dtype, kc_at(w, w->offset), w->stride[0], n * D, tmp);
		for (int64_t j = 0; j < n * D; j++) {
			x[j] = x[j] * rms * tmp[j];
			if (!fp8)   /* rounded to bf16 before the rotation */
				x[j] = to_bf16(x[j]);
		}
	}
	for (int64_t h = 0; h < n; h++) {
		float *v = x + h * D, *o = tmp + h * D;

		for (int64_t d = 0; d < D; d++) {
			int64_t c = p->interleave ? d & ~(int64_t)1 : (2 * d) & (D - 1);
			float other = p->interleave ? (d & 1 ? v[d - 1] : -v[d + 1]) :
			    (d < D / 2 ? -v[d + D / 2] : v[d - D / 2]);
			float th = (float)pos[c >= ws ? 2 : c >= hs ? 1 : 0] * freq[c >> 1];

			o[d] = v[d] * cosf(th) + other * sinf(th);
			if (p->factor != 1.0)
				o[d] *= (float)p->attention_factor;
			if (fp8)
				o[d] = fmaxf(-448.0f, fminf(448.0f, o[d] * (float)p->out_scale));
		}
	}
	kc_store_f(out->dtype, kc_at(out, kc_row_offset(out, 1, r)), out->stride[1], n * D, tmp);
}

int
mate_cpu_qk_norm_rope(const mate_tensor *qkv, const mate_tensor *qw, const mate_tensor *kw,
    const mate_qk_norm_rope *p, const mate_tensor *q_out, const mate_tensor *k_out,
    const mate_tensor *v_out, mate_error *err)
{
	int64_t D = p->head_dim, hq = p->heads_q, hk = p->heads_k, hv = p->heads_v, T, C, hw, seq;
	mate_dtype odt = p->output_fp8 ? MATE_F8_E4M3FN : MATE_BF16;
	float freq[128], *x, *tmp;
	int64_t nf = 0;

	if (D != 64 && D != 128 && D != 256)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "head_dim = %lld: expected 64, 128 or 256",
		    (long long)D);
	if (hq < 1 || hk < 1 || hv < 1 || hq > 32 || hk > 32 || hv > 32)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "num_heads_q, _k, _v = %lld, %lld, %lld: "
		    "expected 1 to 32 each", (long long)hq, (long long)hk, (long long)hv);
	if (p->frame_channels < 0 || p->height_channels < 0 || p->width_channels < 0 ||
	    (p->frame_channels | p->height_channels | p->width_channels) & 1 ||
	    p->frame_channels + p->height_channels + p->width_channels != D)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "num_frame_channels, num_height_channels, "
		    "num_width_channels = %lld, %lld, %lld: expected even, summing to head_dim %lld",
		    (long long)p->frame_channels, (long long)p->height_channels,
		    (long long)p->width_channels, (long long)D);
	if (p->ppf < 1 || p->pph < 1 || p->ppw < 1 || p->ppf > INT32_MAX / p->pph ||
	    p->ppf * p->pph > INT32_MAX / p->ppw)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "ppf, pph, ppw = %lld, %lld, %lld: "
		    "expected positive, their product an int32", (long long)p->ppf, (long long)p->pph,
		    (long long)p->ppw);
	hw = p->pph * p->ppw;
	seq = p->ppf * hw;
	if (qkv == NULL || qkv->ndim != 2 || qkv->dtype != MATE_BF16)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "qkv: expected bfloat16 (num_tokens, "
		    "hidden)");
	T = qkv->shape[0];
	C = qkv->shape[1];
	if (C != (hq + hk + hv) * D || T % seq != 0 || !qk_2d(qkv, T, C, MATE_BF16))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "qkv: (%lld, %lld), expected (a multiple "
		    "of ppf*pph*ppw = %lld, (num_heads_q + num_heads_k + num_heads_v) * head_dim = %lld)",
		    (long long)T, (long long)C, (long long)seq, (long long)((hq + hk + hv) * D));
	if (qw == NULL || qw->ndim != 1 || qw->shape[0] != hq * D || kw == NULL || kw->ndim != 1 ||
	    kw->shape[0] != hk * D || kc_check(qw, "q_weight", 1, 0, err) != MATE_OK ||
	    kc_check(kw, "k_weight", 1, 0, err) != MATE_OK)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "q_weight, k_weight: expected %lld and "
		    "%lld elements (heads times head_dim)", (long long)(hq * D), (long long)(hk * D));
	if (!qk_2d(q_out, T, hq * D, odt) || !qk_2d(k_out, T, hk * D, odt) ||
	    !qk_2d(v_out, T, hv * D, odt))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "outputs: expected %s (num_tokens, heads "
		    "* head_dim)", mate_dtype_name(odt));
	for (int64_t i = 0; i < p->frame_channels / 2; i++)
		freq[nf++] = qk_freq(i, (float)p->base, p->frame_channels, (float)p->factor,
		    (float)p->low, (float)p->high);
	for (int64_t i = 0; i < p->height_channels / 2; i++)
		freq[nf++] = qk_freq(i, (float)p->base, p->height_channels, (float)p->factor,
		    (float)p->low, (float)p->high);
	for (int64_t i = 0; i < p->width_channels / 2; i++)
		freq[nf++] = qk_freq(i, (float)p->base, p->width_channels, (float)p->factor,
		    (float)p->low, (float)p->high);
	if ((x = kc_alloc(2 * C, sizeof(float), err)) == NULL)
		return MATE_ERR_NOMEM;
	tmp = x + C;
	for (int64_t t = 0; t < T; t++) {
		int64_t s = t % seq, pos[3] = { s / hw, s % hw / p->ppw, s % hw % p->ppw };

		kc_load_f(MATE_BF16, kc_at(qkv, kc_row_offset(qkv, 1, t)), qkv->stride[1], C, x);
		qk_heads(p, x, hq, qw, freq, pos, q_out, t, tmp);
		qk_heads(p, x + hq * D, hk, kw, freq, pos, k_out, t, tmp);
		for (int64_t j = 0; j < hv * D; j++)
			tmp[j] = p->output_fp8 ? fmaxf(-448.0f, fminf(448.0f,
			    x[(hq + hk) * D + j] * (float)p->v_scale)) : x[(hq + hk) * D + j];
		kc_store_f(odt, kc_at(v_out, kc_row_offset(v_out, 1, t)), v_out->stride[1], hv * D, tmp);
	}
	free(x);
	return MATE_OK;
}
