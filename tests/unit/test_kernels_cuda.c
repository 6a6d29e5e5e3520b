/* test_kernels_cuda.c: the CUDA kernels against the CPU ones, on host and on strided device tensors (77 without a GPU). */
#include "config.h"
#include "kernels.h"
#include "kernels_paged.h"
#include "backend.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "test.h"

static const mate_kernels *C, *G;
static uint32_t rng = 12345;

static float
frand(void)
{
	rng = rng * 1664525u + 1013904223u;
	return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static mate_tensor
tens(mate_dtype dt, void *data, int nd, const int64_t *shape, const int64_t *stride)
{
	mate_tensor t;

	mate_tensor_init(&t, dt, nd, shape, stride, data);
	return t;
}

/* n random values in [-scale, scale) stored as dt. */
static void *
rand_scaled(mate_dtype dt, int64_t n, float scale)
{
	size_t es = mate_dtype_size(dt);
	char *p = malloc((size_t)n * es);

	for (int64_t i = 0; i < n; i++) {
		float f = frand() * scale;
		if (dt == MATE_F32)
			memcpy(p + i * es, &f, 4);
		else {
			uint16_t h = dt == MATE_F16 ? mate_f32_to_f16(f) : mate_f32_to_bf16(f);
			memcpy(p + i * es, &h, 2);
		}
	}
	return p;
}

static void *
rand_buf(mate_dtype dt, int64_t n)
{
	return rand_scaled(dt, n, 1.0f);
}

/* Compares two host tensors' values with twice ops.md's tolerance for dt. */
static void
same(const char *what, const mate_tensor *x, const mate_tensor *y)
{
	double rtol = x->dtype == MATE_F32 ? 1e-5 : x->dtype == MATE_F16 ? 1e-3 : 8e-3;
	double atol = x->dtype == MATE_F32 ? 1e-6 : 1e-5;
	int64_t n = mate_tensor_numel(x), bad = 0, first = -1;

	for (int64_t i = 0; i < n; i++) {
		double a = mate_load_f64(x->dtype, mate_tensor_element(x, i));
		double b = mate_load_f64(y->dtype, mate_tensor_element(y, i));
		if (a == b)  /* equal infinities too (the lse of a request with no keys) */
			continue;
		if (!(fabs(a - b) <= 2 * (atol + rtol * fabs(a))) && !(isnan(a) && isnan(b))) {
			if (first < 0)
				first = i;
			bad++;
		}
	}
	test_checks++;
	if (bad) {
		test_failures++;
		fprintf(stderr, "%s: %lld of %lld elements differ, first at %lld: cpu %g cuda %g\n",
		    what, (long long)bad, (long long)n, (long long)first,
		    mate_load_f64(x->dtype, mate_tensor_element(x, first)),
		    mate_load_f64(y->dtype, mate_tensor_element(y, first)));
	}
}

static void
test_norm_act(mate_dtype dt)
{
	int64_t s2[2] = { 7, 96 }, sw[1] = { 96 }, sh[2] = { 7, 48 };
	void *x = rand_buf(dt, 7 * 96), *w = rand_buf(dt, 96), *r1 = rand_buf(dt, 7 * 96);
	void *x2 = malloc(7 * 96 * 4), *r2 = malloc(7 * 96 * 4);
	void *o1 = calloc(7 * 96, 4), *o2 = calloc(7 * 96, 4);
	mate_tensor tx = tens(dt, x, 2, s2, NULL), tw = tens(dt, w, 1, sw, NULL);
	mate_tensor to1 = tens(dt, o1, 2, s2, NULL), to2 = tens(dt, o2, 2, s2, NULL);
	mate_error err;

	CHECK_EQ_INT(C->rmsnorm(&tx, &tw, 1e-6, &to1, &err), MATE_OK);
	CHECK_EQ_INT(G->rmsnorm(&tx, &tw, 1e-6, &to2, &err), MATE_OK);
	same("rmsnorm", &to1, &to2);
	CHECK_EQ_INT(C->gemma_rmsnorm(&tx, &tw, 1e-6, &to1, &err), MATE_OK);
	CHECK_EQ_INT(G->gemma_rmsnorm(&tx, &tw, 1e-6, &to2, &err), MATE_OK);
	same("gemma_rmsnorm", &to1, &to2);
	/* fused add, in place on copies */
	memcpy(x2, x, 7 * 96 * mate_dtype_size(dt));
	memcpy(r2, r1, 7 * 96 * mate_dtype_size(dt));
	mate_tensor tx2 = tens(dt, x2, 2, s2, NULL), tr1 = tens(dt, r1, 2, s2, NULL),
	    tr2 = tens(dt, r2, 2, s2, NULL);
	CHECK_EQ_INT(C->fused_add_rmsnorm(&tx, &tr1, &tw, 1e-6, &err), MATE_OK);
	CHECK_EQ_INT(G->fused_add_rmsnorm(&tx2, &tr2, &tw, 1e-6, &err), MATE_OK);
	same("fused_add_rmsnorm input", &tx, &tx2);
	same("fused_add_rmsnorm residual", &tr1, &tr2);
	/* activations and softmax */
	mate_tensor th1 = tens(dt, o1, 2, sh, NULL), th2 = tens(dt, o2, 2, sh, NULL);
	CHECK_EQ_INT(C->gelu_tanh_and_mul(&tx, &th1, &err), MATE_OK);
	CHECK_EQ_INT(G->gelu_tanh_and_mul(&tx, &th2, &err), MATE_OK);
	same("gelu_tanh_and_mul", &th1, &th2);
	CHECK_EQ_INT(C->silu_and_mul(&tx, &th1, &err), MATE_OK);
	CHECK_EQ_INT(G->silu_and_mul(&tx, &th2, &err), MATE_OK);
	same("silu_and_mul", &th1, &th2);
	mate_tensor sf1 = tens(MATE_F32, o1, 2, s2, NULL), sf2 = tens(MATE_F32, o2, 2, s2, NULL);
	CHECK_EQ_INT(C->softmax(&tx, 0.5, NULL, &sf1, &err), MATE_OK);
	CHECK_EQ_INT(G->softmax(&tx, 0.5, NULL, &sf2, &err), MATE_OK);
	same("softmax", &sf1, &sf2);
	free(x), free(w), free(r1), free(x2), free(r2), free(o1), free(o2);
}

/* mm with a transposed operand held in device memory. */
static void
test_mm(mate_dtype dt)
{
	enum { M = 65, K = 40, N = 33 };
	int64_t sa[2] = { M, K }, sat[2] = { 1, M }, sb[2] = { K, N }, so[2] = { M, N };
	void *a = rand_scaled(dt, M * K, 0.25f), *b = rand_scaled(dt, K * N, 0.25f), *da = NULL;
	void *o1 = calloc(M * N, 4), *o2 = calloc(M * N, 4);
	mate_tensor ta = tens(dt, a, 2, sa, sat), tb = tens(dt, b, 2, sb, NULL);
	mate_tensor to1 = tens(MATE_F32, o1, 2, so, NULL), to2 = tens(MATE_F32, o2, 2, so, NULL);
	mate_error err;

	CHECK_EQ_INT(C->mm(&ta, &tb, &to1, &err), MATE_OK);
	CHECK_EQ_INT(G->mm(&ta, &tb, &to2, &err), MATE_OK);
	same("mm host", &to1, &to2);
	CHECK(cudaMalloc(&da, M * K * mate_dtype_size(dt)) == cudaSuccess);
	cudaMemcpy(da, a, M * K * mate_dtype_size(dt), cudaMemcpyHostToDevice);
	mate_tensor tda = ta;
	tda.data = da;
	tda.device_type = MATE_DEVICE_CUDA;
	memset(o2, 0, M * N * 4);
	CHECK_EQ_INT(G->mm(&tda, &tb, &to2, &err), MATE_OK);
	same("mm device a^T", &to1, &to2);
	cudaFree(da);
	free(a), free(b), free(o1), free(o2);
}

static void
test_attn(mate_dtype dt, int pos, int causal)
{
	enum { Lq = 5, Lk = 19, Hq = 4, Hk = 2, D = 64 };
	int64_t sq[3] = { Lq, Hq, D }, sk[3] = { Lk, Hk, D }, sl[2] = { Lq, Hq };
	void *q = rand_buf(dt, Lq * Hq * D), *k = rand_buf(dt, Lk * Hk * D), *v = rand_buf(dt, Lk * Hk * D);
	void *o1 = calloc(Lq * Hq * D, 4), *o2 = calloc(Lq * Hq * D, 4);
	float l1[Lq * Hq], l2[Lq * Hq];
	mate_tensor tq = tens(dt, q, 3, sq, NULL), tk = tens(dt, k, 3, sk, NULL), tv = tens(dt, v, 3, sk, NULL);
	mate_tensor to1 = tens(dt, o1, 3, sq, NULL), to2 = tens(dt, o2, 3, sq, NULL);
	mate_tensor tl1 = tens(MATE_F32, l1, 2, sl, NULL), tl2 = tens(MATE_F32, l2, 2, sl, NULL);
	mate_attn_params p;
	mate_error err;

	mate_attn_params_init(&p);
	p.pos_encoding_mode = pos;
	p.causal = causal;
	p.logits_soft_cap = causal ? 20.0 : 0;
	p.window_left = causal ? 7 : -1;
	CHECK_EQ_INT(C->single_prefill(&tq, &tk, &tv, &p, &to1, &tl1, &err), MATE_OK);
	CHECK_EQ_INT(G->single_prefill(&tq, &tk, &tv, &p, &to2, &tl2, &err), MATE_OK);
	same("prefill out", &to1, &to2);
	same("prefill lse", &tl1, &tl2);
	mate_tensor dq = tens(dt, q, 2, sq + 1, NULL), do1 = tens(dt, o1, 2, sq + 1, NULL),
	    do2 = tens(dt, o2, 2, sq + 1, NULL);
	CHECK_EQ_INT(C->single_decode(&dq, &tk, &tv, &p, &do1, NULL, &err), MATE_OK);
	CHECK_EQ_INT(G->single_decode(&dq, &tk, &tv, &p, &do2, NULL, &err), MATE_OK);
	same("decode out", &do1, &do2);
	free(q), free(k), free(v), free(o1), free(o2);
}

/* n values in [-2, 2) as float8 e4m3fn bytes (through the CPU's rounding). */
static uint8_t *
rand_fp8(int64_t n)
{
	uint8_t *p = malloc((size_t)n);

	for (int64_t i = 0; i < n; i++) {
		p[i] = mate_f32_to_f8e4m3fn(frand() * 2.0f);
	}
	return p;
}

/* FlashInfer's batch attention: 3 requests (one with no keys, one whose
 * last page holds one key) on a paged cache of kvdt (fp8: with k_scale
 * and v_scale) in layout hnd, decode or causal prefill, GQA 4; and the
 * same keys as a ragged batch. */
static void
test_batch(mate_dtype dt, mate_dtype kvdt, int hnd, int prefill, int pos)
{
	enum { B = 3, P = 4, NP = 7, Hq = 8, Hk = 2, D = 64, NQ = 9 };
	int64_t qo[B + 1] = { 0, 4, 4, NQ }, kvp[B + 1] = { 0, 3, 3, 5 };
	int64_t idx[5] = { 6, 0, 3, 5, 1 }, len[B] = { 9, 0, 5 };
	int64_t nq = prefill ? NQ : B;
	int64_t sc[4] = { NP, hnd ? Hk : P, hnd ? P : Hk, D }, sq[3] = { nq, Hq, D }, sl[2] = { nq, Hq };
	int fp8 = kvdt == MATE_F8_E4M3FN;
	void *q = rand_buf(dt, NQ * Hq * D);
	void *k = fp8 ? (void *)rand_fp8(NP * P * Hk * D) : rand_buf(kvdt, NP * P * Hk * D);
	void *v = fp8 ? (void *)rand_fp8(NP * P * Hk * D) : rand_buf(kvdt, NP * P * Hk * D);
	void *o1 = calloc(NQ * Hq * D, 4), *o2 = calloc(NQ * Hq * D, 4);
	float l1[NQ * Hq], l2[NQ * Hq];
	mate_tensor tq = tens(dt, q, 3, sq, NULL), tk = tens(kvdt, k, 4, sc, NULL), tv = tens(kvdt, v, 4, sc, NULL);
	mate_tensor to1 = tens(dt, o1, 3, sq, NULL), to2 = tens(dt, o2, 3, sq, NULL);
	mate_tensor tl1 = tens(MATE_F32, l1, 2, sl, NULL), tl2 = tens(MATE_F32, l2, 2, sl, NULL);
	mate_batch_attn a = { .batch = B, .qo_indptr = prefill ? qo : NULL, .kv_indptr = kvp,
		.kv_indices = idx, .n_indices = 5, .kv_len = len, .page_size = P, .q = &tq, .k = &tk,
		.v = &tv, .out = &to1, .lse = &tl1 };
	mate_attn_params p;
	mate_error err;
	char what[80];

	mate_attn_params_init(&p);
	p.kv_layout = hnd ? MATE_KV_HND : MATE_KV_NHD;
	p.pos_encoding_mode = pos;
	p.causal = prefill;
	p.logits_soft_cap = prefill ? 30.0 : 0;
	p.window_left = prefill ? 6 : -1;
	p.k_scale = fp8 ? 0.25 : 1.0;
	p.v_scale = fp8 ? 1.5 : 1.0;
	CHECK_EQ_INT(mate_batch_attention(C, &a, &p, &err), MATE_OK);
	a.out = &to2, a.lse = &tl2;
	CHECK_EQ_INT(mate_batch_attention(G, &a, &p, &err), MATE_OK);
	snprintf(what, sizeof(what), "batch %s %s pos %d%s: out", hnd ? "HND" : "NHD",
	    prefill ? "prefill" : "decode", pos, fp8 ? " fp8" : "");
	same(what, &to1, &to2);
	snprintf(what, sizeof(what), "batch %s %s pos %d%s: lse", hnd ? "HND" : "NHD",
	    prefill ? "prefill" : "decode", pos, fp8 ? " fp8" : "");
	same(what, &tl1, &tl2);
	if (prefill && !hnd) {  /* ragged: the first 9 and 5 rows of k and v as requests 0 and 2 */
		int64_t rkv[B + 1] = { 0, 9, 9, 14 }, sr[3] = { 14, Hk, D };
		mate_tensor rk = tens(kvdt, k, 3, sr, NULL), rv = tens(kvdt, v, 3, sr, NULL);
		mate_batch_attn r = { .batch = B, .qo_indptr = qo, .kv_indptr = rkv, .q = &tq,
			.k = &rk, .v = &rv, .out = &to1, .lse = &tl1 };

		CHECK_EQ_INT(mate_batch_attention(C, &r, &p, &err), MATE_OK);
		r.out = &to2, r.lse = &tl2;
		CHECK_EQ_INT(mate_batch_attention(G, &r, &p, &err), MATE_OK);
		snprintf(what, sizeof(what), "ragged pos %d: out", pos);
		same(what, &to1, &to2);
		snprintf(what, sizeof(what), "ragged pos %d: lse", pos);
		same(what, &tl1, &tl2);
	}
	free(q), free(k), free(v), free(o1), free(o2);
}

/* Every kernel of one dtype, the paged ones with their caches. */
static void
kernels_of(mate_dtype dt)
{
	test_norm_act(dt);
	test_mm(dt);
	test_attn(dt, MATE_POS_NONE, 1);
	test_attn(dt, MATE_POS_ROPE_LLAMA, 0);
	test_attn(dt, MATE_POS_ALIBI, 1);
	for (int hnd = 0; hnd < 2; hnd++)
		for (int prefill = 0; prefill < 2; prefill++)
			test_batch(dt, dt, hnd, prefill, prefill ? MATE_POS_ROPE_LLAMA : MATE_POS_NONE);
	test_batch(dt, dt, 0, 1, MATE_POS_NONE);
	if (dt != MATE_F32)   /* an fp8 e4m3 cache with k_scale and v_scale */
		for (int prefill = 0; prefill < 2; prefill++)
			test_batch(dt, MATE_F8_E4M3FN, prefill, prefill, MATE_POS_NONE);
}

DEFINE_TEST(backend)
{
	CHECK(mate_backend_get()->kernels() == G);
}

DEFINE_TEST(f32)
{
	kernels_of(MATE_F32);
}

DEFINE_TEST(f16)
{
	kernels_of(MATE_F16);
}

DEFINE_TEST(bf16)
{
	kernels_of(MATE_BF16);
}

/* mm_fp8 and bmm_fp8 with scales, fp8 e4m3fn operands into bf16. */
DEFINE_TEST(fp8)
{
	enum { Bt = 2, M = 33, K = 64, N = 48 };
	int64_t sa[3] = { Bt, M, K }, sb[3] = { Bt, K, N }, so[3] = { Bt, M, N }, s1[1] = { 1 };
	uint8_t *a = rand_fp8(Bt * M * K), *b = rand_fp8(Bt * K * N);
	void *o1 = calloc(Bt * M * N, 2), *o2 = calloc(Bt * M * N, 2);
	float sca = 0.5f, scb = 1.75f, alpha = 0.375f;
	mate_tensor ta = tens(MATE_F8_E4M3FN, a, 3, sa, NULL), tb = tens(MATE_F8_E4M3FN, b, 3, sb, NULL);
	mate_tensor to1 = tens(MATE_BF16, o1, 3, so, NULL), to2 = tens(MATE_BF16, o2, 3, so, NULL);
	mate_tensor tsa = tens(MATE_F32, &sca, 1, s1, NULL), tsb = tens(MATE_F32, &scb, 1, s1, NULL);
	mate_tensor tal = tens(MATE_F32, &alpha, 1, s1, NULL);
	mate_tensor a2 = tens(MATE_F8_E4M3FN, a, 2, sa + 1, NULL), b2 = tens(MATE_F8_E4M3FN, b, 2, sb + 1, NULL);
	mate_tensor m1 = tens(MATE_BF16, o1, 2, so + 1, NULL), m2 = tens(MATE_BF16, o2, 2, so + 1, NULL);
	mate_error err;

	CHECK_EQ_INT(C->bmm_fp8(&ta, &tb, &tsa, &tsb, &to1, &err), MATE_OK);
	CHECK_EQ_INT(G->bmm_fp8(&ta, &tb, &tsa, &tsb, &to2, &err), MATE_OK);
	same("bmm_fp8 with scales", &to1, &to2);
	CHECK_EQ_INT(C->mm_fp8(&a2, &b2, &tal, &m1, &err), MATE_OK);
	CHECK_EQ_INT(G->mm_fp8(&a2, &b2, &tal, &m2, &err), MATE_OK);
	same("mm_fp8 with alpha", &m1, &m2);
	free(a), free(b), free(o1), free(o2);
}

DEFINE_TEST(gemm_call)
{
	enum { N = 48 };
	float *a = rand_buf(MATE_F32, N * N), *b = rand_buf(MATE_F32, N * N);
	float *c1 = rand_buf(MATE_F32, N * N), *c2 = malloc(N * N * 4);
	int64_t n = N * N;
	mate_tensor ta = tens(MATE_F32, a, 1, &n, NULL), tb = tens(MATE_F32, b, 1, &n, NULL);
	mate_tensor tc1 = tens(MATE_F32, c1, 1, &n, NULL), tc2 = tens(MATE_F32, c2, 1, &n, NULL);
	mate_gemm_call g = { MATE_BLAS_ROW_MAJOR, 'T', 'N', 40, 30, 20, 0.5, 2.0, &ta, &tb, &tc1,
		N, N, N, 0, 1, 0, 0, 0 };
	mate_error err;

	memcpy(c2, c1, N * N * 4);
	CHECK_EQ_INT(C->gemm(&g, &err), MATE_OK);
	g.c = &tc2;
	CHECK_EQ_INT(G->gemm(&g, &err), MATE_OK);
	same("gemm row major", &tc1, &tc2);
	free(a), free(b), free(c1), free(c2);
}

int
main(int argc, char **argv)
{
	test_need_cuda_device();
	C = mate_kernels_cpu();
	G = mate_kernels_cuda();
	return test_main(argc, argv);
}
