/* test_tensor.c: the strided tensor model: init, sizes, contiguity, extent, addressing, gathering and copies between views. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mate_core.h"
#include "mate_private.h"
#include "test.h"

#define BIG (INT64_C(1) << 40)

/* A tensor built by hand, bypassing mate_tensor_init's checks. */
static mate_tensor
raw(mate_dtype dt, int ndim, const int64_t *shape, const int64_t *stride, int64_t offset,
    void *data)
{
	mate_tensor t;

	memset(&t, 0, sizeof(t));
	t.dtype = dt;
	t.ndim = ndim;
	for (int i = 0; i < ndim; i++) {
		t.shape[i] = shape[i];
		t.stride[i] = stride[i];
	}
	t.offset = offset;
	t.data = data;
	return t;
}

DEFINE_TEST(init)
{
	mate_tensor t;
	int64_t shape[MATE_MAX_DIMS + 1], stride[MATE_MAX_DIMS + 1];
	char buf[8];

	int64_t s3[] = { 2, 3, 4 };
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_F32, 3, s3, NULL, buf), MATE_OK);
	CHECK_EQ_INT(t.dtype, MATE_F32);
	CHECK_EQ_INT(t.ndim, 3);
	CHECK(t.data == buf);
	CHECK_EQ_INT(t.offset, 0);
	CHECK_EQ_INT(t.device_type, MATE_DEVICE_CPU);
	CHECK_EQ_INT(t.requires_grad, 0);
	CHECK_EQ_INT(t.stride[0], 12);
	CHECK_EQ_INT(t.stride[1], 4);
	CHECK_EQ_INT(t.stride[2], 1);
	for (int i = 0; i < 3; i++)
		CHECK_EQ_INT(t.shape[i], s3[i]);

	/* zero-size dims count as 1 for the strides, as in torch.empty(3,0,2) */
	int64_t s0[] = { 3, 0, 2 };
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_U8, 3, s0, NULL, NULL), MATE_OK);
	CHECK_EQ_INT(t.stride[0], 2);
	CHECK_EQ_INT(t.stride[1], 2);
	CHECK_EQ_INT(t.stride[2], 1);

	/* 0-dim */
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_F64, 0, NULL, NULL, buf), MATE_OK);
	CHECK_EQ_INT(t.ndim, 0);
	CHECK_EQ_INT(mate_tensor_numel(&t), 1);

	/* explicit strides are kept as given */
	int64_t st[] = { 1, 2, 6 };
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_I16, 3, s3, st, buf), MATE_OK);
	CHECK_EQ_INT(t.stride[0], 1);
	CHECK_EQ_INT(t.stride[1], 2);
	CHECK_EQ_INT(t.stride[2], 6);
	int64_t zero[] = { 0, 0, 0 };
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_I16, 3, s3, zero, buf), MATE_OK);
	CHECK_EQ_INT(t.stride[1], 0);

	/* MATE_MAX_DIMS dims is the limit */
	for (int i = 0; i <= MATE_MAX_DIMS; i++) {
		shape[i] = i % 4 == 0 ? 2 : 1;
		stride[i] = 1;
	}
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_BOOL, MATE_MAX_DIMS, shape, NULL, buf), MATE_OK);
	CHECK_EQ_INT(t.stride[MATE_MAX_DIMS - 1], 1);
	CHECK_EQ_INT(t.stride[0], 128);
	CHECK_EQ_INT(mate_tensor_numel(&t), 256);
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_BOOL, MATE_MAX_DIMS + 1, shape, NULL, buf),
	    MATE_ERR_ARGUMENT);
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_BOOL, MATE_MAX_DIMS + 1, shape, stride, buf),
	    MATE_ERR_ARGUMENT);

	/* bad arguments */
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_F32, -1, s3, NULL, buf), MATE_ERR_ARGUMENT);
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_DTYPE_INVALID, 3, s3, NULL, buf), MATE_ERR_ARGUMENT);
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_DTYPE_COUNT, 3, s3, NULL, buf), MATE_ERR_ARGUMENT);
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_F32, 3, NULL, NULL, buf), MATE_ERR_ARGUMENT);
	int64_t neg[] = { 2, -1, 4 };
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_F32, 3, neg, NULL, buf), MATE_ERR_ARGUMENT);
	int64_t negst[] = { 12, 4, -1 };
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_F32, 3, s3, negst, buf), MATE_ERR_ARGUMENT);
	int64_t huge[] = { BIG, BIG, 1 };
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_F32, 3, huge, NULL, buf), MATE_ERR_ARGUMENT);
	int64_t big_ok[] = { INT64_C(1) << 31, INT64_C(1) << 31 };
	CHECK_EQ_INT(mate_tensor_init(&t, MATE_U8, 2, big_ok, NULL, NULL), MATE_OK);
	CHECK_EQ_INT(t.stride[0], INT64_C(1) << 31);
}

