/* kernels_cpu_layernorm.c: CPU kernel of FlashInfer's layernorm (norm.cuh's generalLayerNorm): each row's mean and variance in two passes, then (x - mean) * rsqrt(var + eps) * gemma + beta rounded once. */
#include "kernels_cpu.h"
#include "kernels_fi.h"

#include <math.h>
#include <stdlib.h>

int
mate_cpu_layernorm(const mate_tensor *x, const mate_tensor *gemma, const mate_tensor *beta,
    double eps, const mate_tensor *out, mate_error *err)
{
	int64_t rows, H;
	double *row, *g, *b;
	int rc;

	if ((rc = kc_check(x, "input", 2, 0, err)) != MATE_OK ||
	    (rc = kc_check(gemma, "gemma", 1, 0, err)) != MATE_OK ||
	    (rc = kc_check(beta, "beta", 1, 0, err)) != MATE_OK ||
	    (rc = kc_check(out, "out", 2, 1, err)) != MATE_OK)
		return rc;
	rows = x->shape[0];
	H = x->shape[1];
	if ((rc = kc_check_dim(gemma, "gemma", 0, H, err)) != MATE_OK ||
	    (rc = kc_check_dim(beta, "beta", 0, H, err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", 0, rows, err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", 1, H, err)) != MATE_OK)
		return rc;
	if (!(eps >= 0))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "eps = %g: expected >= 0", eps);
	if ((row = kc_alloc(3 * (H > 0 ? H : 1), sizeof(double), err)) == NULL)
		return MATE_ERR_NOMEM;
	g = row + H;
	b = g + H;
	kc_load_d(gemma->dtype, kc_at(gemma, gemma->offset), gemma->stride[0], H, g);
	kc_load_d(beta->dtype, kc_at(beta, beta->offset), beta->stride[0], H, b);
	for (int64_t r = 0; r < rows && H > 0; r++) {
		double mean = 0, var = 0, rstd;

		kc_load_d(x->dtype, kc_at(x, kc_row_offset(x, 1, r)), x->stride[1], H, row);
		for (int64_t j = 0; j < H; j++)
			mean += row[j];
		mean /= (double)H;
		for (int64_t j = 0; j < H; j++)
			var += (row[j] - mean) * (row[j] - mean);
		rstd = 1 / sqrt(var / (double)H + eps);
		for (int64_t j = 0; j < H; j++)
			row[j] = (row[j] - mean) * rstd * g[j] + b[j];
		kc_store_d(out->dtype, kc_at(out, kc_row_offset(out, 1, r)), out->stride[1], H, row);
	}
	free(row);
	return MATE_OK;
}
