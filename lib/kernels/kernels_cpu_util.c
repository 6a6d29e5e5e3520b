/* kernels_cpu_util.c: what the CPU kernels share: widening loads, rounding stores, argument checks, scratch. */
#include "kernels_cpu.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Exact widening tables built from dtype.c's conversions. */
static float tab_f16[65536], tab_bf16[65536];
static float tab_f8[5][256];  /* e4m3fn, e5m2, e4m3fnuz, e5m2fnuz, e8m0fnu */
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static int
f8_index(mate_dtype dt)
{
	switch (dt) {
	case MATE_F8_E4M3FN: return 0;
	case MATE_F8_E5M2: return 1;
	case MATE_F8_E4M3FNUZ: return 2;
	case MATE_F8_E5M2FNUZ: return 3;
	case MATE_F8_E8M0FNU: return 4;
	default: return -1;
	}
}

static void
tab_init(void)
{
	static const mate_dtype f8[5] = { MATE_F8_E4M3FN, MATE_F8_E5M2,
		MATE_F8_E4M3FNUZ, MATE_F8_E5M2FNUZ, MATE_F8_E8M0FNU };

	for (uint32_t i = 0; i < 65536; i++) {
		tab_f16[i] = mate_f16_to_f32((uint16_t)i);
		tab_bf16[i] = mate_bf16_to_f32((uint16_t)i);
	}
	for (int t = 0; t < 5; t++)
		for (uint32_t i = 0; i < 256; i++) {
			uint8_t b = (uint8_t)i;
			tab_f8[t][i] = (float)mate_load_f64(f8[t], &b);
		}
}

int
kc_is_float(mate_dtype dt)
{
	switch (dt) {
	case MATE_F16: case MATE_BF16: case MATE_F32: case MATE_F64:
	case MATE_F8_E4M3FN: case MATE_F8_E5M2: case MATE_F8_E4M3FNUZ:
	case MATE_F8_E5M2FNUZ: case MATE_F8_E8M0FNU:
		return 1;
	default:
		return 0;
	}
}

/* n elements of es bytes from src (stride ss elements) to dst (stride ds). */
static void
copy_elems(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n, int64_t es)
{
	if (ds == 1 && ss == 1) {
		memcpy(dst, src, (size_t)(n * es));
		return;
	}
	for (int64_t i = 0; i < n; i++)
		memcpy(dst + i * ds * es, src + i * ss * es, (size_t)es);
}

static void
load_tab16(const float *tab, const char *p, int64_t stride, int64_t n, float *dst)
{
	for (int64_t i = 0; i < n; i++) {
		uint16_t h;
		memcpy(&h, p + i * stride * 2, 2);
		dst[i] = tab[h];
	}
}

void
kc_load_f(mate_dtype dt, const void *base, int64_t stride, int64_t n, float *dst)
{
	const char *p = base;
	int f8 = f8_index(dt);

	pthread_once(&tab_once, tab_init);
	switch (dt) {
	case MATE_F32:
		copy_elems((char *)dst, 1, p, stride, n, 4);
		return;
	case MATE_F16:
		load_tab16(tab_f16, p, stride, n, dst);
		return;
	case MATE_BF16:
		load_tab16(tab_bf16, p, stride, n, dst);
		return;
	case MATE_F64:
		for (int64_t i = 0; i < n; i++) {
			double d;
			memcpy(&d, p + i * stride * 8, 8);
			dst[i] = (float)d;
		}
		return;
	default:
		break;
	}
	if (f8 >= 0) {
		for (int64_t i = 0; i < n; i++)
			dst[i] = tab_f8[f8][(uint8_t)p[i * stride]];
		return;
	}
	for (int64_t i = 0; i < n; i++)
		dst[i] = (float)mate_load_f64(dt, p + i * stride * (int64_t)mate_dtype_size(dt));
}