DEFINE_TEST(numel)
{
	mate_tensor t;
	int64_t s3[] = { 2, 3, 4 }, st[] = { 0, 0, 0 };

	mate_tensor_init(&t, MATE_F32, 3, s3, NULL, NULL);
	CHECK_EQ_INT(mate_tensor_numel(&t), 24);
	CHECK_EQ_INT(mate_tensor_nbytes(&t), 96);
	mate_tensor_init(&t, MATE_C128, 3, s3, NULL, NULL);
	CHECK_EQ_INT(mate_tensor_nbytes(&t), 24 * 16);
	mate_tensor_init(&t, MATE_F32, 0, NULL, NULL, NULL);
	CHECK_EQ_INT(mate_tensor_numel(&t), 1);
	CHECK_EQ_INT(mate_tensor_nbytes(&t), 4);
	int64_t e[] = { 5, 0, 7 };
	mate_tensor_init(&t, MATE_F32, 3, e, NULL, NULL);
	CHECK_EQ_INT(mate_tensor_numel(&t), 0);
	CHECK_EQ_INT(mate_tensor_nbytes(&t), 0);

	/* overflow: numel of 2^80, and nbytes of 2^62 f32 */
	int64_t h[] = { BIG, BIG };
	t = raw(MATE_U8, 2, h, st, 0, NULL);
	CHECK_EQ_INT(mate_tensor_numel(&t), -1);
	CHECK_EQ_INT(mate_tensor_nbytes(&t), -1);
	int64_t h2[] = { INT64_C(1) << 31, INT64_C(1) << 31 };
	t = raw(MATE_F32, 2, h2, st, 0, NULL);
	CHECK_EQ_INT(mate_tensor_numel(&t), INT64_C(1) << 62);
	CHECK_EQ_INT(mate_tensor_nbytes(&t), -1);
	t.dtype = MATE_U8;
	CHECK_EQ_INT(mate_tensor_nbytes(&t), INT64_C(1) << 62);
	int64_t h3[] = { INT64_MAX };
	t = raw(MATE_I16, 1, h3, st, 0, NULL);
	CHECK_EQ_INT(mate_tensor_numel(&t), INT64_MAX);
	CHECK_EQ_INT(mate_tensor_nbytes(&t), -1);
	int64_t n[] = { 3, -2 };
	t = raw(MATE_U8, 2, n, st, 0, NULL);
	CHECK_EQ_INT(mate_tensor_numel(&t), -1);
	CHECK_EQ_INT(mate_tensor_nbytes(&t), -1);
}

static int
contig(int ndim, const int64_t *shape, const int64_t *stride)
{
	mate_tensor t = raw(MATE_F32, ndim, shape, stride, 0, NULL);
	return mate_tensor_is_contiguous(&t);
}

DEFINE_TEST(contiguous)
{
	int64_t s23[] = { 2, 3 };

	CHECK(contig(2, s23, (int64_t[]){ 3, 1 }));
	CHECK(!contig(2, s23, (int64_t[]){ 1, 2 }));              /* transposed */
	CHECK(!contig(2, s23, (int64_t[]){ 4, 1 }));              /* row slice */
	CHECK(!contig(2, s23, (int64_t[]){ 0, 1 }));              /* expanded */
	CHECK(!contig(2, s23, (int64_t[]){ 3, 2 }));
	CHECK(contig(0, NULL, NULL));
	/* size-1 dims' strides do not matter */
	CHECK(contig(3, (int64_t[]){ 3, 1, 4 }, (int64_t[]){ 4, 999, 1 }));
	CHECK(contig(3, (int64_t[]){ 1, 1, 1 }, (int64_t[]){ 0, 7, 5 }));
	CHECK(contig(2, (int64_t[]){ 1, 5 }, (int64_t[]){ 0, 1 }));
	CHECK(!contig(2, (int64_t[]){ 1, 5 }, (int64_t[]){ 5, 2 }));
	/* empty tensors are contiguous whatever their strides (torch's rule) */
	CHECK(contig(2, (int64_t[]){ 0, 3 }, (int64_t[]){ 3, 1 }));
	CHECK(contig(2, (int64_t[]){ 0, 3 }, (int64_t[]){ 7, 5 }));
	CHECK(contig(2, (int64_t[]){ 3, 0 }, (int64_t[]){ 9, 9 }));
	CHECK(contig(3, (int64_t[]){ 2, 0, 4 }, (int64_t[]){ 1, 1, 2 }));
	/* a stride pattern whose running product overflows is not contiguous (and not UB) */
	CHECK(!contig(2, (int64_t[]){ BIG, BIG }, (int64_t[]){ BIG, 1 }));
	CHECK(!contig(3, (int64_t[]){ 4, BIG, BIG }, (int64_t[]){ 0, BIG, 1 }));
}

