/* kernels_cpu_attn_tmpl.h: attention rows of kernels_cpu_attn.c, included once per REAL (float, double). */
/* Expects REAL, SFX (f or d: see FN in kernels_cpu.h), R_EXP, R_LOG, R_TANH. */

/* Rotates x (D values) by the table row of position pos (rotate-half). */
static void
FN(rope)(const struct attn_job *j, REAL *x, int64_t pos)
{
	int64_t half = j->D / 2;
	const REAL *cs = (const REAL *)j->rope_tab + (pos - j->pos0) * 2 * half;

	for (int64_t i = 0; i < half; i++) {
		REAL c = cs[2 * i], s = cs[2 * i + 1], x1 = x[i], x2 = x[i + half];
		x[i] = x1 * c - x2 * s;
		x[i + half] = x2 * c + x1 * s;
	}
}

static void
FN(rope_table)(struct attn_job *j, int64_t npos)
{
	int64_t half = j->D / 2;
	REAL *t = j->rope_tab;

	for (int64_t p = 0; p < npos; p++)
		for (int64_t i = 0; i < half; i++) {
			double inv = pow(j->rope_theta, -2.0 * (double)i / (double)j->D);
			double a = (double)(p + j->pos0) / j->rope_scale * inv;
			t[(p * half + i) * 2] = (REAL)cos(a);
			t[(p * half + i) * 2 + 1] = (REAL)sin(a);
		}
}

/* Widens K (rotated) and V rows, one (kv head, position) per item. */
static void
FN(kv_rows)(void *ctx, int64_t b, int64_t e)
{
	struct attn_job *j = ctx;
	REAL *K = j->kbuf, *V = j->vbuf;

	for (int64_t r = b; r < e; r++) {
		int64_t h = r / j->Lk, pos = r % j->Lk;
		const mate_tensor *k = j->k, *v = j->v;
		FN(kc_load)(k->dtype, kc_at(k, k->offset + h * j->k_sh + pos * j->k_sl), k->stride[2],
		    j->D, K + r * j->D);
		FN(kc_load)(v->dtype, kc_at(v, v->offset + h * j->v_sh + pos * j->v_sl), v->stride[2],
		    j->Dv, V + r * j->Dv);
		if (j->rope_tab != NULL)
			FN(rope)(j, K + r * j->D, pos);
	}
}

/* Logits of query row i, head h over [lo, hi]; returns their maximum. */
static REAL
FN(logits)(const struct attn_job *j, const REAL *qv, int64_t i, int64_t h, int64_t lo,
    int64_t hi, REAL *z)
{
	const REAL *K = (const REAL *)j->kbuf + (h / j->group) * j->Lk * j->D;
	REAL m = -(REAL)INFINITY, scale = (REAL)j->scale, cap = (REAL)j->cap;
	int64_t qpos = i + j->Lk - j->Lq;

	for (int64_t t = lo; t <= hi; t++) {
		REAL x;
		if (j->keep != NULL && !j->keep[i * j->Lk + t]) {
			z[t] = -(REAL)INFINITY;
			continue;
		}
		x = FN(kc_dot)(qv, K + t * j->D, j->D) * scale;
		if (j->cap > 0)
			x = cap * R_TANH(x / cap);
		if (j->slopes != NULL)
			x += (REAL)j->slopes[h] * (REAL)(t - qpos);
		z[t] = x;
		m = x > m ? x : m;
	}
	return m;
}

/* One (query row, head) pair per item. */
static void
FN(attn_rows)(void *ctx, int64_t b, int64_t e)
{
	struct attn_job *j = ctx;
	REAL *qv = kc_alloc(j->D + j->Dv + j->Lk, sizeof(REAL), NULL), *o, *z;
	const mate_tensor *q = j->q, *out = j->out;

	if (qv == NULL) {
		__atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
		return;
	}
	o = qv + j->D;
	z = o + j->Dv;
	for (int64_t r = b; r < e; r++) {
		int64_t i = r / j->Hq, h = r % j->Hq, qpos = i + j->Lk - j->Lq;
		int64_t lo = 0, hi = j->Lk - 1;
		const REAL *V = (const REAL *)j->vbuf + (h / j->group) * j->Lk * j->Dv;
		REAL m, sum = 0, lse;

		FN(kc_load)(q->dtype, kc_at(q, q->offset + i * q->stride[0] + h * q->stride[1]),
		    q->stride[2], j->D, qv);
		if (j->rope_tab != NULL)
			FN(rope)(j, qv, qpos);
		if (j->window_left >= 0 && qpos - j->window_left > lo)
			lo = qpos - j->window_left;
		if (j->causal && qpos < hi)
			hi = qpos;
		m = lo <= hi ? FN(logits)(j, qv, i, h, lo, hi, z) : -(REAL)INFINITY;
		if (j->sinks != NULL && (REAL)j->sinks[h] > m)  /* the sink is one more logit */
			m = (REAL)j->sinks[h];
		for (int64_t d = 0; d < j->Dv; d++)
			o[d] = 0;
		if (m == -(REAL)INFINITY) {
			lse = -(REAL)INFINITY;
		} else {
			if (j->sinks != NULL)   /* in the denominator, with no value */
				sum = R_EXP((REAL)j->sinks[h] - m);
			for (int64_t t = lo; t <= hi; t++) {
				REAL p = R_EXP(z[t] - m);
				const REAL *vt = V + t * j->Dv;
				sum += p;
				for (int64_t d = 0; d < j->Dv; d++)
					o[d] += p * vt[d];
			}
			for (int64_t d = 0; d < j->Dv; d++)
				o[d] = o[d] / sum * (REAL)j->v_scale;
			lse = m + R_LOG(sum);
			if (!j->lse_base_e)
				lse = lse * (REAL)1.44269504088896340736;
		}
		FN(kc_store)(out->dtype, kc_at(out, out->offset + i * out->stride[0] + h * out->stride[1]),
		    out->stride[2], j->Dv, o);
		if (j->lse != NULL)
			FN(kc_store)(j->lse->dtype, kc_at(j->lse, j->lse->offset + i * j->lse->stride[0] +
			    h * j->lse->stride[1]), 1, 1, &lse);
	}
	free(qv);
}

static int
FN(attn_run)(struct attn_job *j, mate_error *err)
{
	int64_t npos = j->Lk - j->pos0;

	j->kbuf = kc_alloc(j->Hk * j->Lk, j->D * sizeof(REAL), err);
	j->vbuf = kc_alloc(j->Hk * j->Lk, j->Dv * sizeof(REAL), err);
	if (j->rope)
		j->rope_tab = kc_alloc(npos, j->D * sizeof(REAL), err);
	if (j->kbuf == NULL || j->vbuf == NULL || (j->rope && j->rope_tab == NULL))
		return MATE_ERR_NOMEM;
	if (j->rope_tab != NULL)
		FN(rope_table)(j, npos);
	mate_parallel_for(j->Hk * j->Lk, j->D + j->Dv, FN(kv_rows), j);
	mate_parallel_for(j->Lq * j->Hq, j->Lk * (j->D + j->Dv) * 2, FN(attn_rows), j);
	if (j->failed)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	return MATE_OK;
}
