/* kernels_cpu_norm_tmpl.h: row kernels of kernels_cpu_norm.c, included once per REAL (float, double). */
/* Expects REAL, SFX (f or d: see FN in kernels_cpu.h), R_SQRT, R_EXP, R_ERF, R_TANH. */

/* x := x / sqrt(mean(x^2) + eps) * w */
static void
FN(rms_row)(REAL *x, const REAL *w, int64_t n, REAL eps)
{
	REAL ms = FN(kc_sumsq)(x, n) / (REAL)n;
	REAL rs = (REAL)1 / R_SQRT(ms + eps);

	for (int64_t i = 0; i < n; i++)
		x[i] = x[i] * rs * w[i];
}

static void
FN(norm_rows)(void *ctx, int64_t b, int64_t e)
{
	struct norm_job *j = ctx;
	int64_t H = j->H;
	REAL *x = kc_alloc(2 * H, sizeof(REAL), NULL), *r = x + H;
	const REAL *w = j->wbuf;

	if (x == NULL) {
		__atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
		return;
	}
	for (int64_t row = b; row < e; row++) {
		char *pin = kc_at(j->in, kc_row_offset(j->in, j->nlead, row));
		int64_t sin = j->in->stride[j->nlead];
		FN(kc_load)(j->in->dtype, pin, sin, H, x);
		if (j->res != NULL) {
			/* residual += input is stored rounded to its dtype, but
			 * the norm reads the unrounded sum, as FlashInfer's
			 * FusedAddRMSNormKernel does (norm.cuh) */
			char *pres = kc_at(j->res, kc_row_offset(j->res, j->nlead, row));
			int64_t sres = j->res->stride[j->nlead];
			FN(kc_load)(j->res->dtype, pres, sres, H, r);
			for (int64_t i = 0; i < H; i++)
				x[i] += r[i];
			FN(kc_store)(j->res->dtype, pres, sres, H, x);
			FN(rms_row)(x, w, H, (REAL)j->eps);
			FN(kc_store)(j->in->dtype, pin, sin, H, x);
		} else {
			char *pout = kc_at(j->out, kc_row_offset(j->out, j->nlead, row));
			FN(rms_row)(x, w, H, (REAL)j->eps);
			FN(kc_store)(j->out->dtype, pout, j->out->stride[j->nlead], H, x);
		}
	}
	free(x);
}

static int
FN(norm_run)(struct norm_job *j, mate_error *err)
{
	REAL *w = kc_alloc(j->H, sizeof(REAL), err);

	if (w == NULL)
		return MATE_ERR_NOMEM;
	FN(kc_load)(j->w->dtype, kc_at(j->w, j->w->offset), j->w->stride[0], j->H, w);
	if (j->gemma)
		for (int64_t i = 0; i < j->H; i++)
			w[i] = (REAL)1 + w[i];
	j->wbuf = w;
	mate_parallel_for(j->rows, j->H * 4, FN(norm_rows), j);
	free(w);
	if (j->failed)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	return MATE_OK;
}

static REAL
FN(act)(int act, REAL a)
{
	switch (act) {
	case ACT_SILU:
		return a / ((REAL)1 + R_EXP(-a));
	case ACT_GELU:
		return (REAL)0.5 * a * ((REAL)1 + R_ERF(a * (REAL)0.70710678118654752440));
	default: {
		REAL inner = (REAL)0.79788456080286535588 * (a + (REAL)0.044715 * a * a * a);
		return (REAL)0.5 * a * ((REAL)1 + R_TANH(inner));
	}
	}
}

static void
FN(act_rows)(void *ctx, int64_t b, int64_t e)
{
	struct act_job *j = ctx;
	int64_t D = j->D, s_in = j->in->stride[j->nlead];
	int64_t es = (int64_t)mate_dtype_size(j->in->dtype);
	REAL *x = kc_alloc(2 * D, sizeof(REAL), NULL), *y = x + D;

	if (x == NULL) {
		__atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
		return;
	}
	for (int64_t row = b; row < e; row++) {
		char *pin = kc_at(j->in, kc_row_offset(j->in, j->nlead, row));
		char *pout = kc_at(j->out, kc_row_offset(j->out, j->nlead, row));
		FN(kc_load)(j->in->dtype, pin, s_in, D, x);
		FN(kc_load)(j->in->dtype, pin + D * s_in * es, s_in, D, y);
		for (int64_t i = 0; i < D; i++)
			y[i] = FN(act)(j->act, x[i]) * y[i];
		FN(kc_store)(j->out->dtype, pout, j->out->stride[j->nlead], D, y);
	}
	free(x);
}

/* x := softmax(x / t) */
static void
FN(softmax_row)(REAL *x, int64_t n, REAL t)
{
	REAL m = -(REAL)INFINITY, sum = 0;

	for (int64_t i = 0; i < n; i++) {
		x[i] = x[i] / t;
		m = x[i] > m ? x[i] : m;
	}
	for (int64_t i = 0; i < n; i++) {
		x[i] = R_EXP(x[i] - m);
		sum += x[i];
	}
	for (int64_t i = 0; i < n; i++)
		x[i] = x[i] / sum;
}

static void
FN(softmax_rows)(void *ctx, int64_t b, int64_t e)
{
	struct softmax_job *j = ctx;
	const mate_tensor *in = j->in, *out = j->out;
	int64_t V = in->shape[1];
	REAL *x = kc_alloc(V, sizeof(REAL), NULL);

	if (x == NULL) {
		__atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
		return;
	}
	for (int64_t row = b; row < e; row++) {
		double t = j->temperature;
		if (j->temp_t != NULL)
			t = mate_load_f64(j->temp_t->dtype, mate_tensor_element(j->temp_t,
			    mate_tensor_numel(j->temp_t) == 1 ? 0 : row));
		FN(kc_load)(in->dtype, kc_at(in, in->offset + row * in->stride[0]), in->stride[1], V, x);
		FN(softmax_row)(x, V, (REAL)t);
		FN(kc_store)(out->dtype, kc_at(out, out->offset + row * out->stride[0]),
		    out->stride[1], V, x);
	}
	free(x);
}