static int64_t
extent(int ndim, const int64_t *shape, const int64_t *stride, int64_t offset)
{
	mate_tensor t = raw(MATE_F32, ndim, shape, stride, offset, NULL);
	return mate_tensor_storage_extent(&t);
}

DEFINE_TEST(extent)
{
	CHECK_EQ_INT(extent(2, (int64_t[]){ 2, 3 }, (int64_t[]){ 3, 1 }, 0), 6);
	CHECK_EQ_INT(extent(2, (int64_t[]){ 3, 2 }, (int64_t[]){ 1, 3 }, 0), 6);
	CHECK_EQ_INT(extent(1, (int64_t[]){ 4 }, (int64_t[]){ 1 }, 5), 9);
	CHECK_EQ_INT(extent(2, (int64_t[]){ 2, 3 }, (int64_t[]){ 4, 1 }, 1), 8);
	CHECK_EQ_INT(extent(2, (int64_t[]){ 3, 4 }, (int64_t[]){ 0, 1 }, 0), 4);
	CHECK_EQ_INT(extent(2, (int64_t[]){ 3, 4 }, (int64_t[]){ 0, 0 }, 2), 3);
	CHECK_EQ_INT(extent(0, NULL, NULL, 0), 1);
	CHECK_EQ_INT(extent(0, NULL, NULL, 41), 42);
	CHECK_EQ_INT(extent(3, (int64_t[]){ 2, 1, 2 }, (int64_t[]){ 10, 1000, 1 }, 3), 15);
	/* empty: the offset, whatever the rest */
	CHECK_EQ_INT(extent(2, (int64_t[]){ 0, 3 }, (int64_t[]){ 3, 1 }, 0), 0);
	CHECK_EQ_INT(extent(2, (int64_t[]){ 5, 0 }, (int64_t[]){ INT64_MAX, 1 }, 7), 7);
	/* bad */
	CHECK_EQ_INT(extent(1, (int64_t[]){ 4 }, (int64_t[]){ 1 }, -1), -1);
	CHECK_EQ_INT(extent(1, (int64_t[]){ 4 }, (int64_t[]){ -1 }, 10), -1);
	CHECK_EQ_INT(extent(1, (int64_t[]){ -4 }, (int64_t[]){ 1 }, 0), -1);
	/* overflow at every step: span, the sum, and the final +1 */
	CHECK_EQ_INT(extent(1, (int64_t[]){ 3 }, (int64_t[]){ INT64_C(1) << 62 }, 0), -1);
	CHECK_EQ_INT(extent(2, (int64_t[]){ 2, 2 }, (int64_t[]){ INT64_C(1) << 62,
	    INT64_C(1) << 62 }, 0), -1);
	CHECK_EQ_INT(extent(1, (int64_t[]){ 2 }, (int64_t[]){ INT64_MAX - 5 }, 6), -1);
	CHECK_EQ_INT(extent(1, (int64_t[]){ 2 }, (int64_t[]){ INT64_MAX }, 0), -1);
	CHECK_EQ_INT(extent(0, NULL, NULL, INT64_MAX), -1);
	CHECK_EQ_INT(extent(1, (int64_t[]){ 2 }, (int64_t[]){ INT64_MAX - 1 }, 0), INT64_MAX);
}

/* ---- addressing and gathering ----------------------------------------------- */

static float base[2 * 3 * 4 + 8];

static void
fill_base(void)
{
	for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		base[i] = (float)i;
}

