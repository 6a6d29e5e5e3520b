/* kernels_cpu_attn.c: CPU single-request attention (decode and prefill): GQA, masks, window, soft cap, RoPE, ALiBi. */
#include "kernels_cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct attn_job {
	const mate_tensor *q, *k, *v, *out, *lse;
	int64_t Lq, Lk, Hq, Hk, D, Dv, group;
	int64_t k_sl, k_sh, v_sl, v_sh;  /* strides of the position and head dims */
	int causal, rope, lse_base_e;
	int64_t window_left;
	double scale, cap, v_scale, rope_scale, rope_theta;
	int64_t pos0;                    /* first position in rope_tab */
	uint8_t *keep;                   /* Lq x Lk mask, NULL: keep all */
	double *slopes;                  /* ALiBi slope per query head, or NULL */
	double *sinks;                   /* sink logit per query head, or NULL */
	void *kbuf, *vbuf, *rope_tab;
	int failed;
};

#define REAL float
#define SFX f
#define R_EXP expf
#define R_LOG logf
#define R_TANH tanhf
#include "kernels_cpu_attn_tmpl.h"
#undef REAL
#undef SFX
#undef R_EXP
#undef R_LOG
#undef R_TANH

#define REAL double
#define SFX d
#define R_EXP exp
#define R_LOG log
#define R_TANH tanh
#include "kernels_cpu_attn_tmpl.h"

/* Shapes: q (Lq, Hq, D), k/v by layout, out (Lq, Hq, Dv), lse (Lq, Hq). */
static int
check_shapes(struct attn_job *j, const mate_attn_params *p, mate_error *err)
{
	const mate_tensor *q = j->q, *k = j->k, *v = j->v;
	int hnd = p->kv_layout == MATE_KV_HND, rc;

	if (p->kv_layout != MATE_KV_NHD && !hnd)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "kv_layout: %d unknown", p->kv_layout);
	if ((rc = kc_check(k, "k", 3, 0, err)) != MATE_OK ||
	    (rc = kc_check(v, "v", 3, 0, err)) != MATE_OK)
		return rc;
	j->Lq = q->shape[0];
	j->Hq = q->shape[1];
	j->D = q->shape[2];
	j->Lk = k->shape[hnd ? 1 : 0];
	j->Hk = k->shape[hnd ? 0 : 1];
	j->Dv = v->shape[2];
	j->k_sl = k->stride[hnd ? 1 : 0];
	j->k_sh = k->stride[hnd ? 0 : 1];
	j->v_sl = v->stride[hnd ? 1 : 0];
	j->v_sh = v->stride[hnd ? 0 : 1];
	if ((rc = kc_check_dim(k, "k", 2, j->D, err)) != MATE_OK ||
	    (rc = kc_check_dim(v, "v", 0, k->shape[0], err)) != MATE_OK ||
	    (rc = kc_check_dim(v, "v", 1, k->shape[1], err)) != MATE_OK)
		return rc;
	if (j->Hk == 0 || j->Hq % j->Hk != 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "%lld query heads are not a multiple of %lld kv heads",
		    (long long)j->Hq, (long long)j->Hk);
	j->group = j->Hq / j->Hk;
	if ((rc = kc_check_dim(j->out, "out", 0, j->Lq, err)) != MATE_OK ||
	    (rc = kc_check_dim(j->out, "out", 1, j->Hq, err)) != MATE_OK ||
	    (rc = kc_check_dim(j->out, "out", 2, j->Dv, err)) != MATE_OK)
		return rc;
	if (j->lse != NULL && ((rc = kc_check_dim(j->lse, "lse", 0, j->Lq, err)) != MATE_OK ||
	    (rc = kc_check_dim(j->lse, "lse", 1, j->Hq, err)) != MATE_OK))
		return rc;
	return MATE_OK;
}