void
kc_load_d(mate_dtype dt, const void *base, int64_t stride, int64_t n, double *dst)
{
	const char *p = base;
	size_t es = mate_dtype_size(dt);

	if (dt == MATE_F64) {
		copy_elems((char *)dst, 1, p, stride, n, 8);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		dst[i] = mate_load_f64(dt, p + i * stride * (int64_t)es);
}

void
kc_store_f(mate_dtype dt, void *base, int64_t stride, int64_t n, const float *src)
{
	char *p = base;

	switch (dt) {
	case MATE_F32:
		copy_elems(p, stride, (const char *)src, 1, n, 4);
		return;
	case MATE_F16: case MATE_BF16:
		for (int64_t i = 0; i < n; i++) {
			uint16_t h = dt == MATE_F16 ? mate_f32_to_f16(src[i]) : mate_f32_to_bf16(src[i]);
			memcpy(p + i * stride * 2, &h, 2);
		}
		return;
	case MATE_F64:
		for (int64_t i = 0; i < n; i++) {
			double d = src[i];
			memcpy(p + i * stride * 8, &d, 8);
		}
		return;
	case MATE_F8_E4M3FN:
		for (int64_t i = 0; i < n; i++)
			p[i * stride] = (char)mate_f32_to_f8e4m3fn(src[i]);
		return;
	case MATE_F8_E5M2:
		for (int64_t i = 0; i < n; i++)
			p[i * stride] = (char)mate_f32_to_f8e5m2(src[i]);
		return;
	default:
		return;  /* excluded by mate_kernel_out_dtype_ok() */
	}
}

void
kc_store_d(mate_dtype dt, void *base, int64_t stride, int64_t n, const double *src)
{
	char *p = base;
	size_t es = mate_dtype_size(dt);

	if (dt == MATE_F64) {
		copy_elems(p, stride, (const char *)src, 1, n, 8);
		return;
	}
	/* narrower outputs of f64 math go through f32 (double rounding for
	 * f16/bf16/f8; f64 inputs normally give f64 outputs) */
	for (int64_t i = 0; i < n; i++) {
		float f = (float)src[i];
		kc_store_f(dt, p + i * stride * (int64_t)es, 1, 1, &f);
	}
}

int64_t
kc_row_offset(const mate_tensor *t, int nlead, int64_t r)
{
	int64_t off = t->offset;

	for (int d = nlead - 1; d >= 0; d--) {
		int64_t n = t->shape[d];
		off += (r % n) * t->stride[d];
		r /= n;
	}
	return off;
}

int
kc_check(const mate_tensor *t, const char *what, int ndim, int out, mate_error *err)
{
	if (t == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: missing tensor", what);
	if (t->device_type != MATE_DEVICE_CPU)
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "%s: tensor is on a CUDA device; the CPU kernels need host memory", what);
	if ((ndim >= 0 && t->ndim != ndim) || (ndim < 0 && t->ndim < 1) ||
	    t->ndim > MATE_MAX_DIMS)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: %d dimensions, expected %s%d",
		    what, t->ndim, ndim < 0 ? "at least " : "", ndim < 0 ? 1 : ndim);
	if (out ? !mate_kernel_out_dtype_ok(t->dtype) : !kc_is_float(t->dtype))
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s: dtype %s not supported%s",
		    what, mate_dtype_name(t->dtype), out ? " as an output" : "");
	if (mate_tensor_storage_extent(t) < 0 || mate_tensor_numel(t) < 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: invalid shape or strides", what);
	if (t->data == NULL && mate_tensor_numel(t) > 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: no data", what);
	return MATE_OK;
}

int
kc_check_dim(const mate_tensor *t, const char *what, int d, int64_t want, mate_error *err)
{
	if (t->shape[d] == want)
		return MATE_OK;
	return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: dimension %d is %lld, expected %lld",
	    what, d, (long long)t->shape[d], (long long)want);
}

