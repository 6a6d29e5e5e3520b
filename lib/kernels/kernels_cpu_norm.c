/* kernels_cpu_norm.c: CPU kernels for RMSNorm (plain, fused-add, Gemma), gated activations and softmax. */
#include "kernels_cpu.h"

#include <math.h>
#include <stdlib.h>

enum { ACT_SILU, ACT_GELU, ACT_GELU_TANH };

struct norm_job {
	const mate_tensor *in, *res, *w, *out;
	double eps;
	int gemma, nlead;
	int64_t rows, H;
	const void *wbuf;
	int failed;
};

struct act_job {
	const mate_tensor *in, *out;
	int act, nlead;
	int64_t D;
	int failed;
};

struct softmax_job {
	const mate_tensor *in, *out, *temp_t;
	double temperature;
	int failed;
};

#define REAL float
#define SFX f
#define R_SQRT sqrtf
#define R_EXP expf
#define R_ERF erff
#define R_TANH tanhf
#include "kernels_cpu_norm_tmpl.h"
#undef REAL
#undef SFX
#undef R_SQRT
#undef R_EXP
#undef R_ERF
#undef R_TANH

#define REAL double
#define SFX d
#define R_SQRT sqrt
#define R_EXP exp
#define R_ERF erf
#define R_TANH tanh
#include "kernels_cpu_norm_tmpl.h"

/* Checks that a and b have the same leading dims (all but the last). */
static int
same_lead(const mate_tensor *a, const mate_tensor *b, const char *what, mate_error *err)
{
	if (a->ndim != b->ndim)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: %d dimensions, input has %d",
		    what, b->ndim, a->ndim);
	for (int d = 0; d < a->ndim - 1; d++)
		if (kc_check_dim(b, what, d, a->shape[d], err) != MATE_OK)
			return MATE_ERR_ARGUMENT;
	return MATE_OK;
}

static int
norm(const mate_tensor *in, const mate_tensor *res, const mate_tensor *w, double eps,
    const mate_tensor *out, int gemma, mate_error *err)
{
	struct norm_job j = { in, res, w, out, eps, gemma, 0, 0, 0, NULL, 0 };
	int rc;

	if ((rc = kc_check(in, "input", -1, res != NULL, err)) != MATE_OK ||
	    (rc = kc_check(w, "weight", 1, 0, err)) != MATE_OK)
		return rc;
	j.nlead = in->ndim - 1;
	j.H = in->shape[j.nlead];
	j.rows = mate_tensor_numel(in) / (j.H > 0 ? j.H : 1);
	if ((rc = kc_check_dim(w, "weight", 0, j.H, err)) != MATE_OK)
		return rc;
	if (res != NULL) {
		if ((rc = kc_check(res, "residual", in->ndim, 1, err)) != MATE_OK ||
		    (rc = same_lead(in, res, "residual", err)) != MATE_OK ||
		    (rc = kc_check_dim(res, "residual", j.nlead, j.H, err)) != MATE_OK)
			return rc;
	} else {
		if ((rc = kc_check(out, "out", in->ndim, 1, err)) != MATE_OK ||
		    (rc = same_lead(in, out, "out", err)) != MATE_OK ||
		    (rc = kc_check_dim(out, "out", j.nlead, j.H, err)) != MATE_OK)
			return rc;
	}
	if (j.H == 0 || j.rows == 0)
		return MATE_OK;
	return in->dtype == MATE_F64 ? norm_run_d(&j, err) : norm_run_f(&j, err);
}

int
mate_cpu_rmsnorm(const mate_tensor *in, const mate_tensor *w, double eps,
    const mate_tensor *out, mate_error *err)
{
	return norm(in, NULL, w, eps, out, 0, err);
}

int
mate_cpu_gemma_rmsnorm(const mate_tensor *in, const mate_tensor *w, double eps,
    const mate_tensor *out, mate_error *err)
{
	return norm(in, NULL, w, eps, out, 1, err);
}

