/* test_kernels.c: unit tests of the CPU kernels on small hand-computed cases, strided views and errors. */
#include "config.h"
#include "mate_private.h"
#include "kernels.h"
#include "backend.h"
#include "test.h"

#include <cblas.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NEAR(a, b, tol) do { \
	double a__ = (a), b__ = (b); \
	test_checks++; \
	if (!(fabs(a__ - b__) <= (tol))) { \
		test_failures++; \
		fprintf(stderr, "%s:%d: %s = %.9g, expected %.9g\n", __FILE__, __LINE__, \
		    #a, a__, b__); \
	} \
} while (0)

static const mate_kernels *K;

static mate_tensor
tens(mate_dtype dt, void *data, int nd, const int64_t *shape, const int64_t *stride)
{
	mate_tensor t;

	mate_tensor_init(&t, dt, nd, shape, stride, data);
	return t;
}

static mate_tensor
t1(mate_dtype dt, void *data, int64_t n)
{
	return tens(dt, data, 1, &n, NULL);
}

static mate_tensor
t2(mate_dtype dt, void *data, int64_t r, int64_t c)
{
	int64_t s[2] = { r, c };
	return tens(dt, data, 2, s, NULL);
}

static mate_tensor
t3(mate_dtype dt, void *data, int64_t a, int64_t b, int64_t c)
{
	int64_t s[3] = { a, b, c };
	return tens(dt, data, 3, s, NULL);
}

/* The table is filled by name: every entry is set (a missing one is NULL),
 * and the host backend hands out this one. Every member after the name is
 * a function pointer, so the check needs no list of them. */
DEFINE_TEST(table_complete)
{
	const mate_kernels *k = mate_kernels_cpu();
	size_t n = (sizeof(*k) - offsetof(mate_kernels, rmsnorm)) / sizeof(void (*)(void));
	void (*fn[64])(void);

	CHECK(k != NULL);
	CHECK_STR(k->name, "cpu");
	CHECK(n >= 16 && n <= 64);
	memcpy(fn, (const char *)k + offsetof(mate_kernels, rmsnorm), n * sizeof(fn[0]));
	for (size_t i = 0; i < n; i++)
		if (fn[i] == NULL) {
			fprintf(stderr, "cpu kernel table: entry %zu (after rmsnorm) is not set\n", i);
			CHECK(fn[i] != NULL);
		}
	CHECK(mate_backend_host()->kernels() == k);
	CHECK_STR(mate_backend_host()->name, "host");
}

DEFINE_TEST(rmsnorm)
{
	float x[2] = { 3, 4 }, w[2] = { 1, 2 }, y[2];
	mate_tensor tx = t2(MATE_F32, x, 1, 2), tw = t1(MATE_F32, w, 2), ty = t2(MATE_F32, y, 1, 2);
	mate_error err;

	CHECK_EQ_INT(K->rmsnorm(&tx, &tw, 0.0, &ty, &err), MATE_OK);
	NEAR(y[0], 3 / sqrt(12.5), 1e-6);
	NEAR(y[1], 8 / sqrt(12.5), 1e-6);
	CHECK_EQ_INT(K->gemma_rmsnorm(&tx, &tw, 0.0, &ty, &err), MATE_OK);
	NEAR(y[0], 2 * 3 / sqrt(12.5), 1e-6);
	NEAR(y[1], 3 * 4 / sqrt(12.5), 1e-6);

	/* strided rows: the columns of a 2x3 matrix viewed transposed (3 rows of 2) */
	float m[6] = { 1, 2, 3, 1, 2, 3 }, o[6];
	int64_t sh[2] = { 3, 2 }, st[2] = { 1, 3 };
	mate_tensor tm = tens(MATE_F32, m, 2, sh, st), to = tens(MATE_F32, o, 2, sh, st);
	float one[2] = { 1, 1 };
	mate_tensor t_one = t1(MATE_F32, one, 2);
	CHECK_EQ_INT(K->rmsnorm(&tm, &t_one, 0.0, &to, &err), MATE_OK);
	for (int i = 0; i < 6; i++)
		NEAR(o[i], 1.0, 1e-6);

	/* bf16 in, eps rounds to f32 */
	uint16_t xb[2] = { mate_f32_to_bf16(1.0f), mate_f32_to_bf16(-1.0f) }, yb[2];
	mate_tensor txb = t2(MATE_BF16, xb, 1, 2), tyb = t2(MATE_BF16, yb, 1, 2);
	CHECK_EQ_INT(K->rmsnorm(&txb, &t_one, 1e-6, &tyb, &err), MATE_OK);
	NEAR(mate_bf16_to_f32(yb[0]), 1.0, 0);
	NEAR(mate_bf16_to_f32(yb[1]), -1.0, 0);

	/* f64 math */
	double xd[3] = { 1, 2, 2 }, wd[3] = { 1, 1, 1 }, yd[3];
	mate_tensor txd = t1(MATE_F64, xd, 3), twd = t1(MATE_F64, wd, 3), tyd = t1(MATE_F64, yd, 3);
	CHECK_EQ_INT(K->rmsnorm(&txd, &twd, 0.0, &tyd, &err), MATE_OK);
	NEAR(yd[2], 2 / sqrt(3.0), 1e-15);

	/* eps where it dominates: a row of zeros stays zeros (0/0 without it),
	 * and eps = 37.5 turns (3, 4)'s mean square 12.5 into 50 */
	float xz[2][2] = { { 0, 0 }, { 3, 4 } }, yz[2][2];
	mate_tensor txz = t2(MATE_F32, xz, 2, 2), tyz = t2(MATE_F32, yz, 2, 2);
	CHECK_EQ_INT(K->rmsnorm(&txz, &tw, 37.5, &tyz, &err), MATE_OK);
	NEAR(yz[0][0], 0, 0);
	NEAR(yz[0][1], 0, 0);
	NEAR(yz[1][0], 3 / sqrt(50.0), 1e-6);
	NEAR(yz[1][1], 8 / sqrt(50.0), 1e-6);
	CHECK_EQ_INT(K->gemma_rmsnorm(&txz, &tw, 37.5, &tyz, &err), MATE_OK);
	NEAR(yz[0][1], 0, 0);
	NEAR(yz[1][0], 2 * 3 / sqrt(50.0), 1e-6);
	NEAR(yz[1][1], 3 * 4 / sqrt(50.0), 1e-6);
	/* tiny values: mean square 1.25e-7 against eps 1e-6 */
	float xt[2] = { 3e-4f, 4e-4f }, yt[2];
	mate_tensor txt = t2(MATE_F32, xt, 1, 2), tyt = t2(MATE_F32, yt, 1, 2);
	CHECK_EQ_INT(K->rmsnorm(&txt, &tw, 1e-6, &tyt, &err), MATE_OK);
	NEAR(yt[1], 8e-4 / sqrt(1.125e-6), 1e-6);
	CHECK_EQ_INT(K->rmsnorm(&txd, &twd, 1.0, &tyd, &err), MATE_OK);
	NEAR(yd[2], 2 / sqrt(4.0), 1e-15);

	/* NaN and Inf propagate */
	float xn[2] = { NAN, 1 }, yn[2];
	mate_tensor txn = t2(MATE_F32, xn, 1, 2), tyn = t2(MATE_F32, yn, 1, 2);
	CHECK_EQ_INT(K->rmsnorm(&txn, &t_one, 1e-6, &tyn, &err), MATE_OK);
	CHECK(isnan(yn[0]) && isnan(yn[1]));
}