/* Checks element(i) and copy_contiguous against want[] (storage indices). */
static void
check_view(const char *what, const mate_tensor *t, const int64_t *want, int n)
{
	float out[64];
	int bad = 0;

	CHECK_EQ_INT(mate_tensor_numel(t), n);
	memset(out, 0xff, sizeof(out));
	mate_tensor_copy_contiguous(t, out);
	for (int i = 0; i < n; i++) {
		const float *p = mate_tensor_element(t, i);
		if (p != &base[want[i]] || out[i] != (float)want[i]) {
			if (bad++ < 3)
				fprintf(stderr, "%s: element %d: at %td / copied %g, want %lld\n",
				    what, i, p - base, out[i], (long long)want[i]);
		}
	}
	/* nothing written past nbytes */
	for (int i = n; i < 64; i++)
		bad += !isnan(out[i]) ? 1 : 0;
	CHECK_EQ_INT(bad, 0);
}

DEFINE_TEST(views)
{
	mate_tensor t;
	int64_t want[64];

	fill_base();
	/* contiguous 3x4 */
	t = raw(MATE_F32, 2, (int64_t[]){ 3, 4 }, (int64_t[]){ 4, 1 }, 0, base);
	for (int i = 0; i < 12; i++)
		want[i] = i;
	check_view("contiguous", &t, want, 12);

	/* transposed: (4,3) view with strides (1,4) */
	t = raw(MATE_F32, 2, (int64_t[]){ 4, 3 }, (int64_t[]){ 1, 4 }, 0, base);
	for (int r = 0; r < 4; r++)
		for (int c = 0; c < 3; c++)
			want[r * 3 + c] = c * 4 + r;
	check_view("transposed", &t, want, 12);

	/* offset: view(-1)[5:9] */
	t = raw(MATE_F32, 1, (int64_t[]){ 4 }, (int64_t[]){ 1 }, 5, base);
	for (int i = 0; i < 4; i++)
		want[i] = 5 + i;
	check_view("offset", &t, want, 4);

	/* rows 1..2, columns 1..3 of a 4x5 matrix: inner runs with stride 1 */
	t = raw(MATE_F32, 2, (int64_t[]){ 2, 3 }, (int64_t[]){ 5, 1 }, 6, base);
	for (int r = 0; r < 2; r++)
		for (int c = 0; c < 3; c++)
			want[r * 3 + c] = 6 + r * 5 + c;
	check_view("slice", &t, want, 6);

	/* expanded: a row of 4 broadcast to 3x4 (stride 0), plus a column broadcast */
	t = raw(MATE_F32, 2, (int64_t[]){ 3, 4 }, (int64_t[]){ 0, 1 }, 2, base);
	for (int i = 0; i < 12; i++)
		want[i] = 2 + i % 4;
	check_view("expanded row", &t, want, 12);
	t = raw(MATE_F32, 2, (int64_t[]){ 3, 4 }, (int64_t[]){ 1, 0 }, 0, base);
	for (int i = 0; i < 12; i++)
		want[i] = i / 4;
	check_view("expanded column", &t, want, 12);
	t = raw(MATE_F32, 3, (int64_t[]){ 2, 2, 2 }, (int64_t[]){ 0, 0, 0 }, 9, base);
	for (int i = 0; i < 8; i++)
		want[i] = 9;
	check_view("expanded scalar", &t, want, 8);

	/* 3-D permuted: base (2,3,4) permuted (2,0,1) -> shape (4,2,3), strides (1,12,4) */
	t = raw(MATE_F32, 3, (int64_t[]){ 4, 2, 3 }, (int64_t[]){ 1, 12, 4 }, 0, base);
	for (int a = 0; a < 4; a++)
		for (int b = 0; b < 2; b++)
			for (int c = 0; c < 3; c++)
				want[(a * 2 + b) * 3 + c] = a + 12 * b + 4 * c;
	check_view("permuted", &t, want, 24);
	/* the same with an offset and a size-1 dim in the middle */
	t = raw(MATE_F32, 4, (int64_t[]){ 4, 1, 2, 3 }, (int64_t[]){ 1, 77, 12, 4 }, 3, base);
	for (int i = 0; i < 24; i++)
		want[i] += 3;
	check_view("permuted+offset", &t, want, 24);

	/* 0-dim at an offset */
	t = raw(MATE_F32, 0, NULL, NULL, 17, base);
	want[0] = 17;
	check_view("0-dim", &t, want, 1);

	/* empty: nothing is copied */
	float out[4] = { -1, -1, -1, -1 };
	t = raw(MATE_F32, 2, (int64_t[]){ 0, 3 }, (int64_t[]){ 7, 5 }, 0, base);
	mate_tensor_copy_contiguous(&t, out);
	CHECK(out[0] == -1 && out[3] == -1);
}

