/* kernels_segment.c: FlashInfer's segment GEMM (SegmentGEMMWrapper.run) as one mm per segment, on any backend's kernels. */
#include "mate_private.h"
#include "kernels.h"
#include "kernels_fi.h"

#include <stdint.h>
#include <string.h>

static int
replayed_dtype(mate_dtype dt)
{
	return dt == MATE_F32 || dt == MATE_F16 || dt == MATE_BF16;
}

int
mate_kernel_check_ints(const mate_tensor *t, const char *what, int64_t need, mate_error *err)
{
	int kind = mate_dtype_kind(t->dtype);

	if (t->device_type != MATE_DEVICE_CPU || t->ndim != 1 ||
	    (kind != MATE_KIND_INT && kind != MATE_KIND_UINT) ||
	    mate_tensor_storage_extent(t) < 0 || (t->data == NULL && t->shape[0] > 0))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: expected a 1-D integer host tensor "
		    "(%s, %d-D)", what, mate_dtype_name(t->dtype), t->ndim);
	if (t->shape[0] < need)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: %lld elements, %lld needed",
		    what, (long long)t->shape[0], (long long)need);
	return MATE_OK;
}

int64_t
mate_kernel_int_at(const mate_tensor *t, int64_t i)
{
	const void *p = mate_tensor_element(t, i);
	int64_t v = 0;

	int sgn = mate_dtype_kind(t->dtype) == MATE_KIND_INT;

	/* no ?: across the two types: it would convert int32 to uint32 (-5 to 4294967291) */
	switch (mate_dtype_size(t->dtype)) {
	case 1:
		if (sgn)
			v = *(const int8_t *)p;
		else
			v = *(const uint8_t *)p;
		break;
	case 2:
		if (sgn)
			v = *(const int16_t *)p;
		else
			v = *(const uint16_t *)p;
		break;
	case 4:
		if (sgn)
			v = *(const int32_t *)p;
		else
			v = *(const uint32_t *)p;
		break;
	default:
		memcpy(&v, p, sizeof(v));
		if (mate_dtype_kind(t->dtype) == MATE_KIND_UINT && v < 0)
			v = -1;
	}
	return v;
}

/* The end of segment i starting at row s >= 0, or -1 when it cannot be. */
static int64_t
segment_end(const mate_segment_gemm_args *a, int64_t i, int64_t s)
{
	int64_t len;

	if (a->seg_indptr != NULL)
		return mate_kernel_int_at(a->seg_indptr, i + 1);
	len = mate_kernel_int_at(a->seg_lens, i);
	return len >= 0 && len <= INT64_MAX - s ? s + len : -1;
}

/* The shapes and dtypes of x, weights and out. */
static int
check_operands(const mate_segment_gemm_args *a, int64_t *d_out, mate_error *err)
{
	const mate_tensor *x = a->x, *w = a->weights, *out = a->out;
	int64_t d_in;

	if (x == NULL || w == NULL || out == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "segment_gemm: x, weights and out are required");
	if (!replayed_dtype(x->dtype) || !replayed_dtype(w->dtype))
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "segment_gemm: x %s, weights %s: only "
		    "float32, float16 and bfloat16 are replayed", mate_dtype_name(x->dtype),
		    mate_dtype_name(w->dtype));
	if (w->dtype != x->dtype)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "segment_gemm: weights %s with x %s: "
		    "mixed dtypes are not replayed", mate_dtype_name(w->dtype), mate_dtype_name(x->dtype));
	if (x->ndim != 2 || w->ndim != 3)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "segment_gemm: x must be 2-D (%d-D) and "
		    "weights 3-D (%d-D)", x->ndim, w->ndim);
	d_in = x->shape[1];
	*d_out = w->shape[a->column_major ? 1 : 2];
	if (w->shape[a->column_major ? 2 : 1] != d_in)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "segment_gemm: weights %s (%lld, %lld, %lld) "
		    "do not take x's %lld columns", a->column_major ? "(column major)" : "(row major)",
		    (long long)w->shape[0], (long long)w->shape[1], (long long)w->shape[2],
		    (long long)d_in);
	if (out->ndim != 2 || out->shape[0] != x->shape[0] || out->shape[1] != *d_out)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "segment_gemm: out must be (%lld, %lld)",
		    (long long)x->shape[0], (long long)*d_out);
	return MATE_OK;
}