DEFINE_TEST(fused_add)
{
	float x[2] = { 1, 1 }, r[2] = { 1, 1 }, w[2] = { 1, 3 };
	mate_tensor tx = t2(MATE_F32, x, 1, 2), tr = t2(MATE_F32, r, 1, 2), tw = t1(MATE_F32, w, 2);
	mate_error err;

	CHECK_EQ_INT(K->fused_add_rmsnorm(&tx, &tr, &tw, 0.0, &err), MATE_OK);
	NEAR(r[0], 2, 0);
	NEAR(x[0], 1, 1e-7);
	NEAR(x[1], 3, 1e-6);
	CHECK_EQ_INT(K->gemma_fused_add_rmsnorm(&tx, &tr, &tw, 0.0, &err), MATE_OK);
	NEAR(r[0], 3, 0);   /* 2 + 1 */
	NEAR(r[1], 5, 0);   /* 2 + 3 */
	/* residual (3, 5): rms = sqrt(17), weight + 1 = (2, 4) */
	NEAR(x[0], 3 / sqrt(17.0) * 2, 1e-6);
	NEAR(x[1], 5 / sqrt(17.0) * 4, 1e-6);

	/* the residual is rounded to its dtype (f16) before the norm */
	float xi[2] = { 1e-4f, 1e-4f };
	uint16_t rh[2] = { mate_f32_to_f16(1.0f), mate_f32_to_f16(1.0f) };
	float ones[2] = { 1, 1 };
	mate_tensor txi = t2(MATE_F32, xi, 1, 2), trh = t2(MATE_F16, rh, 1, 2),
	    tones = t1(MATE_F32, ones, 2);
	CHECK_EQ_INT(K->fused_add_rmsnorm(&txi, &trh, &tones, 0.0, &err), MATE_OK);
	NEAR(mate_f16_to_f32(rh[0]), 1.0, 0);
	NEAR(xi[0], 1.0, 0);

	/* eps where it dominates: a zero row stays zero, eps 37.5 on (3, 4) */
	float xe[2][2] = { { 0, 0 }, { 3, 4 } }, re[2][2] = { { 0, 0 }, { 0, 0 } };
	mate_tensor txe = t2(MATE_F32, xe, 2, 2), tre = t2(MATE_F32, re, 2, 2);
	CHECK_EQ_INT(K->fused_add_rmsnorm(&txe, &tre, &tw, 37.5, &err), MATE_OK);
	NEAR(xe[0][0], 0, 0);
	NEAR(xe[1][0], 3 / sqrt(50.0), 1e-6);
	NEAR(xe[1][1], 3 * 4 / sqrt(50.0), 1e-6);
	for (int i = 0; i < 2; i++)   /* residual: (0, 0), (3, 4) again */
		xe[1][i] = 0;
	CHECK_EQ_INT(K->gemma_fused_add_rmsnorm(&txe, &tre, &tw, 37.5, &err), MATE_OK);
	NEAR(xe[0][1], 0, 0);
	NEAR(xe[1][0], 2 * 3 / sqrt(50.0), 1e-6);
	NEAR(xe[1][1], 4 * 4 / sqrt(50.0), 1e-6);
}