/* Other element sizes, and a bigger permuted/strided gather against element(). */
DEFINE_TEST(gather_sizes)
{
	static const mate_dtype dts[] = { MATE_U8, MATE_I16, MATE_F32, MATE_F64, MATE_C128 };
	static unsigned char store[16 * 4 * 5 * 6 * 2];
	static unsigned char out[16 * 4 * 5 * 6];
	int64_t shape[] = { 5, 3, 2, 4 };
	/* a permuted, strided view at offset 3 with an odd-sized inner stride */
	int64_t stride[] = { 8, 80, 2, 2 };

	for (size_t i = 0; i < sizeof(store); i++)
		store[i] = (unsigned char)(i * 7 + 3);
	for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
		size_t es = mate_dtype_size(dts[d]);
		mate_tensor t = raw(dts[d], 4, shape, stride, 3, store);
		int64_t n = mate_tensor_numel(&t), ext = mate_tensor_storage_extent(&t);
		int bad = 0;

		CHECK_EQ_INT(n, 120);
		CHECK(ext > 0 && (size_t)ext * es <= sizeof(store));
		CHECK(!mate_tensor_is_contiguous(&t));
		memset(out, 0, sizeof(out));
		mate_tensor_copy_contiguous(&t, out);
		for (int64_t i = 0; i < n; i++) {
			int64_t rest = i, off = 3;
			for (int k = 3; k >= 0; k--) {
				off += (rest % shape[k]) * stride[k];
				rest /= shape[k];
			}
			const unsigned char *p = mate_tensor_element(&t, i);
			if (p != store + off * (int64_t)es || memcmp(out + i * es, p, es) != 0)
				bad++;
		}
		if (bad)
			fprintf(stderr, "gather %s: %d elements wrong\n", mate_dtype_name(dts[d]), bad);
		CHECK_EQ_INT(bad, 0);
	}
}

/* View to view (mate_tensor_copy_view(), the gather and the scatter): transposes past the
 * 8 x 8 tiles with ragged edges, both ways, every element size, and a 3-D view at an
 * offset; each element lands where element() says. */
DEFINE_TEST(copy_view)
{
	static const mate_dtype dts[] = { MATE_U8, MATE_I16, MATE_F32, MATE_F64, MATE_C128 };
	static unsigned char a[16 * 1000], b[16 * 1000];
	static unsigned char packed[16 * 3 * 19 * 13];
	int64_t shape[] = { 3, 19, 13 };
	/* a: rows of 13 down the columns (a transpose) in blocks of 300; b: contiguous at 5 */
	int64_t sa[] = { 300, 1, 21 }, sb[] = { 19 * 13, 13, 1 };

	for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
		size_t es = mate_dtype_size(dts[d]);
		mate_tensor ta = raw(dts[d], 3, shape, sa, 2, a), tb = raw(dts[d], 3, shape, sb, 5, b);
		int bad = 0;

		CHECK((size_t)mate_tensor_storage_extent(&ta) * es <= sizeof(a));
		for (size_t i = 0; i < sizeof(a); i++) {
			a[i] = (unsigned char)(i * 13 + 1);
			b[i] = 0;
		}
		mate_tensor_copy_view(&tb, &ta);        /* from the transpose */
		for (int64_t i = 0; i < 3 * 19 * 13; i++)
			if (memcmp(mate_tensor_element(&tb, i), mate_tensor_element(&ta, i), es) != 0)
				bad++;
		memset(a, 0, sizeof(a));
		mate_tensor_copy_view(&ta, &tb);        /* into it */
		for (int64_t i = 0; i < 3 * 19 * 13; i++)
			if (memcmp(mate_tensor_element(&tb, i), mate_tensor_element(&ta, i), es) != 0)
				bad++;
		memset(packed, 0, sizeof(packed));
		mate_tensor_copy_contiguous(&ta, packed);
		for (int64_t i = 0; i < 3 * 19 * 13; i++)
			if (memcmp(packed + i * es, mate_tensor_element(&ta, i), es) != 0)
				bad++;
		memset(a, 0, sizeof(a));
		mate_tensor_scatter(&ta, packed);
		for (int64_t i = 0; i < 3 * 19 * 13; i++)
			if (memcmp(packed + i * es, mate_tensor_element(&ta, i), es) != 0)
				bad++;
		if (bad)
			fprintf(stderr, "copy_view %s: %d elements wrong\n", mate_dtype_name(dts[d]), bad);
		CHECK_EQ_INT(bad, 0);
	}
}

TEST_MAIN()
