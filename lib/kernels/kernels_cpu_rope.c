/* kernels_cpu_rope.c: CPU kernels of FlashInfer's rotary embeddings (apply_rope*, apply_llama31_rope*, apply_rope_with_cos_sin_cache*). */
#include "kernels_cpu.h"
#include "kernels_fi.h"

#include <math.h>
#include <stdlib.h>

struct rope_job {
	const mate_tensor *in, *out;
	const int64_t *pos;
	const mate_rope_params *p;
	int64_t heads, D, rd;
	float *freq;               /* rd/2 frequencies (no cache) */
	int failed;
};

/* cos and sin of the angle of pair i at position pos. */
static void
angle(const struct rope_job *j, int64_t pos, int64_t i, float *c, float *s)
{
	const mate_tensor *cache = j->p->cos_sin_cache;

	if (cache != NULL) {
		int64_t row = kc_row_offset(cache, 1, pos);

		*c = (float)mate_load_f64(cache->dtype, kc_at(cache, row + i * cache->stride[1]));
		*s = (float)mate_load_f64(cache->dtype, kc_at(cache, row + (i + j->rd / 2) * cache->stride[1]));
		return;
	}
	/* FlashInfer rounds the angle to float before __sincosf */
	double a = (double)((float)pos * j->freq[i]);
	*c = (float)cos(a);
	*s = (float)sin(a);
}

static void
rope_rows(void *ctx, int64_t b, int64_t e)
{
	struct rope_job *j = ctx;
	int64_t D = j->D, rd = j->rd, half = rd / 2;
	float *x = kc_alloc(2 * D + rd, sizeof(float), NULL), *y = x + D, *cs = y + D;

	if (x == NULL) {
		__atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
		return;
	}
	for (int64_t row = b; row < e; row++) {
		int64_t t = row / j->heads, pos = j->pos[t];
		char *pin = kc_at(j->in, kc_row_offset(j->in, 2, row));
		char *pout = kc_at(j->out, kc_row_offset(j->out, 2, row));

		kc_load_f(j->in->dtype, pin, j->in->stride[2], D, x);
		for (int64_t i = 0; i < half; i++)
			angle(j, pos, i, &cs[i], &cs[half + i]);
		for (int64_t d = 0; d < D; d++) {
			int64_t i, mate;
			float sgn;

			if (d >= rd) {
				y[d] = x[d];
				continue;
			}
			if (j->p->interleave) {
				i = d / 2;
				mate = d ^ 1;
				sgn = d % 2 == 0 ? -1.0f : 1.0f;
			} else {
				i = d % half;
				mate = d < half ? d + half : d - half;
				sgn = d < half ? -1.0f : 1.0f;
			}
			y[d] = x[d] * cs[i] + sgn * x[mate] * cs[half + i];
		}
		kc_store_f(j->out->dtype, pout, j->out->stride[2], D, y);
	}
	free(x);
}

/* FlashInfer's frequencies (pos_enc.cuh), in float32 as there. */
static void
frequencies(const mate_rope_params *p, int64_t rd, float *freq)
{
	float rcp_scale = 1.0f / (float)p->rope_scale, rcp_theta = 1.0f / (float)p->rope_theta;
	float a = 0, b = 0;

	if (p->llama31) {
		a = (float)(p->old_context_len /
		    (2 * M_PI * p->high_freq_factor - 2 * M_PI * p->low_freq_factor));
		b = -1.0f / (float)(p->high_freq_factor / p->low_freq_factor - 1.0);
	}
	for (int64_t i = 0; i < rd / 2; i++) {
		float f = powf(rcp_theta, (float)(2 * i) / (float)rd);
		float s = fmaxf(0.0f, fminf(1.0f, f * a + b));

		freq[i] = (1 - s) * (f * rcp_scale) + s * f;
	}
}

static int
check_params(const mate_tensor *in, const mate_tensor *out, const int64_t *pos,
    const mate_rope_params *p, mate_error *err)
{
	int64_t nnz = in->shape[0], D = in->shape[2], rd = p->rotary_dim;
	const mate_tensor *cache = p->cos_sin_cache;
	int rc;

	if ((rc = kc_check(out, "out", 3, 1, err)) != MATE_OK)
		return rc;
	for (int d = 0; d < 3; d++)
		if ((rc = kc_check_dim(out, "out", d, in->shape[d], err)) != MATE_OK)
			return rc;
	if (rd <= 0 || rd % 2 != 0 || rd > D)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "rotary_dim %lld: must be even, > 0 and "
		    "<= head_dim %lld", (long long)rd, (long long)D);
	if (cache == NULL) {
		if (!(p->rope_theta > 0) || !(p->rope_scale > 0))
			return mate_set_error(err, MATE_ERR_ARGUMENT, "rope_theta and rope_scale must be > 0");
		if (p->llama31 && (!(p->low_freq_factor > 0) || p->high_freq_factor == p->low_freq_factor))
			return mate_set_error(err, MATE_ERR_ARGUMENT, "low_freq_factor must be > 0 and "
			    "differ from high_freq_factor");
		return MATE_OK;
	}
	if ((rc = kc_check(cache, "cos_sin_cache", 2, 0, err)) != MATE_OK)
		return rc;
	if (cache->dtype != MATE_F32)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "cos_sin_cache: %s, FlashInfer "
		    "requires float32", mate_dtype_name(cache->dtype));
	if ((rc = kc_check_dim(cache, "cos_sin_cache", 1, rd, err)) != MATE_OK)
		return rc;
	for (int64_t t = 0; t < nnz; t++)
		if (pos[t] < 0 || pos[t] >= cache->shape[0])
			return mate_set_error(err, MATE_ERR_ARGUMENT, "position %lld of token %lld is "
			    "outside cos_sin_cache's %lld rows", (long long)pos[t], (long long)t,
			    (long long)cache->shape[0]);
	return MATE_OK;
}

int
mate_cpu_rope(const mate_tensor *in, const mate_tensor *out, const int64_t *pos,
    const mate_rope_params *p, mate_error *err)
{
	struct rope_job j = { .in = in, .out = out, .pos = pos, .p = p };
	int rc;

	if ((rc = kc_check(in, "input", 3, 0, err)) != MATE_OK ||
	    (rc = check_params(in, out, pos, p, err)) != MATE_OK)
		return rc;
	j.heads = in->shape[1];
	j.D = in->shape[2];
	j.rd = p->rotary_dim;
	if (mate_tensor_numel(in) == 0)
		return MATE_OK;
	if (p->cos_sin_cache == NULL) {
		if ((j.freq = kc_alloc(j.rd / 2, sizeof(float), err)) == NULL)
			return MATE_ERR_NOMEM;
		frequencies(p, j.rd, j.freq);
	}
	mate_parallel_for(in->shape[0] * j.heads, j.D * 8, rope_rows, &j);
	free(j.freq);
	if (j.failed)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	return MATE_OK;
}