/* The segments' bounds and weights: checks everything before any product. */
static int
check_segments(const mate_segment_gemm_args *a, mate_error *err)
{
	int64_t rows = a->x->shape[0], nw = a->weights->shape[0], s = 0, e;
	int rc;

	if (a->batch_size < 0 || a->batch_size > ((int64_t)1 << 62))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "segment_gemm: batch_size %lld",
		    (long long)a->batch_size);
	if (a->seg_indptr == NULL && a->seg_lens == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "segment_gemm: either seg_lens or seg_indptr should be provided");
	if ((a->seg_indptr != NULL &&
	    (rc = mate_kernel_check_ints(a->seg_indptr, "seg_indptr", a->batch_size + 1, err)) != MATE_OK) ||
	    (a->seg_indptr == NULL &&
	    (rc = mate_kernel_check_ints(a->seg_lens, "seg_lens", a->batch_size, err)) != MATE_OK) ||
	    (a->weight_indices != NULL &&
	    (rc = mate_kernel_check_ints(a->weight_indices, "weight_indices", a->batch_size, err)) != MATE_OK))
		return rc;
	if (a->seg_indptr != NULL)
		s = mate_kernel_int_at(a->seg_indptr, 0);
	for (int64_t i = 0; i < a->batch_size; i++, s = e) {
		int64_t j = a->weight_indices != NULL ? mate_kernel_int_at(a->weight_indices, i) : i;

		e = segment_end(a, i, s);
		if (s < 0 || e < s || e > rows)
			return mate_set_error(err, MATE_ERR_ARGUMENT, "segment_gemm: segment %lld is rows "
			    "[%lld, %lld) of x's %lld", (long long)i, (long long)s, (long long)e,
			    (long long)rows);
		if (j < 0 || j >= nw)
			return mate_set_error(err, MATE_ERR_ARGUMENT, "segment_gemm: segment %lld takes "
			    "weight %lld of %lld", (long long)i, (long long)j, (long long)nw);
	}
	return MATE_OK;
}

/* Rows [s, e) of the 2-D t. */
static mate_tensor
rows_of(const mate_tensor *t, int64_t s, int64_t e)
{
	mate_tensor v = *t;

	v.shape[0] = e - s;
	v.offset = t->offset + s * t->stride[0];
	return v;
}

/* weights[j] as a (d_in, d_out) matrix. */
static mate_tensor
weight_of(const mate_tensor *w, int64_t j, int column_major)
{
	mate_tensor v = *w;

	v.ndim = 2;
	v.offset = w->offset + j * w->stride[0];
	v.shape[0] = w->shape[column_major ? 2 : 1];
	v.shape[1] = w->shape[column_major ? 1 : 2];
	v.stride[0] = w->stride[column_major ? 2 : 1];
	v.stride[1] = w->stride[column_major ? 1 : 2];
	return v;
}

int
mate_segment_gemm(const mate_kernels *k, const mate_segment_gemm_args *a, mate_error *err)
{
	int64_t d_out = 0, s = 0, e;
	int rc;

	if ((rc = check_operands(a, &d_out, err)) != MATE_OK ||
	    (rc = check_segments(a, err)) != MATE_OK)
		return rc;
	if (a->seg_indptr != NULL)
		s = mate_kernel_int_at(a->seg_indptr, 0);
	for (int64_t i = 0; i < a->batch_size; i++, s = e) {
		int64_t j = a->weight_indices != NULL ? mate_kernel_int_at(a->weight_indices, i) : i;
		mate_tensor xs, ws, os;

		e = segment_end(a, i, s);
		if (e == s || d_out == 0)
			continue;
		xs = rows_of(a->x, s, e);
		ws = weight_of(a->weights, j, a->column_major);
		os = rows_of(a->out, s, e);
		if ((rc = k->mm(&xs, &ws, &os, err)) != MATE_OK)
			return rc;
	}
	return MATE_OK;
}
