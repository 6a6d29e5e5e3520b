/* kernels_cpu_bits.c: CPU kernels of FlashInfer's packbits and segment_packbits, and the epilogues of mm_bf16 (bias) and fused_rmsnorm_silu (SiLU). */
#include "kernels_cpu.h"
#include "kernels_fi.h"

#include <math.h>
#include <stdlib.h>

int
mate_cpu_packbits(const mate_tensor *x, int64_t begin, int64_t end, int little,
    const mate_tensor *out, int64_t at, mate_error *err)
{
	int64_t n = end - begin, nbytes = (n + 7) / 8;
	uint8_t *y;

	if (x->device_type != MATE_DEVICE_CPU || out->device_type != MATE_DEVICE_CPU ||
	    out->dtype != MATE_U8 || out->ndim != 1 || (x->data == NULL && mate_tensor_numel(x) > 0))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "packbits: host tensors, a uint8 1-D output");
	if (begin < 0 || n < 0 || end > mate_tensor_numel(x) || at < 0 || at + nbytes > out->shape[0])
		return mate_set_error(err, MATE_ERR_ARGUMENT, "packbits: bits [%lld, %lld) of %lld into "
		    "bytes [%lld, %lld) of %lld", (long long)begin, (long long)end,
		    (long long)mate_tensor_numel(x), (long long)at, (long long)(at + nbytes),
		    (long long)out->shape[0]);
	for (int64_t b = 0; b < nbytes; b++) {
		unsigned v = 0;

		for (int j = 0; j < 8; j++) {
			int64_t i = begin + b * 8 + j;
			int bit = i < end && mate_load_f64(x->dtype, mate_tensor_element(x, i)) != 0;

			v |= (unsigned)bit << (little ? j : 7 - j);
		}
		y = mate_tensor_element(out, at + b);
		*y = (uint8_t)v;
	}
	return MATE_OK;
}

int
mate_cpu_add_bias(const mate_tensor *acc, const mate_tensor *bias, const mate_tensor *out,
    mate_error *err)
{
	int64_t rows, N;
	float *row, *b;
	int rc;

	if ((rc = kc_check(acc, "accumulator", 2, 0, err)) != MATE_OK ||
	    (rc = kc_check(bias, "bias", 1, 0, err)) != MATE_OK ||
	    (rc = kc_check(out, "out", 2, 1, err)) != MATE_OK)
		return rc;
	rows = acc->shape[0];
	N = acc->shape[1];
	if ((rc = kc_check_dim(bias, "bias", 0, N, err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", 0, rows, err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", 1, N, err)) != MATE_OK)
		return rc;
	if ((row = kc_alloc(2 * (N > 0 ? N : 1), sizeof(float), err)) == NULL)
		return MATE_ERR_NOMEM;
	b = row + N;
	kc_load_f(bias->dtype, kc_at(bias, bias->offset), bias->stride[0], N, b);
	for (int64_t r = 0; r < rows; r++) {
		kc_load_f(acc->dtype, kc_at(acc, kc_row_offset(acc, 1, r)), acc->stride[1], N, row);
		for (int64_t j = 0; j < N; j++)
			row[j] += b[j];
		kc_store_f(out->dtype, kc_at(out, kc_row_offset(out, 1, r)), out->stride[1], N, row);
	}
	free(row);
	return MATE_OK;
}

int
mate_cpu_silu_store(const mate_tensor *acc, const mate_tensor *out, mate_error *err)
{
	int64_t rows, N;
	float *row;
	int rc;

	if ((rc = kc_check(acc, "accumulator", 2, 0, err)) != MATE_OK ||
	    (rc = kc_check(out, "out", 2, 1, err)) != MATE_OK)
		return rc;
	rows = acc->shape[0];
	N = acc->shape[1];
	if ((rc = kc_check_dim(out, "out", 0, rows, err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", 1, N, err)) != MATE_OK)
		return rc;
	if ((row = kc_alloc(N > 0 ? N : 1, sizeof(float), err)) == NULL)
		return MATE_ERR_NOMEM;
	for (int64_t r = 0; r < rows; r++) {
		kc_load_f(acc->dtype, kc_at(acc, kc_row_offset(acc, 1, r)), acc->stride[1], N, row);
		for (int64_t j = 0; j < N; j++) {
			row[j] = row[j] / (1.0f + expf(-row[j]));
			if (out->dtype == MATE_F8_E4M3FN)   /* FlashInfer saturates to e4m3's range */
				row[j] = fmaxf(-448.0f, fminf(448.0f, row[j]));
		}
		kc_store_f(out->dtype, kc_at(out, kc_row_offset(out, 1, r)), out->stride[1], N, row);
	}
	free(row);
	return MATE_OK;
}