void *
kc_alloc(int64_t count, size_t size, mate_error *err)
{
	int64_t bytes;
	void *p = NULL;

	if (count < 0 || !mate_mul_ok(count, (int64_t)size, &bytes) || bytes > INT64_MAX - 64) {
		mate_set_error(err, MATE_ERR_LIMIT, "scratch size overflows");
		return NULL;
	}
	bytes = (bytes + 63) & ~(int64_t)63;
	if (posix_memalign(&p, 64, (size_t)(bytes > 0 ? bytes : 64)) != 0) {
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory (%lld bytes of scratch)",
		    (long long)bytes);
		return NULL;
	}
	return p;
}

/* ---- matrix gather and scatter ------------------------------------------- */

struct mat_job {
	mate_dtype dt;
	char *base;
	int64_t cols, s0, s1;
	void *buf;
	int dbl, scatter;
};

/* Rows [b, e) of a gather (widen into buf) or a scatter (round from buf). */
static void
mat_rows(void *ctx, int64_t b, int64_t e)
{
	struct mat_job *j = ctx;
	int64_t es = (int64_t)mate_dtype_size(j->dt);
	int64_t w = j->dbl ? (int64_t)sizeof(double) : (int64_t)sizeof(float);

	for (int64_t r = b; r < e; r++) {
		char *p = j->base + r * j->s0 * es;
		void *row = (char *)j->buf + r * j->cols * w;

		if (j->scatter && j->dbl)
			kc_store_d(j->dt, p, j->s1, j->cols, row);
		else if (j->scatter)
			kc_store_f(j->dt, p, j->s1, j->cols, row);
		else if (j->dbl)
			kc_load_d(j->dt, p, j->s1, j->cols, row);
		else
			kc_load_f(j->dt, p, j->s1, j->cols, row);
	}
}

static void
mat_run(mate_dtype dt, const void *base, int64_t rows, int64_t cols, int64_t s0,
    int64_t s1, void *buf, int dbl, int scatter)
{
	struct mat_job j = { .dt = dt, .base = (char *)base, .cols = cols, .s0 = s0,
		.s1 = s1, .buf = buf, .dbl = dbl, .scatter = scatter };

	mate_parallel_for(rows, cols * 4, mat_rows, &j);
}

void
kc_gather_f(mate_dtype dt, const void *base, int64_t rows, int64_t cols, int64_t s0,
    int64_t s1, float *dst)
{
	mat_run(dt, base, rows, cols, s0, s1, dst, 0, 0);
}

void
kc_gather_d(mate_dtype dt, const void *base, int64_t rows, int64_t cols, int64_t s0,
    int64_t s1, double *dst)
{
	mat_run(dt, base, rows, cols, s0, s1, dst, 1, 0);
}

void
kc_scatter_f(mate_dtype dt, void *base, int64_t rows, int64_t cols, int64_t s0,
    int64_t s1, const float *src)
{
	mat_run(dt, base, rows, cols, s0, s1, (void *)src, 0, 1);
}

void
kc_scatter_d(mate_dtype dt, void *base, int64_t rows, int64_t cols, int64_t s0,
    int64_t s1, const double *src)
{
	mat_run(dt, base, rows, cols, s0, s1, (void *)src, 1, 1);
}

/* ---- reductions ---------------------------------------------------------- */

/* The dot products: 8 partial sums (vectorisable) added in a fixed order,
 * the same for float and double. */
#define KC_DOT(name, T)								\
T										\
name(const T *x, const T *y, int64_t n)						\
{										\
	T acc[8] = { 0 }, s = 0;						\
	int64_t i = 0;								\
										\
	for (; i + 8 <= n; i += 8)						\
		for (int l = 0; l < 8; l++)					\
			acc[l] += x[i + l] * y[i + l];				\
	for (; i < n; i++)							\
		s += x[i] * y[i];						\
	return ((acc[0] + acc[4]) + (acc[1] + acc[5])) +			\
	    ((acc[2] + acc[6]) + (acc[3] + acc[7])) + s;			\
}

KC_DOT(kc_dot_f, float)
KC_DOT(kc_dot_d, double)