DEFINE_TEST(act)
{
	float x[4] = { 0, 1, 2, 3 }, y[2];
	mate_tensor tx = t2(MATE_F32, x, 1, 4), ty = t2(MATE_F32, y, 1, 2);
	mate_error err;

	CHECK_EQ_INT(K->silu_and_mul(&tx, &ty, &err), MATE_OK);
	NEAR(y[0], 0, 0);
	NEAR(y[1], 3 / (1 + exp(-1.0)), 1e-6);
	CHECK_EQ_INT(K->gelu_and_mul(&tx, &ty, &err), MATE_OK);
	NEAR(y[1], 3 * 0.5 * (1 + erf(1 / sqrt(2.0))), 1e-6);
	CHECK_EQ_INT(K->gelu_tanh_and_mul(&tx, &ty, &err), MATE_OK);
	NEAR(y[1], 3 * 0.5 * (1 + tanh(sqrt(2 / M_PI) * (1 + 0.044715))), 1e-6);

	/* f16 output, 3-D input with a non-contiguous middle dimension */
	float x3[2][2][4] = { { { 1, 1, 2, 2 }, { 9, 9, 9, 9 } }, { { -1, 0, 4, 1 }, { 9, 9, 9, 9 } } };
	uint16_t y3[2][1][2];
	int64_t sh[3] = { 2, 1, 4 }, st[3] = { 8, 4, 1 };
	mate_tensor tx3 = tens(MATE_F32, x3, 3, sh, st), ty3 = t3(MATE_F16, y3, 2, 1, 2);
	CHECK_EQ_INT(K->silu_and_mul(&tx3, &ty3, &err), MATE_OK);
	NEAR(mate_f16_to_f32(y3[0][0][0]), mate_f16_to_f32(mate_f32_to_f16((float)(2 / (1 + exp(-1.0))))), 0);
	NEAR(mate_f16_to_f32(y3[1][0][1]), 0, 0);

	/* errors: odd last dim, wrong out shape */
	mate_tensor todd = t2(MATE_F32, x, 1, 3);
	CHECK_EQ_INT(K->silu_and_mul(&todd, &ty, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "odd");
	mate_tensor tbad = t2(MATE_F32, y, 2, 1);
	CHECK_EQ_INT(K->silu_and_mul(&tx, &tbad, &err), MATE_ERR_ARGUMENT);
}

DEFINE_TEST(softmax)
{
	float x[2][3] = { { 0, 0, 0 }, { 1, 2, 3 } }, y[2][3], t[2] = { 1, 2 };
	mate_tensor tx = t2(MATE_F32, x, 2, 3), ty = t2(MATE_F32, y, 2, 3), tt = t1(MATE_F32, t, 2);
	mate_error err;
	double e0 = exp(0.5), e1 = exp(1.0), e2 = exp(1.5);

	CHECK_EQ_INT(K->softmax(&tx, 1.0, NULL, &ty, &err), MATE_OK);
	NEAR(y[0][1], 1.0 / 3, 1e-7);
	NEAR(y[1][2], exp(3.0) / (exp(1.0) + exp(2.0) + exp(3.0)), 1e-6);
	CHECK_EQ_INT(K->softmax(&tx, 2.0, NULL, &ty, &err), MATE_OK);
	NEAR(y[1][0], e0 / (e0 + e1 + e2), 1e-6);
	CHECK_EQ_INT(K->softmax(&tx, 0.0, &tt, &ty, &err), MATE_OK);
	NEAR(y[1][0], e0 / (e0 + e1 + e2), 1e-6);
	NEAR(y[0][0], 1.0 / 3, 1e-7);
	double xd[3] = { 1, 2, 3 }, yd[3];
	mate_tensor txd = t2(MATE_F64, xd, 1, 3), tyd = t2(MATE_F64, yd, 1, 3);
	CHECK_EQ_INT(K->softmax(&txd, 1.0, NULL, &tyd, &err), MATE_OK);
	NEAR(yd[2], exp(3.0) / (exp(1.0) + exp(2.0) + exp(3.0)), 1e-15);
	mate_tensor tbad = t1(MATE_F32, t, 1);
	tbad.shape[0] = 3;
	CHECK_EQ_INT(K->softmax(&tx, 1.0, &tbad, &ty, &err), MATE_ERR_ARGUMENT);
}

DEFINE_TEST(mm)
{
	float a[2][3] = { { 1, 2, 3 }, { 4, 5, 6 } }, b[3][2] = { { 1, 0 }, { 0, 1 }, { 1, 1 } };
	float c[2][2], bt[2][3] = { { 1, 0, 1 }, { 0, 1, 1 } }, cc[2][2];
	mate_tensor ta = t2(MATE_F32, a, 2, 3), tb = t2(MATE_F32, b, 3, 2), tc = t2(MATE_F32, c, 2, 2);
	mate_error err;

	CHECK_EQ_INT(K->mm(&ta, &tb, &tc, &err), MATE_OK);
	NEAR(c[0][0], 4, 0);
	NEAR(c[0][1], 5, 0);
	NEAR(c[1][0], 10, 0);
	NEAR(c[1][1], 11, 0);
	/* b given transposed (strides (1, 3)), out column major */
	int64_t shb[2] = { 3, 2 }, stb[2] = { 1, 3 }, shc[2] = { 2, 2 }, stc[2] = { 1, 2 };
	mate_tensor tbt = tens(MATE_F32, bt, 2, shb, stb), tcc = tens(MATE_F32, cc, 2, shc, stc);
	CHECK_EQ_INT(K->mm(&ta, &tbt, &tcc, &err), MATE_OK);
	NEAR(cc[0][1], 10, 0);  /* element (1, 0) */
	NEAR(cc[1][0], 5, 0);   /* element (0, 1) */
	/* f16 a with a stride-2 row (not BLAS-able), bf16 out */
	uint16_t ah[2][6], ch[2][2];
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 3; k++)
			ah[i][2 * k] = mate_f32_to_f16(a[i][k]), ah[i][2 * k + 1] = 0;
	int64_t sha[2] = { 2, 3 }, sta[2] = { 6, 2 };
	mate_tensor tah = tens(MATE_F16, ah, 2, sha, sta), tch = t2(MATE_BF16, ch, 2, 2);
	CHECK_EQ_INT(K->mm(&tah, &tb, &tch, &err), MATE_OK);
	NEAR(mate_bf16_to_f32(ch[1][1]), 11, 0);
	/* f64 */
	double ad[2] = { 0.1, 0.2 }, bd[2] = { 0.3, 0.4 }, cd[1];
	mate_tensor tad = t2(MATE_F64, ad, 1, 2), tbd = t2(MATE_F64, bd, 2, 1), tcd = t2(MATE_F64, cd, 1, 1);
	CHECK_EQ_INT(K->mm(&tad, &tbd, &tcd, &err), MATE_OK);
	NEAR(cd[0], 0.1 * 0.3 + 0.2 * 0.4, 1e-16);
	/* K = 0 gives zeros */
	mate_tensor ta0 = t2(MATE_F32, a, 2, 0), tb0 = t2(MATE_F32, b, 0, 2);
	c[0][0] = 7;
	CHECK_EQ_INT(K->mm(&ta0, &tb0, &tc, &err), MATE_OK);
	NEAR(c[0][0], 0, 0);
	/* shape mismatch */
	CHECK_EQ_INT(K->mm(&ta, &ta, &tc, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "b: dimension 0");
	/* integer input */
	mate_tensor ti = t2(MATE_I32, a, 2, 3);
	CHECK_EQ_INT(K->mm(&ti, &tb, &tc, &err), MATE_ERR_UNSUPPORTED);
	/* a broadcast view whose element count overflows */
	int64_t shx[2] = { (int64_t)1 << 40, (int64_t)1 << 40 }, stx[2] = { 0, 0 };
	mate_tensor tx = tens(MATE_F32, a, 2, shx, stx);
	CHECK_EQ_INT(K->mm(&tx, &tb, &tc, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "invalid shape");
	/* device tensor */
	mate_tensor tdev = ta;
	tdev.device_type = MATE_DEVICE_CUDA;
	CHECK_EQ_INT(K->mm(&tdev, &tb, &tc, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "host memory");
}

DEFINE_TEST(bmm_fp8)
{
	/* batch 2 of (1 x 2) @ (2 x 1), B column major */
	uint8_t A[2][2], B[2][2];
	float av[2][2] = { { 1, 2 }, { 3, -4 } }, bv[2][2] = { { 0.5f, 1 }, { 2, 0.25f } };
	uint16_t out[2];
	float sa = 0.5f, sb = 4.0f, alpha = 3.0f, o32[2];
	mate_error err;

	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) {
			A[i][j] = mate_f32_to_f8e4m3fn(av[i][j]);
			B[i][j] = mate_f32_to_f8e5m2(bv[i][j]);
		}
	int64_t shB[3] = { 2, 2, 1 }, stB[3] = { 2, 1, 2 };
	mate_tensor tA = t3(MATE_F8_E4M3FN, A, 2, 1, 2), tB = tens(MATE_F8_E5M2, B, 3, shB, stB);
	mate_tensor tsa = t1(MATE_F32, &sa, 1), tsb = t1(MATE_F32, &sb, 1);
	mate_tensor tout = t3(MATE_BF16, out, 2, 1, 1);
	CHECK_EQ_INT(K->bmm_fp8(&tA, &tB, &tsa, &tsb, &tout, &err), MATE_OK);
	NEAR(mate_bf16_to_f32(out[0]), 2 * (0.5 + 2), 0);
	NEAR(mate_bf16_to_f32(out[1]), 2 * (6 - 1), 0);
	/* mm_fp8 on batch 0 */
	mate_tensor ta = t2(MATE_F8_E4M3FN, A, 1, 2), tal = t1(MATE_F32, &alpha, 1);
	int64_t shb[2] = { 2, 1 }, stb[2] = { 1, 2 };
	mate_tensor tb = tens(MATE_F8_E5M2, B, 2, shb, stb), to = t2(MATE_F32, o32, 1, 1);
	CHECK_EQ_INT(K->mm_fp8(&ta, &tb, &tal, &to, &err), MATE_OK);
	NEAR(o32[0], 3 * 2.5, 0);
	/* bad scale */
	mate_tensor tbig = t1(MATE_F32, o32, 2);
	CHECK_EQ_INT(K->mm_fp8(&ta, &tb, &tbig, &to, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "alpha");
}

/* Recorded GEMM calls replay bit for bit against OpenBLAS called directly. */
DEFINE_TEST(gemm_call)
{
	enum { M = 37, N = 29, Kd = 41, LD = 64 };
	static float a[LD * LD], b[LD * LD], c0[LD * LD], c1[LD * LD];
	mate_tensor ta = t1(MATE_F32, a, LD * LD), tb = t1(MATE_F32, b, LD * LD),
	    tc = t1(MATE_F32, c1, LD * LD);
	mate_gemm_call g = { 0 };
	mate_error err;

	for (int i = 0; i < LD * LD; i++) {
		a[i] = (float)((i * 7919) % 113) / 17.0f - 3;
		b[i] = (float)((i * 104729) % 89) / 13.0f - 3;
		c0[i] = c1[i] = (float)(i % 11) - 5;
	}
	g.order = MATE_BLAS_COL_MAJOR;
	g.transa = MATE_BLAS_TRANS;
	g.transb = 'N';
	g.m = M, g.n = N, g.k = Kd, g.alpha = 0.75, g.beta = -1.25;
	g.a = &ta, g.b = &tb, g.c = &tc, g.lda = LD, g.ldb = LD, g.ldc = LD;
	cblas_sgemm(CblasColMajor, CblasTrans, CblasNoTrans, M, N, Kd, 0.75f, a, LD, b, LD,
	    -1.25f, c0, LD);
	CHECK_EQ_INT(K->gemm(&g, &err), MATE_OK);
	CHECK(memcmp(c0, c1, sizeof(c0)) == 0);
	/* row major, B transposed */
	g.order = MATE_BLAS_ROW_MAJOR;
	g.transa = 'N', g.transb = MATE_BLAS_TRANS;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, Kd, 0.75f, a, LD, b, LD,
	    -1.25f, c0, LD);
	CHECK_EQ_INT(K->gemm(&g, &err), MATE_OK);
	CHECK(memcmp(c0, c1, sizeof(c0)) == 0);
	/* Fortran sgemm_ */
	g.order = MATE_BLAS_COL_MAJOR, g.fortran = 1, g.transb = 'N';
	cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, M, N, Kd, 0.75f, a, LD, b, LD,
	    -1.25f, c0, LD);
	CHECK_EQ_INT(K->gemm(&g, &err), MATE_OK);
	CHECK(memcmp(c0, c1, sizeof(c0)) == 0);
	/* batched, strided */
	g.fortran = 0, g.batch = 2, g.m = 8, g.n = 8, g.k = 8, g.lda = g.ldb = g.ldc = 8;
	g.stride_a = g.stride_b = g.stride_c = 100;
	for (int i = 0; i < 2; i++)
		cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 8, 8, 8, 0.75f, a + 100 * i,
		    8, b + 100 * i, 8, -1.25f, c0 + 100 * i, 8);
	CHECK_EQ_INT(K->gemm(&g, &err), MATE_OK);
	CHECK(memcmp(c0, c1, sizeof(c0)) == 0);
	/* f64 */
	static double ad[16], bd[16], cd0[16], cd1[16];
	for (int i = 0; i < 16; i++)
		ad[i] = i * 0.1, bd[i] = 1.0 / (i + 1), cd0[i] = cd1[i] = i;
	mate_tensor tad = t1(MATE_F64, ad, 16), tbd = t1(MATE_F64, bd, 16), tcd = t1(MATE_F64, cd1, 16);
	mate_gemm_call gd = { MATE_BLAS_ROW_MAJOR, 'T', 'T', 4, 4, 4, 2.0, 0.5, &tad, &tbd, &tcd,
		4, 4, 4, 0, 1, 0, 0, 0 };
	cblas_dgemm(CblasRowMajor, CblasTrans, CblasTrans, 4, 4, 4, 2.0, ad, 4, bd, 4, 0.5, cd0, 4);
	CHECK_EQ_INT(K->gemm(&gd, &err), MATE_OK);
	CHECK(memcmp(cd0, cd1, sizeof(cd0)) == 0);
	/* f16 C (cublasGemmEx-like): widened, rounded once */
	uint16_t ch[16];
	for (int i = 0; i < 16; i++)
		ch[i] = mate_f32_to_f16(1.0f);
	mate_tensor tch = t1(MATE_F16, ch, 16), ta16 = t1(MATE_F32, a, 16), tb16 = t1(MATE_F32, b, 16);
	mate_gemm_call gh = { MATE_BLAS_COL_MAJOR, 'N', 'N', 4, 4, 4, 1.0, 1.0, &ta16, &tb16, &tch,
		4, 4, 4, 0, 1, 0, 0, 0 };
	float ref[16];
	for (int i = 0; i < 16; i++)
		ref[i] = 1;
	cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 4, 4, 4, 1, a, 4, b, 4, 1, ref, 4);
	CHECK_EQ_INT(K->gemm(&gh, &err), MATE_OK);
	for (int i = 0; i < 16; i++)
		NEAR(mate_f16_to_f32(ch[i]), mate_f16_to_f32(mate_f32_to_f16(ref[i])), 0);
	/* a non-contiguous C (every other element) is gathered and scattered back */
	float cs[32], ccont[16];
	int64_t n16 = 16, s2 = 2;
	for (int i = 0; i < 32; i++)
		cs[i] = (float)i;
	for (int i = 0; i < 16; i++)
		ccont[i] = cs[2 * i];
	mate_tensor tcs = tens(MATE_F32, cs, 1, &n16, &s2);
	mate_gemm_call gs = { MATE_BLAS_COL_MAJOR, 'N', 'T', 4, 4, 4, 1.5, 0.5, &ta16, &tb16, &tcs,
		4, 4, 4, 0, 1, 0, 0, 0 };
	cblas_sgemm(CblasColMajor, CblasNoTrans, CblasTrans, 4, 4, 4, 1.5f, a, 4, b, 4, 0.5f, ccont, 4);
	CHECK_EQ_INT(K->gemm(&gs, &err), MATE_OK);
	for (int i = 0; i < 16; i++) {
		NEAR(cs[2 * i], ccont[i], 0);
		NEAR(cs[2 * i + 1], 2 * i + 1, 0);
	}
	/* errors: lda too small, buffer too short, row-major Fortran */
	gh.lda = 3;
	CHECK_EQ_INT(K->gemm(&gh, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "leading dimension");
	gh.lda = 4, gh.k = 5, gh.ldb = 5;
	CHECK_EQ_INT(K->gemm(&gh, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "need 20");
	gh.k = 4, gh.ldb = 4, gh.order = MATE_BLAS_ROW_MAJOR, gh.fortran = 1;
	CHECK_EQ_INT(K->gemm(&gh, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "Fortran");
}

/* q = (1, 0); k0 = (0, 0), k1 = (ln 3, 0): weights 1/4 and 3/4 with sm_scale 1. */
static float dq[2][2] = { { 1, 0 }, { 1, 0 } };
static float dk[2][2] = { { 0, 0 }, { 1.0986122886681098f, 0 } };
static float dv[2][2] = { { 1, 0 }, { 0, 1 } };

DEFINE_TEST(decode)
{
	float o[2][2], lse[2];
	mate_tensor tq = t2(MATE_F32, dq, 2, 2), tk = t3(MATE_F32, dk, 2, 1, 2),
	    tv = t3(MATE_F32, dv, 2, 1, 2), to = t2(MATE_F32, o, 2, 2), tl = t1(MATE_F32, lse, 2);
	mate_attn_params p;
	mate_error err;

	mate_attn_params_init(&p);
	p.sm_scale = 1.0;
	CHECK_EQ_INT(K->single_decode(&tq, &tk, &tv, &p, &to, &tl, &err), MATE_OK);
	NEAR(o[0][0], 0.25, 1e-6);
	NEAR(o[0][1], 0.75, 1e-6);
	NEAR(o[1][1], 0.75, 1e-6);   /* GQA: both query heads read kv head 0 */
	NEAR(lse[0], 2.0, 1e-6);     /* log2(1 + 3) */
	p.lse_base_e = 1;
	CHECK_EQ_INT(K->single_decode(&tq, &tk, &tv, &p, &to, &tl, &err), MATE_OK);
	NEAR(lse[1], log(4.0), 1e-6);
	p.lse_base_e = 0;
	/* q_scale 2 and k_scale 1/4 halve the logits: z1 = ln 3 / 2; v_scale 4 */
	p.q_scale = 2.0, p.k_scale = 0.25, p.v_scale = 4.0;
	CHECK_EQ_INT(K->single_decode(&tq, &tk, &tv, &p, &to, &tl, &err), MATE_OK);
	NEAR(o[0][0], 4 / (1 + sqrt(3.0)), 1e-6);
	NEAR(o[0][1], 4 * sqrt(3.0) / (1 + sqrt(3.0)), 1e-6);
	NEAR(lse[0], log2(1 + sqrt(3.0)), 1e-6);
	p.q_scale = p.k_scale = p.v_scale = 1.0;
	p.lse_base_e = 1;
	/* HND layout: the same tensors viewed (Hk, L, D) */
	int64_t sh[3] = { 1, 2, 2 }, st[3] = { 4, 2, 1 };
	mate_tensor hk = tens(MATE_F32, dk, 3, sh, st), hv = tens(MATE_F32, dv, 3, sh, st);
	p.kv_layout = MATE_KV_HND;
	CHECK_EQ_INT(K->single_decode(&tq, &hk, &hv, &p, &to, NULL, &err), MATE_OK);
	NEAR(o[0][1], 0.75, 1e-6);
	p.kv_layout = MATE_KV_NHD;
	/* window_left = 0 keeps the last position only */
	p.window_left = 0;
	CHECK_EQ_INT(K->single_decode(&tq, &tk, &tv, &p, &to, &tl, &err), MATE_OK);
	NEAR(o[0][1], 1.0, 1e-6);
	NEAR(lse[0], log(3.0), 1e-6);
	p.window_left = -1;
	/* soft cap 1: z1 = tanh(ln 3) = 0.8 */
	p.logits_soft_cap = 1.0;
	CHECK_EQ_INT(K->single_decode(&tq, &tk, &tv, &p, &to, NULL, &err), MATE_OK);
	NEAR(o[0][1], exp(0.8) / (1 + exp(0.8)), 1e-6);
	p.logits_soft_cap = 0;
	/* ALiBi, two heads: slopes 2^-4 and 2^-8; position 0 is one step back */
	p.pos_encoding_mode = MATE_POS_ALIBI;
	CHECK_EQ_INT(K->single_decode(&tq, &tk, &tv, &p, &to, NULL, &err), MATE_OK);
	NEAR(o[0][0], 1 / (1 + 3 * exp(1.0 / 16)), 1e-6);
	NEAR(o[1][0], 1 / (1 + 3 * exp(1.0 / 256)), 1e-6);
	/* RoPE: q rotated to position 1, k0 at 0, k1 at 1 (D = 2: angle = pos) */
	float kr[2][2] = { { 1, 0 }, { 1, 0 } };
	mate_tensor tkr = t3(MATE_F32, kr, 2, 1, 2);
	p.pos_encoding_mode = MATE_POS_ROPE_LLAMA;
	CHECK_EQ_INT(K->single_decode(&tq, &tkr, &tv, &p, &to, NULL, &err), MATE_OK);
	NEAR(o[0][1], exp(1.0) / (exp(cos(1.0)) + exp(1.0)), 1e-6);
	/* float64 math */
	double q64[2] = { 1, 0 }, k64[4] = { 0, 0, log(3.0), 0 }, v64[4] = { 1, 0, 0, 1 }, o64[2], l64;
	int64_t s1 = 1;
	mate_tensor tq64 = t2(MATE_F64, q64, 1, 2), tk64 = t3(MATE_F64, k64, 2, 1, 2),
	    tv64 = t3(MATE_F64, v64, 2, 1, 2), to64 = t2(MATE_F64, o64, 1, 2),
	    tl64 = tens(MATE_F64, &l64, 1, &s1, NULL);
	mate_attn_params_init(&p);
	p.sm_scale = 1.0;
	p.lse_base_e = 1;
	CHECK_EQ_INT(K->single_decode(&tq64, &tk64, &tv64, &p, &to64, &tl64, &err), MATE_OK);
	NEAR(o64[1], 0.75, 1e-15);
	NEAR(l64, log(4.0), 1e-15);
	/* errors */
	p.pos_encoding_mode = 7;
	CHECK_EQ_INT(K->single_decode(&tq, &tk, &tv, &p, &to, NULL, &err), MATE_ERR_UNSUPPORTED);
	p.pos_encoding_mode = 0;
	mate_tensor tq3 = t2(MATE_F32, dq, 1, 2);
	tq3.shape[0] = 3;
	float o3[3][2];
	mate_tensor to3 = t2(MATE_F32, o3, 3, 2);
	mate_tensor tk2 = t3(MATE_F32, dk, 1, 2, 2);
	CHECK_EQ_INT(K->single_decode(&tq3, &tk2, &tk2, &p, &to3, NULL, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "multiple");
}

DEFINE_TEST(prefill)
{
	float o[2][1][2], lse[2][1];
	float q[2][1][2] = { { { 1, 0 } }, { { 1, 0 } } };
	mate_tensor tq = t3(MATE_F32, q, 2, 1, 2), tk = t3(MATE_F32, dk, 2, 1, 2),
	    tv = t3(MATE_F32, dv, 2, 1, 2), to = t3(MATE_F32, o, 2, 1, 2), tl = t2(MATE_F32, lse, 2, 1);
	mate_attn_params p;
	mate_error err;

	mate_attn_params_init(&p);
	p.sm_scale = 1.0;
	p.causal = 1;
	CHECK_EQ_INT(K->single_prefill(&tq, &tk, &tv, &p, &to, &tl, &err), MATE_OK);
	NEAR(o[0][0][0], 1.0, 1e-6);   /* row 0 sees position 0 only */
	NEAR(o[1][0][1], 0.75, 1e-6);
	NEAR(lse[0][0], 0.0, 1e-6);
	/* Lq = 1 < Lk = 2: bottom-right aligned, the row sees both */
	mate_tensor tq1 = t3(MATE_F32, q, 1, 1, 2), to1 = t3(MATE_F32, o, 1, 1, 2);
	CHECK_EQ_INT(K->single_prefill(&tq1, &tk, &tv, &p, &to1, NULL, &err), MATE_OK);
	NEAR(o[0][0][1], 0.75, 1e-6);
	/* custom mask overrides causal: row 0 sees 1 only, row 1 sees 0 only */
	uint8_t mask[2][2] = { { 0, 1 }, { 1, 0 } };
	mate_tensor tm = t2(MATE_BOOL, mask, 2, 2);
	p.custom_mask = &tm;
	CHECK_EQ_INT(K->single_prefill(&tq, &tk, &tv, &p, &to, NULL, &err), MATE_OK);
	NEAR(o[0][0][1], 1.0, 1e-6);
	NEAR(o[1][0][0], 1.0, 1e-6);
	/* the same as packed bits (little bit order): 0b0110 */
	uint8_t packed = 0x6;
	mate_tensor tp = t1(MATE_U8, &packed, 1);
	p.custom_mask = NULL;
	p.packed_custom_mask = &tp;
	CHECK_EQ_INT(K->single_prefill(&tq, &tk, &tv, &p, &to, NULL, &err), MATE_OK);
	NEAR(o[0][0][1], 1.0, 1e-6);
	NEAR(o[1][0][0], 1.0, 1e-6);
	/* a fully masked row: zeros and lse -inf */
	packed = 0x4;
	CHECK_EQ_INT(K->single_prefill(&tq, &tk, &tv, &p, &to, &tl, &err), MATE_OK);
	NEAR(o[0][0][0], 0, 0);
	NEAR(o[0][0][1], 0, 0);
	CHECK(isinf(lse[0][0]) && lse[0][0] < 0);
	NEAR(o[1][0][0], 1.0, 1e-6);
	/* bad mask shape */
	mate_tensor tm1 = t2(MATE_BOOL, mask, 1, 2);
	p.packed_custom_mask = NULL;
	p.custom_mask = &tm1;
	CHECK_EQ_INT(K->single_prefill(&tq, &tk, &tv, &p, &to, NULL, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "custom_mask");
}

/* Attention sinks: exp(sink) joins each head's softmax denominator, with no value. */
DEFINE_TEST(sinks)
{
	float o[2][1][2], lse[2][1], sinks[2] = { 1.3862943611198906f, 0 }, bad[1] = { 0 };
	float q[2][1][2] = { { { 1, 0 } }, { { 1, 0 } } }, qd[2][2] = { { 1, 0 }, { 1, 0 } };
	mate_tensor tq = t3(MATE_F32, q, 2, 1, 2), tk = t3(MATE_F32, dk, 2, 1, 2),
	    tv = t3(MATE_F32, dv, 2, 1, 2), to = t3(MATE_F32, o, 2, 1, 2), tl = t2(MATE_F32, lse, 2, 1),
	    ts = t1(MATE_F32, sinks, 1), td = t2(MATE_F32, qd, 2, 2), tod = t2(MATE_F32, o, 2, 2),
	    tld = t1(MATE_F32, lse, 2), tsd = t1(MATE_F32, sinks, 2), tb = t1(MATE_F32, bad, 1);
	mate_attn_params p;
	mate_error err;

	mate_attn_params_init(&p);
	p.sm_scale = 1.0;
	p.sinks = &tsd;
	/* decode, head 0: weights 1, 3 and the sink's 4, over 8; head 1: sink 0 adds 1, over 5 */
	CHECK_EQ_INT(K->single_decode(&td, &tk, &tv, &p, &tod, &tld, &err), MATE_OK);
	NEAR(((float *)o)[0], 1.0 / 8, 1e-6);
	NEAR(((float *)o)[1], 3.0 / 8, 1e-6);
	NEAR(((float *)o)[3], 3.0 / 5, 1e-6);
	NEAR(lse[0][0], 3.0, 1e-6);   /* log2(1 + 3 + 4) */
	/* prefill, causal, one query head: row 0 sees key 0 and the sink (1 / 5) */
	p.causal = 1;
	p.sinks = &ts;
	CHECK_EQ_INT(K->single_prefill(&tq, &tk, &tv, &p, &to, &tl, &err), MATE_OK);
	NEAR(o[0][0][0], 1.0 / 5, 1e-6);
	NEAR(o[1][0][1], 3.0 / 8, 1e-6);
	/* a row with no key left (Lq > Lk) but the sink: zeros, and the sink's LSE */
	mate_tensor tk1 = t3(MATE_F32, dk, 1, 1, 2), tv1 = t3(MATE_F32, dv, 1, 1, 2);
	CHECK_EQ_INT(K->single_prefill(&tq, &tk1, &tv1, &p, &to, &tl, &err), MATE_OK);
	NEAR(o[0][0][0], 0, 0);
	NEAR(lse[0][0], 2.0, 1e-6);   /* log2(4) */
	NEAR(o[1][0][0], 1.0 / 5, 1e-6);
	/* one value per query head, floating */
	p.sinks = &tsd;
	CHECK_EQ_INT(K->single_prefill(&tq, &tk, &tv, &p, &to, NULL, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "sinks");
	tb.dtype = MATE_I32;
	p.sinks = &tb;
	CHECK_EQ_INT(K->single_prefill(&tq, &tk, &tv, &p, &to, NULL, &err), MATE_ERR_ARGUMENT);
}

/* mate_tensor_scatter() inverts mate_tensor_copy_contiguous() on views. */
DEFINE_TEST(scatter)
{
	float buf[12], flat[6] = { 0, 1, 2, 3, 4, 5 }, back[6];
	int64_t sh[2] = { 2, 3 }, st[2] = { 1, 4 };   /* every 4th column of a 3x4 view, transposed */
	mate_tensor t = tens(MATE_F32, buf, 2, sh, st);

	for (int i = 0; i < 12; i++)
		buf[i] = -1;
	mate_tensor_scatter(&t, flat);
	NEAR(buf[0], 0, 0);
	NEAR(buf[4], 1, 0);   /* element (0, 1) */
	NEAR(buf[1], 3, 0);   /* element (1, 0) */
	NEAR(buf[9], 5, 0);   /* element (1, 2) */
	NEAR(buf[2], -1, 0);
	mate_tensor_copy_contiguous(&t, back);
	CHECK(memcmp(back, flat, sizeof(flat)) == 0);
}

/* Enough rows to run on several threads: every row must be right. */
DEFINE_TEST(threads)
{
	enum { R = 512, H = 256 };
	static float x[R][H], y[R][H], w[H];
	mate_tensor tx = t2(MATE_F32, x, R, H), ty = t2(MATE_F32, y, R, H), tw = t1(MATE_F32, w, H);
	mate_error err;
	int bad = 0;

	for (int j = 0; j < H; j++)
		w[j] = 2;
	for (int i = 0; i < R; i++)
		for (int j = 0; j < H; j++)
			x[i][j] = (float)(i + 1);
	CHECK_EQ_INT(K->rmsnorm(&tx, &tw, 0.0, &ty, &err), MATE_OK);
	for (int i = 0; i < R; i++)
		for (int j = 0; j < H; j++)
			bad += fabsf(y[i][j] - 2) > 1e-5f;
	CHECK_EQ_INT(bad, 0);
}

DEFINE_TEST(names)
{
	CHECK_EQ_INT(mate_kv_layout_from_name("HND"), MATE_KV_HND);
	CHECK_EQ_INT(mate_kv_layout_from_name("NHD"), MATE_KV_NHD);
	CHECK_EQ_INT(mate_kv_layout_from_name("XYZ"), -1);
	CHECK_EQ_INT(mate_pos_encoding_from_name("ROPE_LLAMA"), MATE_POS_ROPE_LLAMA);
	CHECK_EQ_INT(mate_pos_encoding_from_name("PosEncodingMode.ALIBI"), MATE_POS_ALIBI);
	CHECK_EQ_INT(mate_pos_encoding_from_name("ROPE_LLAMA_INTERLEAVED"), -1);
	CHECK(mate_backend_host()->kernels() == mate_kernels_cpu());
	CHECK_STR(mate_kernels_cpu()->name, "cpu");
}

int
main(int argc, char **argv)
{
	K = mate_kernels_cpu();
	return test_main(argc, argv);
}