static int
setup(struct attn_job *j, const mate_attn_params *p, mate_error *err)
{
	int rc;

	if ((rc = check_shapes(j, p, err)) != MATE_OK)
		return rc;
	if (p->pos_encoding_mode != MATE_POS_NONE && p->pos_encoding_mode != MATE_POS_ROPE_LLAMA &&
	    p->pos_encoding_mode != MATE_POS_ALIBI)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED,
		    "pos_encoding_mode %d is unsupported by mate's kernels", p->pos_encoding_mode);
	j->rope = p->pos_encoding_mode == MATE_POS_ROPE_LLAMA;
	if (j->rope && j->D % 2 != 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "ROPE_LLAMA needs an even head dim");
	j->causal = p->causal;
	j->window_left = p->window_left;
	j->lse_base_e = p->lse_base_e;
	j->scale = (p->sm_scale > 0 ? p->sm_scale : 1.0 / sqrt((double)j->D)) *
	    p->q_scale * p->k_scale;
	j->cap = p->logits_soft_cap > 0 ? p->logits_soft_cap : 0;
	j->v_scale = p->v_scale;
	j->rope_scale = p->rope_scale > 0 ? p->rope_scale : 1.0;
	j->rope_theta = p->rope_theta > 0 ? p->rope_theta : 1e4;
	j->pos0 = j->Lk - j->Lq < 0 ? j->Lk - j->Lq : 0;
	if (p->custom_mask != NULL || p->packed_custom_mask != NULL) {
		if ((rc = mate_attn_keep_mask(p, j->Lq, j->Lk, &j->keep, err)) != MATE_OK)
			return rc;
		j->causal = 0;  /* a custom mask takes precedence */
	}
	if (p->sinks != NULL) {
		const mate_tensor *t = p->sinks;

		if (t->ndim != 1 || t->shape[0] != j->Hq || t->data == NULL ||
		    t->device_type != MATE_DEVICE_CPU || mate_dtype_kind(t->dtype) != MATE_KIND_FLOAT)
			return mate_set_error(err, MATE_ERR_ARGUMENT, "sinks must be %lld floating host "
			    "values, one per query head", (long long)j->Hq);
		if ((j->sinks = kc_alloc(j->Hq, sizeof(double), err)) == NULL)
			return MATE_ERR_NOMEM;
		kc_load_d(t->dtype, kc_at(t, t->offset), t->stride[0], j->Hq, j->sinks);
	}
	if (p->pos_encoding_mode == MATE_POS_ALIBI) {
		if ((j->slopes = kc_alloc(j->Hq, sizeof(double), err)) == NULL)
			return MATE_ERR_NOMEM;
		for (int64_t h = 0; h < j->Hq; h++)
			j->slopes[h] = mate_alibi_slope(h, j->Hq);
	}
	return MATE_OK;
}

static int
attention(const mate_tensor *q, const mate_tensor *k, const mate_tensor *v,
    const mate_attn_params *p, const mate_tensor *out, const mate_tensor *lse, mate_error *err)
{
	struct attn_job j;
	mate_attn_params defaults;
	int rc;

	if (p == NULL) {
		mate_attn_params_init(&defaults);
		p = &defaults;
	}
	memset(&j, 0, sizeof(j));
	j.q = q, j.k = k, j.v = v, j.out = out, j.lse = lse;
	rc = setup(&j, p, err);
	if (rc == MATE_OK && j.Lq * j.Hq > 0 && j.Dv + j.D > 0)
		rc = q->dtype == MATE_F64 ? attn_run_d(&j, err) : attn_run_f(&j, err);
	free(j.keep);
	free(j.slopes);
	free(j.sinks);
	free(j.kbuf);
	free(j.vbuf);
	free(j.rope_tab);
	return rc;
}

/* A view of t with a leading dimension of 1 (decode as one-row prefill). */
static void
unsqueeze(const mate_tensor *t, mate_tensor *u)
{
	*u = *t;
	u->ndim = t->ndim + 1;
	u->shape[0] = 1;
	u->stride[0] = 0;
	memcpy(&u->shape[1], t->shape, sizeof(t->shape[0]) * (size_t)t->ndim);
	memcpy(&u->stride[1], t->stride, sizeof(t->stride[0]) * (size_t)t->ndim);
}

int
mate_cpu_single_decode(const mate_tensor *q, const mate_tensor *k, const mate_tensor *v,
    const mate_attn_params *p, const mate_tensor *out, const mate_tensor *lse, mate_error *err)
{
	mate_tensor q3, o3, l2;
	mate_attn_params dp;
	int rc;

	if ((rc = kc_check(q, "q", 2, 0, err)) != MATE_OK ||
	    (rc = kc_check(out, "out", 2, 1, err)) != MATE_OK ||
	    (lse != NULL && (rc = kc_check(lse, "lse", 1, 1, err)) != MATE_OK))
		return rc;
	if (p != NULL)
		dp = *p;
	else
		mate_attn_params_init(&dp);
	dp.causal = 0;  /* the query is the last position: it sees every key */
	dp.custom_mask = dp.packed_custom_mask = NULL;
	unsqueeze(q, &q3);
	unsqueeze(out, &o3);
	if (lse != NULL)
		unsqueeze(lse, &l2);
	return attention(&q3, k, v, &dp, &o3, lse != NULL ? &l2 : NULL, err);
}

int
mate_cpu_single_prefill(const mate_tensor *q, const mate_tensor *k, const mate_tensor *v,
    const mate_attn_params *p, const mate_tensor *out, const mate_tensor *lse, mate_error *err)
{
	int rc;

	if ((rc = kc_check(q, "q", 3, 0, err)) != MATE_OK ||
	    (rc = kc_check(out, "out", 3, 1, err)) != MATE_OK ||
	    (lse != NULL && (rc = kc_check(lse, "lse", 2, 1, err)) != MATE_OK))
		return rc;
	return attention(q, k, v, p, out, lse, err);
}
