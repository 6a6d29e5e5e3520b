/* tensor.c: the strided tensor model: shape, strides, extent, contiguity and gathering. */
#include "mate_private.h"

#include <string.h>

int
mate_tensor_init(mate_tensor *t, mate_dtype dt, int ndim, const int64_t *shape,
    const int64_t *stride, void *data)
{
	int64_t s = 1;

	memset(t, 0, sizeof(*t));
	if (ndim < 0 || ndim > MATE_MAX_DIMS || mate_dtype_size(dt) == 0 ||
	    (ndim > 0 && shape == NULL))
		return MATE_ERR_ARGUMENT;
	t->dtype = dt;
	t->ndim = ndim;
	t->data = data;
	for (int i = ndim - 1; i >= 0; i--) {
		if (shape[i] < 0 || (stride != NULL && stride[i] < 0))
			return MATE_ERR_ARGUMENT;
		t->shape[i] = shape[i];
		t->stride[i] = stride != NULL ? stride[i] : s;
		if (!mate_mul_ok(s, shape[i] > 0 ? shape[i] : 1, &s))
			return MATE_ERR_ARGUMENT;
	}
	return MATE_OK;
}

int64_t
mate_tensor_numel(const mate_tensor *t)
{
	int64_t n = 1;

	for (int i = 0; i < t->ndim; i++)
		if (t->shape[i] < 0 || !mate_mul_ok(n, t->shape[i], &n))
			return -1;
	return n;
}

int64_t
mate_tensor_nbytes(const mate_tensor *t)
{
	int64_t n = mate_tensor_numel(t), b;

	if (n < 0 || !mate_mul_ok(n, (int64_t)mate_dtype_size(t->dtype), &b))
		return -1;
	return b;
}

int
mate_tensor_is_contiguous(const mate_tensor *t)
{
	int64_t expect = 1;

	for (int i = 0; i < t->ndim; i++)
		if (t->shape[i] == 0)
			return 1;
	for (int i = t->ndim - 1; i >= 0; i--) {
		if (t->shape[i] == 1)
			continue;
		if (t->stride[i] != expect || !mate_mul_ok(expect, t->shape[i], &expect))
			return 0;
	}
	return 1;
}

int64_t
mate_tensor_storage_extent(const mate_tensor *t)
{
	int64_t end = t->offset, span;

	if (t->offset < 0)
		return -1;
	for (int i = 0; i < t->ndim; i++) {
		if (t->stride[i] < 0 || t->shape[i] < 0)
			return -1;
		if (t->shape[i] == 0)
			return t->offset;
	}
	for (int i = 0; i < t->ndim; i++) {
		if (!mate_mul_ok(t->shape[i] - 1, t->stride[i], &span) ||
		    !mate_add_ok(end, span, &end))
			return -1;
	}
	return mate_add_ok(end, 1, &end) ? end : -1;
}

void *
mate_tensor_element(const mate_tensor *t, int64_t i)
{
	int64_t off = t->offset;

	for (int d = t->ndim - 1; d >= 0; d--) {
		int64_t n = t->shape[d];
		off += (i % n) * t->stride[d];
		i /= n;
	}
	return (char *)t->data + off * (int64_t)mate_dtype_size(t->dtype);
}

/* Copies between the view at view (dims d.. of t) and the packed bytes at
 * *packed, which advances: into the packed bytes (gather) or out of them
 * (scatter). The innermost dimension goes run by run; recursion over outer
 * dims. */
static void
view_copy(const mate_tensor *t, int d, char *view, char **packed, size_t es, int scatter)
{
	size_t n = es;

	if (d < t->ndim && (d < t->ndim - 1 || t->stride[d] != 1)) {
		for (int64_t i = 0; i < t->shape[d]; i++)
			view_copy(t, d + 1, view + i * t->stride[d] * (int64_t)es, packed, es, scatter);
		return;
	}
	if (d < t->ndim)
		n = (size_t)t->shape[d] * es;
	if (scatter)
		memcpy(view, *packed, n);
	else
		memcpy(*packed, view, n);
	*packed += n;
}

/* The view's bytes to or from packed (nbytes bytes, row-major). */
static void
copy_packed(const mate_tensor *t, char *packed, int scatter)
{
	size_t es = mate_dtype_size(t->dtype);
	char *base = (char *)t->data + t->offset * (int64_t)es;

	if (mate_tensor_numel(t) <= 0)
		return;
	if (mate_tensor_is_contiguous(t)) {
		size_t n = (size_t)mate_tensor_nbytes(t);

		memcpy(scatter ? base : packed, scatter ? packed : base, n);
		return;
	}
	view_copy(t, 0, base, &packed, es, scatter);
}

void
mate_tensor_copy_contiguous(const mate_tensor *t, void *dst)
{
	copy_packed(t, dst, 0);
}

void
mate_tensor_scatter(const mate_tensor *t, const void *src)
{
	copy_packed(t, (char *)src, 1);  /* only read: scatter copies out of it */
}