/* The fused_add variants, in place: res += in, then in = norm(res). */
static int
fused_add_norm(const mate_tensor *in, const mate_tensor *res, const mate_tensor *w,
    double eps, int gemma, mate_error *err)
{
	if (res == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "residual: missing tensor");
	return norm(in, res, w, eps, NULL, gemma, err);
}

int
mate_cpu_fused_add_rmsnorm(const mate_tensor *in, const mate_tensor *res,
    const mate_tensor *w, double eps, mate_error *err)
{
	return fused_add_norm(in, res, w, eps, 0, err);
}

int
mate_cpu_gemma_fused_add_rmsnorm(const mate_tensor *in, const mate_tensor *res,
    const mate_tensor *w, double eps, mate_error *err)
{
	return fused_add_norm(in, res, w, eps, 1, err);
}

static int
act_and_mul(const mate_tensor *in, const mate_tensor *out, int act, mate_error *err)
{
	struct act_job j = { in, out, act, 0, 0, 0 };
	int64_t rows;
	int rc;

	if ((rc = kc_check(in, "input", -1, 0, err)) != MATE_OK ||
	    (rc = kc_check(out, "out", in->ndim, 1, err)) != MATE_OK ||
	    (rc = same_lead(in, out, "out", err)) != MATE_OK)
		return rc;
	j.nlead = in->ndim - 1;
	if (in->shape[j.nlead] % 2 != 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "input: last dimension %lld is odd", (long long)in->shape[j.nlead]);
	j.D = in->shape[j.nlead] / 2;
	if ((rc = kc_check_dim(out, "out", j.nlead, j.D, err)) != MATE_OK)
		return rc;
	rows = mate_tensor_numel(out) / (j.D > 0 ? j.D : 1);
	if (j.D == 0 || rows == 0)
		return MATE_OK;
	mate_parallel_for(rows, j.D * 16, in->dtype == MATE_F64 ? act_rows_d : act_rows_f, &j);
	if (j.failed)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	return MATE_OK;
}

int
mate_cpu_silu_and_mul(const mate_tensor *in, const mate_tensor *out, mate_error *err)
{
	return act_and_mul(in, out, ACT_SILU, err);
}

int
mate_cpu_gelu_and_mul(const mate_tensor *in, const mate_tensor *out, mate_error *err)
{
	return act_and_mul(in, out, ACT_GELU, err);
}

int
mate_cpu_gelu_tanh_and_mul(const mate_tensor *in, const mate_tensor *out, mate_error *err)
{
	return act_and_mul(in, out, ACT_GELU_TANH, err);
}

int
mate_cpu_softmax(const mate_tensor *in, double temperature, const mate_tensor *temp_t,
    const mate_tensor *out, mate_error *err)
{
	struct softmax_job j = { in, out, temp_t, temperature, 0 };
	int rc;

	if ((rc = kc_check(in, "logits", 2, 0, err)) != MATE_OK ||
	    (rc = kc_check(out, "out", 2, 1, err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", 0, in->shape[0], err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", 1, in->shape[1], err)) != MATE_OK)
		return rc;
	if (temp_t != NULL) {
		int64_t n = mate_tensor_numel(temp_t);
		if (temp_t->device_type != MATE_DEVICE_CPU || !kc_is_float(temp_t->dtype) ||
		    (n != 1 && n != in->shape[0]) || temp_t->data == NULL ||
		    mate_tensor_storage_extent(temp_t) < 0)
			return mate_set_error(err, MATE_ERR_ARGUMENT,
			    "temperature: expected 1 or %lld float elements in host memory",
			    (long long)in->shape[0]);
	}
	if (in->shape[0] == 0 || in->shape[1] == 0)
		return MATE_OK;
	mate_parallel_for(in->shape[0], in->shape[1] * 8,
	    in->dtype == MATE_F64 ? softmax_rows_d : softmax_rows_f, &j);
	if (j.failed)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	return MATE_OK;
}
