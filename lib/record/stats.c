/* stats.c: level-5 tensor statistics (min, max, mean, NaN and Inf counts) computed as MATE does, in float32. */
#include "recorder_private.h"

#include <math.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

struct acc {
	mate_dtype dt;
	int64_t n;
	double sum;
	float fmin, fmax;
	int64_t nan_count, inf_count;
	int64_t imin, imax;
	uint64_t umin, umax;
};

typedef void (*row_fn)(struct acc *a, const char *p, int64_t n, int64_t step);

static uint16_t
load_u16(const char *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static float
load_float(mate_dtype dt, const char *p)
{
	float f;
	double d;

	switch (dt) {
	case MATE_F32:
		memcpy(&f, p, 4);
		return f;
	case MATE_F16:
		return mate_f16_to_f32(load_u16(p));
	case MATE_BF16:
		return mate_bf16_to_f32(load_u16(p));
	case MATE_F64:
		memcpy(&d, p, 8);
		return (float)d;
	default:
		return (float)mate_load_f64(dt, p);
	}
}

/* Folds a run's own min, max and counts into a. */
static void
merge_f32(struct acc *a, float mn, float mx, int64_t n, int64_t nan, int64_t inf, double sum)
{
	if (n > nan) {
		if (a->n == a->nan_count || mn < a->fmin)
			a->fmin = mn;
		if (a->n == a->nan_count || mx > a->fmax)
			a->fmax = mx;
	}
	a->nan_count += nan;
	a->inf_count += inf;
	a->sum += sum;
	a->n += n;
}

/* A contiguous run of float32, four lanes at a time where SSE2 is there:
 * min and max as minps/maxps take them (a NaN never wins), NaN and Inf
 * counted apart, the sum in double (in lanes: a different order of the
 * same double additions). */
static void
row_f32(struct acc *a, const char *p, int64_t n)
{
	float mn = INFINITY, mx = -INFINITY, x;
	double sum = 0;
	int64_t nan = 0, inf = 0, i = 0;

#if defined(__SSE2__)
	const __m128 vinf = _mm_set1_ps(INFINITY), abs = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
	__m128 vmn = vinf, vmx = _mm_set1_ps(-INFINITY);
	__m128d s0 = _mm_setzero_pd(), s1 = _mm_setzero_pd();
	float lane[4];
	double d[2];
	int32_t c[4];

	while (i + 4 <= n) {
		/* lane counters in int32: at most 2^28 blocks at a time */
		int64_t end = n - i > (INT64_C(1) << 30) ? i + (INT64_C(1) << 30) : n;
		__m128i vnan = _mm_setzero_si128(), vinfc = _mm_setzero_si128();
		for (; i + 4 <= end; i += 4) {
			__m128 v = _mm_loadu_ps((const float *)(const void *)(p + i * 4));
			vmn = _mm_min_ps(v, vmn);
			vmx = _mm_max_ps(v, vmx);
			vnan = _mm_sub_epi32(vnan, _mm_castps_si128(_mm_cmpunord_ps(v, v)));
			vinfc = _mm_sub_epi32(vinfc, _mm_castps_si128(_mm_cmpeq_ps(_mm_and_ps(v, abs), vinf)));
			s0 = _mm_add_pd(s0, _mm_cvtps_pd(v));
			s1 = _mm_add_pd(s1, _mm_cvtps_pd(_mm_movehl_ps(v, v)));
		}
		_mm_storeu_si128((__m128i *)(void *)c, vnan);
		nan += (int64_t)c[0] + c[1] + c[2] + c[3];
		_mm_storeu_si128((__m128i *)(void *)c, vinfc);
		inf += (int64_t)c[0] + c[1] + c[2] + c[3];
	}
	_mm_storeu_ps(lane, vmn);
	for (int k = 0; k < 4; k++)
		mn = lane[k] < mn ? lane[k] : mn;
	_mm_storeu_ps(lane, vmx);
	for (int k = 0; k < 4; k++)
		mx = lane[k] > mx ? lane[k] : mx;
	_mm_storeu_pd(d, _mm_add_pd(s0, s1));
	sum = d[0] + d[1];
#endif
	for (; i < n; i++) {
		memcpy(&x, p + i * 4, 4);
		mn = x < mn ? x : mn;
		mx = x > mx ? x : mx;
		nan += x != x;
		inf += fabsf(x) == INFINITY;
		sum += x;
	}
	merge_f32(a, mn, mx, n, nan, inf, sum);
}

/* torch.min/max propagate NaN; the sum of float32 values is kept in double
 * and rounded to float32 once, as torch's float32 mean is. */
static void
row_float(struct acc *a, const char *p, int64_t n, int64_t step)
{
	if (a->dt == MATE_F32 && step == 4) {
		row_f32(a, p, n);
		return;
	}
	for (int64_t i = 0; i < n; i++, p += step) {
		float x = load_float(a->dt, p);
		if (isnan(x)) {
			a->nan_count++;
		} else {
			if (isinf(x))
				a->inf_count++;
			if (a->n == a->nan_count || x < a->fmin)
				a->fmin = x;
			if (a->n == a->nan_count || x > a->fmax)
				a->fmax = x;
		}
		a->sum += x;
		a->n++;
	}
}

static int64_t
load_int(mate_dtype dt, const char *p)
{
	int8_t i8;
	int16_t i16;
	int32_t i32;
	int64_t i64;

	switch (dt) {
	case MATE_I8:
		memcpy(&i8, p, 1);
		return i8;
	case MATE_I16:
		memcpy(&i16, p, 2);
		return i16;
	case MATE_I32:
		memcpy(&i32, p, 4);
		return i32;
	default:
		memcpy(&i64, p, 8);
		return i64;
	}
}

static uint64_t
load_uint(mate_dtype dt, const char *p)
{
	uint32_t u32;
	uint64_t u64;

	switch (dt) {
	case MATE_U8:
		return (unsigned char)p[0];
	case MATE_U16:
		return load_u16(p);
	case MATE_U32:
		memcpy(&u32, p, 4);
		return u32;
	default:
		memcpy(&u64, p, 8);
		return u64;
	}
}

static void
row_int(struct acc *a, const char *p, int64_t n, int64_t step)
{
	for (int64_t i = 0; i < n; i++, p += step) {
		int64_t x = load_int(a->dt, p);
		if (a->n == 0 || x < a->imin)
			a->imin = x;
		if (a->n == 0 || x > a->imax)
			a->imax = x;
		a->sum += (float)x;
		a->n++;
	}
}

static void
row_uint(struct acc *a, const char *p, int64_t n, int64_t step)
{
	for (int64_t i = 0; i < n; i++, p += step) {
		uint64_t x = load_uint(a->dt, p);
		if (a->n == 0 || x < a->umin)
			a->umin = x;
		if (a->n == 0 || x > a->umax)
			a->umax = x;
		a->sum += (float)x;
		a->n++;
	}
}

/* Calls fn on each run of the innermost dimension of the view. */
static void
for_each_row(const mate_tensor *t, row_fn fn, struct acc *a)
{
	int64_t es = (int64_t)mate_dtype_size(t->dtype);
	const char *base = (const char *)t->data;
	int64_t idx[MATE_MAX_DIMS] = { 0 };
	int last = t->ndim - 1;
	int64_t rows = 1;

	if (t->ndim == 0) {
		fn(a, base + t->offset * es, 1, es);
		return;
	}
	for (int d = 0; d < last; d++)
		rows *= t->shape[d];
	for (int64_t r = 0; r < rows; r++) {
		int64_t off = t->offset;
		for (int d = 0; d < last; d++)
			off += idx[d] * t->stride[d];
		fn(a, base + off * es, t->shape[last], t->stride[last] * es);
		for (int d = last - 1; d >= 0; d--) {
			if (++idx[d] < t->shape[d])
				break;
			idx[d] = 0;
		}
	}
}

void
mate_rec_stats(const mate_tensor *t, struct rec_stats *s)
{
	struct acc a;
	int kind = mate_dtype_kind(t->dtype);

	memset(s, 0, sizeof(*s));
	if (mate_tensor_numel(t) <= 0 || kind == MATE_KIND_BOOL || kind == MATE_KIND_COMPLEX)
		return;
	memset(&a, 0, sizeof(a));
	a.dt = t->dtype;
	if (kind == MATE_KIND_FLOAT) {
		for_each_row(t, row_float, &a);
		s->kind = 1;
		s->nan_count = a.nan_count;
		s->inf_count = a.inf_count;
		s->min = a.nan_count ? NAN : a.fmin;
		s->max = a.nan_count ? NAN : a.fmax;
	} else if (kind == MATE_KIND_INT) {
		for_each_row(t, row_int, &a);
		s->kind = 2;
		s->imin = a.imin;
		s->imax = a.imax;
	} else {
		for_each_row(t, row_uint, &a);
		s->kind = 3;
		s->umin = a.umin;
		s->umax = a.umax;
	}
	s->mean = (float)(a.sum / (double)a.n);
}

/* Starts the indented line "KEY=". */
static void
stat_key(struct mate_buf *b, int indent, const char *key)
{
	mate_buf_spaces(b, indent);
	mate_buf_puts(b, key);
}

void
mate_rec_fmt_stats(struct mate_buf *b, const struct rec_stats *s, int indent)
{
	if (s->kind == 0)
		return;
	for (int i = 0; i < 2; i++) {
		stat_key(b, indent, i == 0 ? "min=" : "max=");
		if (s->kind == 1)
			mate_buf_fixed(b, i == 0 ? s->min : s->max, 6);
		else if (s->kind == 2)
			mate_buf_int(b, i == 0 ? s->imin : s->imax);
		else
			mate_buf_uint(b, i == 0 ? s->umin : s->umax);
		mate_buf_putc(b, '\n');
	}
	stat_key(b, indent, "mean=");
	mate_buf_fixed(b, s->mean, 6);
	mate_buf_putc(b, '\n');
	if (s->kind != 1)
		return;
	for (int i = 0; i < 2; i++) {
		stat_key(b, indent, i == 0 ? "nan_count=" : "inf_count=");
		mate_buf_int(b, i == 0 ? s->nan_count : s->inf_count);
		mate_buf_putc(b, '\n');
	}
}
