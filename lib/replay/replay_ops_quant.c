/* replay_ops_quant.c: replay handlers of FlashInfer's block quantization (fp4_quantize, nvfp4_quantize, mxfp4_quantize, mxfp8_quantize, silu_and_mul_nvfp4_quantize), mxfp4_dequantize, mxfp4_dequantize_host, its float8 rmsnorm_quant, fused_add_rmsnorm_quant and block-scaled GEMMs (mm_fp4, mm_mxfp8), on the CPU kernels of kernels_cpu_quant.c. */
#include "mate_private.h"
#include "kernels_fi.h"
#include "replay_private.h"

#include <math.h>
#include <string.h>

/* Registers the handlers on r (called by mate_replay_register_builtins()). */
int mate_replay_register_quant(mate_replay *r, mate_error *err);

/* The default of FlashInfer's nvfp4_4over6 (its _UNSET's repr): left out, the call read
 * FLASHINFER_NVFP4_4OVER6*, which the dump does not hold; replayed as off. */
#define UNSET "<nvfp4_4over6 unset: read FLASHINFER_NVFP4_4OVER6*>"

/* t with its last two dimensions swapped (a view). */
static mate_tensor
swapped(const mate_tensor *t)
{
	mate_tensor v = *t;
	int n = t->ndim;

	if (n >= 2) {
		v.shape[n - 2] = t->shape[n - 1], v.shape[n - 1] = t->shape[n - 2];
		v.stride[n - 2] = t->stride[n - 1], v.stride[n - 1] = t->stride[n - 2];
	}
	return v;
}

/* The recorded output key when it is a host tensor of bytes shaped as ours, which the
 * kernel may take rounding ties from; else NULL (the comparison reports the rest). */
static const mate_tensor *
recorded_like(mate_replay_call *c, const char *key, const mate_tensor *ours)
{
	const mate_value *v = mate_replay_call_recorded(c, key);
	const mate_tensor *t;

	if (mate_value_kind_of(v) != MATE_V_TENSOR)
		return NULL;
	t = mate_value_get_tensor(v);
	if (t->ndim != ours->ndim || mate_dtype_size(t->dtype) != 1 || t->data == NULL ||
	    t->device_type != MATE_DEVICE_CPU ||
	    memcmp(t->shape, ours->shape, sizeof(int64_t) * (size_t)t->ndim) != 0)
		return NULL;
	return t;
}

/* An argument that must be absent or None (a feature not replayed). */
static int
not_given(mate_replay_call *c, int pos, const char *name, const char *why)
{
	mate_value *v = mate_replay_arg(c, pos, name);

	if (v == NULL || mate_value_kind_of(v) == MATE_V_NONE)
		return MATE_OK;
	return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: %s is given: %s",
	    mate_replay_call_function(c), name, why);
}

/* The backend argument: "cuda" (the default) or "cute-dsl", which FlashInfer documents
 * with the same recipes; another (FlashInfer raises on it) is not replayed. */
static int
check_backend(mate_replay_call *c, int pos)
{
	const char *b;
	int rc;

	if ((rc = mate_replay_arg_str(c, pos, "backend", "cuda", &b)) != MATE_OK)
		return rc;
	if (strcmp(b, "cuda") != 0 && strcmp(b, "cute-dsl") != 0)
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: backend='%s' is not replayed",
		    mate_replay_call_function(c), b);
	return MATE_OK;
}

/* A scale layout given as SfLayout (or its value). */
static int
check_layout(mate_replay_call *c, const char *name, int64_t layout)
{
	if (layout == MATE_SF_128X4 || layout == MATE_SF_8X4 || layout == MATE_SF_LINEAR)
		return MATE_OK;
	return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %s = %lld: expected SfLayout 0 "
	    "(layout_128x4), 1 (layout_8x4) or 2 (layout_linear)", mate_replay_call_function(c),
	    name, (long long)layout);
}

/* fp4_quantize's body (NVFP4 and MXFP4): x (..., M, K), or column major (stride(-2) == 1),
 * when it quantizes x^T and returns both outputs transposed; returns (x_q uint8 (..., K/2),
 * sf uint8 (padded rows, padded K / block)). */
static int
run_fp4(mate_replay_call *c, const mate_tensor *x, mate_block_quant *p)
{
	mate_tensor xv, qv, sfv, rq, rsf;
	const mate_tensor *rec;
	int64_t qshape[MATE_MAX_DIMS], sfshape[2], K, rows;
	mate_value *q, *sf;
	mate_error err;
	int nd = x->ndim, colmajor, rc;

	if (nd < 2)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: input must be (M, K) or more "
		    "dimensions, got %d", mate_replay_call_function(c), nd);
	colmajor = x->stride[nd - 2] == 1;   /* torch's test, as FlashInfer makes it */
	xv = colmajor ? swapped(x) : *x;
	K = xv.shape[nd - 1];
	if (K <= 0 || K % p->block != 0)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: input: %lld elements a row, "
		    "expected a positive multiple of sf_vec_size = %d", mate_replay_call_function(c),
		    (long long)K, p->block);
	rows = mate_tensor_numel(&xv) / K;
	memcpy(qshape, xv.shape, sizeof(int64_t) * (size_t)nd);
	qshape[nd - 1] = K / 2;
	sfshape[0] = mate_sf_rows(p->layout, rows);
	sfshape[1] = mate_sf_cols(p->layout, K / p->block);
	p->kpad = K;
	if (colmajor) {
		int64_t t = qshape[nd - 1];

		qshape[nd - 1] = qshape[nd - 2], qshape[nd - 2] = t;
		t = sfshape[0], sfshape[0] = sfshape[1], sfshape[1] = t;
	}
	q = mate_replay_new_tensor(c, MATE_U8, nd, qshape);
	sf = mate_replay_new_tensor(c, MATE_U8, 2, sfshape);
	if (q == NULL || sf == NULL) {
		mate_value_free(q);
		mate_value_free(sf);
		return MATE_ERR_NOMEM;
	}
	qv = *mate_value_get_tensor(q);
	sfv = *mate_value_get_tensor(sf);
	p->rec_q = p->rec_sf = NULL;
	if ((rec = recorded_like(c, "result_0", &qv)) != NULL)
		rq = colmajor ? swapped(rec) : *rec, p->rec_q = &rq;
	if ((rec = recorded_like(c, "result_1", &sfv)) != NULL)
		rsf = colmajor ? swapped(rec) : *rec, p->rec_sf = &rsf;
	if (colmajor)
		qv = swapped(&qv), sfv = swapped(&sfv);
	mate_replay_set_exact(c);
	rc = mate_cpu_block_quantize(&xv, p, &qv, &sfv, &err);
	return mate_replay_kernel_done_pair(c, rc, &err, q, sf);
}

/* fp4_quantize(input, global_scale=None, sf_vec_size=16, sf_use_ue8m0=False,
 * is_sf_swizzled_layout=True, is_sf_8x4_layout=False, is_global_scale_inversed=False,
 * enable_pdl=None, backend='cuda', nvfp4_4over6=UNSET) -> (x_q, sf) */
static int
op_fp4_quantize(mate_replay_call *c, void *ctx)
{
	const mate_tensor *x;
	mate_block_quant p;
	int64_t block;
	double gs = 1;
	int ue8m0, swz, s8x4, inv, rc;

	(void)ctx;
	memset(&p, 0, sizeof(p));
	if ((rc = mate_replay_arg_tensor(c, 0, "input", 0, &x)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, 1, "global_scale", 1.0, &gs)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 2, "sf_vec_size", 16, &block)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 3, "sf_use_ue8m0", 0, &ue8m0)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 4, "is_sf_swizzled_layout", 1, &swz)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 5, "is_sf_8x4_layout", 0, &s8x4)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 6, "is_global_scale_inversed", 0, &inv)) != MATE_OK ||
	    (rc = check_backend(c, 8)) != MATE_OK ||
	    (rc = not_given(c, 9, "nvfp4_4over6", "its scale-candidate search is not replayed")) !=
	    MATE_OK)
		return rc;
	if (block != 16 && block != 32)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "fp4_quantize: sf_vec_size = %lld: "
		    "expected 16 or 32", (long long)block);
	p.block = (int)block;
	p.ue8m0 = ue8m0;
	p.layout = !swz ? MATE_SF_LINEAR : s8x4 ? MATE_SF_8X4 : MATE_SF_128X4;
	/* the kernel reads the scale as float32 and inverts it in float when asked */
	p.global_scale = inv ? 1.0f / (float)gs : (float)gs;
	return run_fp4(c, x, &p);
}

/* nvfp4_quantize(a, a_global_sf, sfLayout=SfLayout.layout_128x4, do_shuffle=False,
 * sf_vec_size=16, enable_pdl=None, backend='cuda', per_token_activation=False,
 * expanded_idx_to_permuted_idx=None, out_scale=None, nvfp4_4over6=UNSET): fp4_quantize
 * with e4m3 scales in the layout */
static int
op_nvfp4_quantize(mate_replay_call *c, void *ctx)
{
	const mate_tensor *x;
	mate_block_quant p;
	int64_t layout, block;
	double gs;
	int shuffle, per_token, rc;

	(void)ctx;
	memset(&p, 0, sizeof(p));
	if ((rc = mate_replay_arg_tensor(c, 0, "a", 0, &x)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, 1, "a_global_sf", 1.0, &gs)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 2, "sfLayout", MATE_SF_128X4, &layout)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 3, "do_shuffle", 0, &shuffle)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 4, "sf_vec_size", 16, &block)) != MATE_OK ||
	    (rc = check_backend(c, 6)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 7, "per_token_activation", 0, &per_token)) != MATE_OK ||
	    (rc = not_given(c, 8, "expanded_idx_to_permuted_idx", "a per-token call's")) != MATE_OK ||
	    (rc = not_given(c, 9, "out_scale", "a per-token call's")) != MATE_OK ||
	    (rc = not_given(c, 10, "nvfp4_4over6", "its scale-candidate search is not replayed")) !=
	    MATE_OK || (rc = check_layout(c, "sfLayout", layout)) != MATE_OK)
		return rc;
	if (mate_replay_arg(c, 1, "a_global_sf") == NULL)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "nvfp4_quantize: no a_global_sf");
	if (shuffle)
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "nvfp4_quantize: do_shuffle=True: "
		    "the rows shuffled for trtllm-gen's GEMM (shuffle_matrix_a) are not replayed");
	if (per_token)
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "nvfp4_quantize: "
		    "per_token_activation=True: the per-token scales are not replayed");
	if (block != 16 && block != 32)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "nvfp4_quantize: sf_vec_size = %lld: "
		    "expected 16 or 32", (long long)block);
	p.block = (int)block;
	p.layout = (int)layout;
	p.global_scale = (float)gs;
	return run_fp4(c, x, &p);
}

/* mxfp4_quantize(a, backend='cuda', enable_pdl=None, sfLayout=SfLayout.layout_128x4):
 * fp4_quantize with blocks of 32 and ue8m0 scales, no global scale */
static int
op_mxfp4_quantize(mate_replay_call *c, void *ctx)
{
	const mate_tensor *x;
	mate_block_quant p;
	int64_t layout;
	int rc;

	(void)ctx;
	memset(&p, 0, sizeof(p));
	if ((rc = mate_replay_arg_tensor(c, 0, "a", 0, &x)) != MATE_OK ||
	    (rc = check_backend(c, 1)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 3, "sfLayout", MATE_SF_128X4, &layout)) != MATE_OK ||
	    (rc = check_layout(c, "sfLayout", layout)) != MATE_OK)
		return rc;
	p.block = 32;
	p.ue8m0 = 1;
	p.layout = (int)layout;
	p.global_scale = 1;
	return run_fp4(c, x, &p);
}

/* mxfp8_quantize(input, is_sf_swizzled_layout=True, alignment=32, enable_pdl=None,
 * backend='cuda', sf_swizzle_layout=None) -> (x_q float8_e4m3fn (..., K padded to
 * alignment), sf uint8 (flat)) */
static int
op_mxfp8_quantize(mate_replay_call *c, void *ctx)
{
	const mate_tensor *x;
	const mate_value *rv;
	mate_block_quant p;
	int64_t align, layout, shape[MATE_MAX_DIMS], sfn, K, rows;
	mate_value *q, *sf;
	mate_error err;
	int swz, rc, nd;

	(void)ctx;
	memset(&p, 0, sizeof(p));
	if ((rc = mate_replay_arg_tensor(c, 0, "input", 0, &x)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 1, "is_sf_swizzled_layout", 1, &swz)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 2, "alignment", 32, &align)) != MATE_OK ||
	    (rc = check_backend(c, 4)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 5, "sf_swizzle_layout", swz ? MATE_SF_128X4 :
	    MATE_SF_LINEAR, &layout)) != MATE_OK ||
	    (rc = check_layout(c, "sf_swizzle_layout", layout)) != MATE_OK)
		return rc;
	rv = mate_replay_call_recorded(c, "result_0");
	if (mate_value_kind_of(rv) == MATE_V_TENSOR && mate_value_get_tensor(rv)->dtype == MATE_U8)
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "mxfp8_quantize: uint8 x_q: the "
		    "host path (a CPU input) is not replayed");
	nd = x->ndim;
	K = nd >= 1 ? x->shape[nd - 1] : 0;
	if (nd < 1 || K <= 0 || K % 32 != 0)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mxfp8_quantize: input's last dimension "
		    "must be a positive multiple of 32");
	if (align < 32 || align % 32 != 0 || align > INT32_MAX)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mxfp8_quantize: alignment = %lld: "
		    "expected a positive multiple of 32", (long long)align);
	rows = mate_tensor_numel(x) / K;
	memcpy(shape, x->shape, sizeof(int64_t) * (size_t)nd);
	shape[nd - 1] = (K + align - 1) / align * align;
	p.block = 32;
	p.fp8 = 1;
	p.layout = (int)layout;
	p.global_scale = 1;
	p.kpad = shape[nd - 1];
	if (!mate_mul_ok(mate_sf_rows(p.layout, rows), mate_sf_cols(p.layout, p.kpad / 32), &sfn))
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mxfp8_quantize: scale size overflows");
	q = mate_replay_new_tensor(c, MATE_F8_E4M3FN, nd, shape);
	sf = mate_replay_new_tensor(c, MATE_U8, 1, &sfn);
	if (q == NULL || sf == NULL) {
		mate_value_free(q);
		mate_value_free(sf);
		return MATE_ERR_NOMEM;
	}
	p.rec_q = recorded_like(c, "result_0", mate_value_get_tensor(q));
	p.rec_sf = recorded_like(c, "result_1", mate_value_get_tensor(sf));
	mate_replay_set_exact(c);
	rc = mate_cpu_block_quantize(x, &p, mate_value_get_tensor(q), mate_value_get_tensor(sf), &err);
	return mate_replay_kernel_done_pair(c, rc, &err, q, sf);
}

/* mxfp4_dequantize(a_fp4, a_sf, sfLayout=SfLayout.layout_128x4) -> float32 (M, K):
 * e2m1_and_ufp8sf_scale_to_float with ue8m0 scales in blocks of 32 */
static int
op_mxfp4_dequantize(mate_replay_call *c, void *ctx)
{
	const mate_tensor *q, *sf;
	int64_t layout, shape[2];
	mate_value *out;
	mate_error err;
	int rc;

	(void)ctx;
	if ((rc = mate_replay_arg_tensor(c, 0, "a_fp4", 0, &q)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "a_sf", 0, &sf)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 2, "sfLayout", MATE_SF_128X4, &layout)) != MATE_OK ||
	    (rc = check_layout(c, "sfLayout", layout)) != MATE_OK)
		return rc;
	if (q->ndim != 2)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mxfp4_dequantize: a_fp4 must be "
		    "(M, K/2), got %d dimensions", q->ndim);
	shape[0] = q->shape[0];
	shape[1] = q->shape[1] * 2;
	if ((out = mate_replay_new_tensor(c, MATE_F32, 2, shape)) == NULL)
		return MATE_ERR_NOMEM;
	mate_replay_set_exact(c);
	rc = mate_cpu_block_dequantize(q, sf, 32, (int)layout, 1, 1.0f, mate_value_get_tensor(out),
	    &err);
	return mate_replay_kernel_done(c, rc, &err, out);
}

/* mxfp4_dequantize_host(weight, scale, group_size=32) -> float32 (n, k): scale linear,
 * (n, k / group_size) */
static int
op_mxfp4_dequantize_host(mate_replay_call *c, void *ctx)
{
	const mate_tensor *q, *sf;
	int64_t group, shape[2];
	mate_value *out;
	mate_error err;
	int rc;

	(void)ctx;
	if ((rc = mate_replay_arg_tensor(c, 0, "weight", 0, &q)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "scale", 0, &sf)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 2, "group_size", 32, &group)) != MATE_OK)
		return rc;
	if (q->ndim != 2)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mxfp4_dequantize_host: weight must be "
		    "(n, k/2), got %d dimensions", q->ndim);
	shape[0] = q->shape[0];
	shape[1] = q->shape[1] * 2;
	if ((out = mate_replay_new_tensor(c, MATE_F32, 2, shape)) == NULL)
		return MATE_ERR_NOMEM;
	mate_replay_set_exact(c);
	rc = mate_cpu_mxfp4_dequantize_host(q, sf, group, mate_value_get_tensor(out), &err);
	return mate_replay_kernel_done(c, rc, &err, out);
}

/* rmsnorm_quant(out, input, weight, scale, eps=1e-06, enable_pdl=None) and
 * fused_add_rmsnorm_quant(out, input, residual, weight, scale, eps=1e-06,
 * enable_pdl=None): out (float8) and residual written in place, None returned */
static int
op_rmsnorm_quant(mate_replay_call *c, void *fused)
{
	const mate_tensor *out, *x, *res = NULL, *w;
	mate_error err;
	double scale, eps;
	int f = fused != NULL, rc;

	if ((rc = mate_replay_arg_tensor(c, 0, "out", 0, &out)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "input", 0, &x)) != MATE_OK ||
	    (f && (rc = mate_replay_arg_tensor(c, 2, "residual", 0, &res)) != MATE_OK) ||
	    (rc = mate_replay_arg_tensor(c, 2 + f, "weight", 0, &w)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, 3 + f, "scale", NAN, &scale)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, 4 + f, "eps", 1e-6, &eps)) != MATE_OK)
		return rc;
	if (isnan(scale) && mate_replay_arg(c, 3 + f, "scale") == NULL)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: no scale",
		    mate_replay_call_function(c));
	rc = mate_cpu_rmsnorm_quant(x, res, w, (float)scale, eps, out, &err);
	return mate_replay_kernel_done(c, rc, &err, NULL);
}

/* silu_and_mul_nvfp4_quantize(input, global_scale, sf_vec_size=16,
 * is_sf_swizzled_layout=True, is_sf_8x4_layout=False, enable_pdl=None,
 * nvfp4_4over6=UNSET) -> (x_q uint8 (M, K/2), sf): silu(input[..., :K]) * input[..., K:]
 * rounded to input's dtype (the kernel's bfloat2 / half2 product), then NVFP4 quantized;
 * the leading dimensions flattened into M */
static int
op_silu_and_mul_nvfp4_quantize(mate_replay_call *c, void *ctx)
{
	const mate_tensor *x;
	mate_tensor hv;
	mate_block_quant p;
	int64_t block, K, M, hshape[MATE_MAX_DIMS], qshape[2], sfshape[2];
	mate_value *h, *q, *sf;
	mate_error err;
	double gs;
	int swz, s8x4, nd, rc;

	(void)ctx;
	memset(&p, 0, sizeof(p));
	if ((rc = mate_replay_arg_tensor(c, 0, "input", 0, &x)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, 1, "global_scale", 1.0, &gs)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 2, "sf_vec_size", 16, &block)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 3, "is_sf_swizzled_layout", 1, &swz)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 4, "is_sf_8x4_layout", 0, &s8x4)) != MATE_OK ||
	    (rc = not_given(c, 6, "nvfp4_4over6", "its scale-candidate search is not replayed")) !=
	    MATE_OK)
		return rc;
	if (mate_replay_arg(c, 1, "global_scale") == NULL)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "silu_and_mul_nvfp4_quantize: no "
		    "global_scale");
	if (block != 16)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "silu_and_mul_nvfp4_quantize: "
		    "sf_vec_size = %lld: sf_vec_size can only be 16", (long long)block);
	nd = x->ndim;
	if (nd < 1 || x->shape[nd - 1] % 2 != 0 || x->shape[nd - 1] / 2 % 16 != 0 ||
	    x->shape[nd - 1] == 0)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "silu_and_mul_nvfp4_quantize: input's "
		    "last dimension (gate and up concatenated) must be 2 K, K a positive multiple "
		    "of 16");
	if (x->dtype != MATE_F16 && x->dtype != MATE_BF16)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "silu_and_mul_nvfp4_quantize: input "
		    "dtype %s: expected float16 or bfloat16", mate_dtype_name(x->dtype));
	K = x->shape[nd - 1] / 2;
	M = mate_tensor_numel(x) / (2 * K);
	memcpy(hshape, x->shape, sizeof(int64_t) * (size_t)nd);
	hshape[nd - 1] = K;
	p.block = 16;
	p.layout = !swz ? MATE_SF_LINEAR : s8x4 ? MATE_SF_8X4 : MATE_SF_128X4;
	p.global_scale = (float)gs;
	p.kpad = K;
	qshape[0] = M, qshape[1] = K / 2;
	sfshape[0] = mate_sf_rows(p.layout, M);
	sfshape[1] = mate_sf_cols(p.layout, K / 16);
	if ((h = mate_replay_hold(c, mate_replay_new_tensor(c, x->dtype, nd, hshape))) == NULL)
		return MATE_ERR_NOMEM;
	q = mate_replay_new_tensor(c, MATE_U8, 2, qshape);
	sf = mate_replay_new_tensor(c, MATE_U8, 2, sfshape);
	if (q == NULL || sf == NULL) {
		mate_value_free(q);
		mate_value_free(sf);
		return MATE_ERR_NOMEM;
	}
	/* the product, rounded as the kernel rounds it, as (M, K) rows */
	if ((rc = mate_kernels_cpu()->silu_and_mul(x, mate_value_get_tensor(h), &err)) == MATE_OK) {
		hv = *mate_value_get_tensor(h);
		hv.ndim = 2;
		hv.shape[0] = M, hv.shape[1] = K;
		hv.stride[0] = K, hv.stride[1] = 1;
		p.rec_q = recorded_like(c, "result_0", mate_value_get_tensor(q));
		p.rec_sf = recorded_like(c, "result_1", mate_value_get_tensor(sf));
		mate_replay_set_exact(c);
		rc = mate_cpu_block_quantize(&hv, &p, mate_value_get_tensor(q),
		    mate_value_get_tensor(sf), &err);
	}
	return mate_replay_kernel_done_pair(c, rc, &err, q, sf);
}

/* ---- block-scaled GEMMs --------------------------------------------------------- */

/* A 2-D scale tensor of the shape a layout gives rows x cols scales (its transpose where
 * transposed: FlashInfer takes B's scales as the quantizer's transposed), or 1-D of that
 * many bytes; as the bytes in the quantizer's row-major order (*view). */
static int
scale_view(mate_replay_call *c, const char *name, const mate_tensor *sf, int layout,
    int64_t rows, int64_t cols, int transposed, mate_tensor *view)
{
	int64_t r = mate_sf_rows(layout, rows), k = mate_sf_cols(layout, cols);
	int64_t want0 = transposed ? k : r, want1 = transposed ? r : k;

	if (mate_dtype_size(sf->dtype) != 1)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %s: %s must be uint8 or a float8 of "
		    "scale codes, got %s", mate_replay_call_function(c), name, name,
		    mate_dtype_name(sf->dtype));
	*view = sf->ndim == 2 && transposed ? swapped(sf) : *sf;
	if (sf->ndim == 2 && (sf->shape[0] != want0 || sf->shape[1] != want1))
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %s is (%lld, %lld), expected "
		    "(%lld, %lld): the %s scales of %lld rows of %lld blocks%s",
		    mate_replay_call_function(c), name, (long long)sf->shape[0],
		    (long long)sf->shape[1], (long long)want0, (long long)want1,
		    layout == MATE_SF_128X4 ? "128x4" : layout == MATE_SF_8X4 ? "8x4" : "linear",
		    (long long)rows, (long long)cols, transposed ? ", transposed" : "");
	if (sf->ndim != 1 && sf->ndim != 2)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %s has %d dimensions, expected 1 "
		    "or 2", mate_replay_call_function(c), name, sf->ndim);
	return MATE_OK;
}

/* out (M, N) = alpha * (deq(a) @ deq(b)^T), a (M, K), b (N, K) as operands; compared
 * within the GEMM bound of the dequantized operands (float32 products). */
static int
run_scaled_mm(mate_replay_call *c, mate_scaled_operand *a, mate_scaled_operand *b,
    const mate_tensor *alpha, mate_dtype dt, int out_pos)
{
	int64_t M = a->q->shape[0], N = b->q->shape[0], K, sa[2], sb[2], so[2];
	mate_value *da, *db, *outv;
	mate_tensor bt;
	mate_error err;
	double amax = 1;
	int rc;

	K = a->fp4 ? a->q->shape[1] * 2 : a->q->shape[1];
	sa[0] = M, sa[1] = K, sb[0] = N, sb[1] = K, so[0] = M, so[1] = N;
	if ((da = mate_replay_hold(c, mate_replay_new_tensor(c, MATE_F32, 2, sa))) == NULL ||
	    (db = mate_replay_hold(c, mate_replay_new_tensor(c, MATE_F32, 2, sb))) == NULL)
		return MATE_ERR_NOMEM;
	if ((rc = mate_cpu_dequantize_operand(a, mate_value_get_tensor(da), &err)) != MATE_OK ||
	    (rc = mate_cpu_dequantize_operand(b, mate_value_get_tensor(db), &err)) != MATE_OK)
		return mate_replay_kernel_done(c, rc, &err, NULL);
	if ((rc = mate_replay_output(c, out_pos, "out", dt, 0, 2, so, &outv)) != MATE_OK)
		return rc;
	bt = swapped(mate_value_get_tensor(db));
	rc = mate_cpu_mm_row_scaled(mate_value_get_tensor(da), &bt, alpha,
	    mate_value_get_tensor(outv), &err);
	if (alpha != NULL)     /* the largest |alpha| bounds every row's */
		amax = mate_replay_max_abs(alpha);
	mate_replay_set_reduction_gemm(c, mate_value_get_tensor(da), 0,
	    mate_value_get_tensor(db), 1, amax, 0);
	return mate_replay_kernel_done(c, rc, &err, outv);
}

/* A GEMM's output dtype: bfloat16 or float16 (FlashInfer's check). */
static int
check_out_dtype(mate_replay_call *c, mate_dtype dt)
{
	if (dt == MATE_BF16 || dt == MATE_F16)
		return MATE_OK;
	return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: Unsupported output dtype: %s. Only "
	    "bfloat16 and float16 are supported", mate_replay_call_function(c), mate_dtype_name(dt));
}

/* a (M, K') and b (K', N) are 2-D with the same K' (FlashInfer's checks, in its words). */
static int
check_operands(mate_replay_call *c, const mate_tensor *a, const mate_tensor *b)
{
	const char *fn = mate_replay_call_function(c);

	if (a->ndim != 2 || b->ndim != 2)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %s accepts 2d tensors, got %d and %d "
		    "dimensions", fn, fn, a->ndim, b->ndim);
	if (a->shape[1] != b->shape[0])
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: K dimension mismatch in %s. got "
		    "a.shape[1] = %lld, b.shape[0] = %lld", fn, fn, (long long)a->shape[1],
		    (long long)b->shape[0]);
	return MATE_OK;
}

/* The backend and 8x4 arguments of a block-scaled GEMM: trtllm's B is shuffled. */
static int
check_gemm_backend(mate_replay_call *c, int pos, int use_8x4)
{
	const char *b;
	int rc;

	if ((rc = mate_replay_arg_str(c, pos, "backend", "auto", &b)) != MATE_OK)
		return rc;
	if (strcmp(b, "trtllm") == 0 || use_8x4)
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: %s: trtllm-gen's B is the "
		    "weight shuffled by shuffle_matrix_a / shuffle_matrix_sf_a, which is not "
		    "replayed", mate_replay_call_function(c), use_8x4 ? "use_8x4_sf_layout=True "
		    "(only the trtllm backend takes it)" : "backend='trtllm'");
	return MATE_OK;
}

/* mm_fp4(a, b, a_descale, b_descale, alpha=None, out_dtype=torch.bfloat16, out=None,
 * block_size=16, use_8x4_sf_layout=False, backend='auto', use_nvfp4=True,
 * enable_pdl=True): a (M, K/2) and b (K/2, N) (the transpose of the (N, K/2) weight) of
 * e2m1 pairs, their 128x4 scales (b_descale transposed), e4m3 in blocks of 16 (NVFP4)
 * or ue8m0 in blocks of 32 (MXFP4); alpha one float or one a row of a */
static int
op_mm_fp4(mate_replay_call *c, void *ctx)
{
	const mate_tensor *a, *b, *as, *bs, *alpha;
	mate_scaled_operand oa, ob;
	mate_tensor bq, asv, bsv;
	int64_t block, K;
	mate_dtype dt;
	int use_8x4, nv, rc;

	(void)ctx;
	if ((rc = mate_replay_arg_tensor(c, 0, "a", 0, &a)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "b", 0, &b)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 2, "a_descale", 0, &as)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 3, "b_descale", 0, &bs)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 4, "alpha", 1, &alpha)) != MATE_OK ||
	    (rc = mate_replay_arg_dtype(c, 5, "out_dtype", MATE_BF16, &dt)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 7, "block_size", 16, &block)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 8, "use_8x4_sf_layout", 0, &use_8x4)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 10, "use_nvfp4", 1, &nv)) != MATE_OK ||
	    (rc = check_gemm_backend(c, 9, use_8x4)) != MATE_OK ||
	    (rc = check_out_dtype(c, dt)) != MATE_OK)
		return rc;
	if ((rc = check_operands(c, a, b)) != MATE_OK)
		return rc;
	if ((a->dtype != MATE_U8 && a->dtype != MATE_F4_E2M1FN_X2) ||
	    (b->dtype != MATE_U8 && b->dtype != MATE_F4_E2M1FN_X2))
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mm_fp4: a and b must have "
		    "float4_e2m1fn_x2 packed into uint8. Got %s and %s.", mate_dtype_name(a->dtype),
		    mate_dtype_name(b->dtype));
	if ((as->dtype != MATE_U8 && as->dtype != MATE_F8_E4M3FN) ||
	    (bs->dtype != MATE_U8 && bs->dtype != MATE_F8_E4M3FN))
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mm_fp4: a_descale and b_descale must "
		    "have float8_e4m3fnx2 packed into uint8. Got %s and %s.",
		    mate_dtype_name(as->dtype), mate_dtype_name(bs->dtype));
	if (alpha != NULL && alpha->dtype != MATE_F32)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mm_fp4: alpha must be a float tensor, "
		    "got %s", mate_dtype_name(alpha->dtype));
	if (alpha != NULL && mate_tensor_numel(alpha) != 1 && mate_tensor_numel(alpha) != a->shape[0])
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mm_fp4: alpha must be a scalar, or one "
		    "scale per row of a for the per-token path. Got %lld for m=%lld.",
		    (long long)mate_tensor_numel(alpha), (long long)a->shape[0]);
	if (nv && block != 16)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mm_fp4: nvfp4 only supports "
		    "block_size = 16 (got %lld).", (long long)block);
	if (!nv && block != 32)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mm_fp4: mxfp4 only supports "
		    "block_size = 32 (got %lld).", (long long)block);
	K = a->shape[1] * 2;
	if (K % block != 0)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mm_fp4: K = %lld values is not a "
		    "multiple of block_size = %lld", (long long)K, (long long)block);
	bq = swapped(b);
	if ((rc = scale_view(c, "a_descale", as, MATE_SF_128X4, a->shape[0], K / block, 0,
	    &asv)) != MATE_OK ||
	    (rc = scale_view(c, "b_descale", bs, MATE_SF_128X4, bq.shape[0], K / block, 1,
	    &bsv)) != MATE_OK)
		return rc;
	oa = (mate_scaled_operand){ a, &asv, 1, !nv, (int)block, MATE_SF_128X4 };
	ob = (mate_scaled_operand){ &bq, &bsv, 1, !nv, (int)block, MATE_SF_128X4 };
	return run_scaled_mm(c, &oa, &ob, alpha, dt, 6);
}

/* mm_mxfp8(a, b, a_descale, b_descale, out=None, out_dtype=torch.bfloat16,
 * use_8x4_sf_layout=False, backend='auto'): a (M, K) and b (K, N) (the transpose of the
 * (N, K) weight) float8_e4m3fn, ue8m0 scales of blocks of 32: 1-D in the 128x4 layout, or
 * 2-D linear, a's (M, K/32) and b's (K/32, N) */
static int
op_mm_mxfp8(mate_replay_call *c, void *ctx)
{
	const mate_tensor *a, *b, *as, *bs;
	mate_scaled_operand oa, ob;
	mate_tensor bq, asv, bsv;
	mate_dtype dt;
	int use_8x4, la, lb, rc;

	(void)ctx;
	if ((rc = mate_replay_arg_tensor(c, 0, "a", 0, &a)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "b", 0, &b)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 2, "a_descale", 0, &as)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 3, "b_descale", 0, &bs)) != MATE_OK ||
	    (rc = mate_replay_arg_dtype(c, 5, "out_dtype", MATE_BF16, &dt)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 6, "use_8x4_sf_layout", 0, &use_8x4)) != MATE_OK ||
	    (rc = check_gemm_backend(c, 7, use_8x4)) != MATE_OK ||
	    (rc = check_out_dtype(c, dt)) != MATE_OK)
		return rc;
	if ((rc = check_operands(c, a, b)) != MATE_OK)
		return rc;
	if (b->shape[1] < 128 || a->shape[1] < 128)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mm_mxfp8: MXFP8 requires n >= 128 and "
		    "k >= 128 for CUTLASS MXFP8. got m=%lld, n=%lld, k=%lld.", (long long)a->shape[0],
		    (long long)b->shape[1], (long long)a->shape[1]);
	if (a->dtype != MATE_F8_E4M3FN || b->dtype != MATE_F8_E4M3FN)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mm_mxfp8: a and b must be "
		    "float8_e4m3fn tensors, got %s and %s", mate_dtype_name(a->dtype),
		    mate_dtype_name(b->dtype));
	if (as->dtype != MATE_U8 || bs->dtype != MATE_U8)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mm_mxfp8: a_descale and b_descale must "
		    "be uint8 tensors, got %s and %s", mate_dtype_name(as->dtype),
		    mate_dtype_name(bs->dtype));
	if (a->shape[1] % 32 != 0)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mm_mxfp8: K = %lld is not a multiple "
		    "of the block of 32", (long long)a->shape[1]);
	/* 2-D scales are linear; FlashInfer sizes a 1-D b_descale in a_descale's layout (a
	 * 2-D one makes it linear; 8x4, trtllm's, is refused above) */
	la = as->ndim == 2 ? MATE_SF_LINEAR : MATE_SF_128X4;
	lb = bs->ndim == 2 ? MATE_SF_LINEAR : la;
	bq = swapped(b);
	if ((rc = scale_view(c, "a_descale", as, la, a->shape[0], a->shape[1] / 32, 0, &asv)) !=
	    MATE_OK ||
	    (rc = scale_view(c, "b_descale", bs, lb, bq.shape[0], a->shape[1] / 32, 1, &bsv)) !=
	    MATE_OK)
		return rc;
	oa = (mate_scaled_operand){ a, &asv, 0, 1, 32, la };
	ob = (mate_scaled_operand){ &bq, &bsv, 0, 1, 32, lb };
	return run_scaled_mm(c, &oa, &ob, NULL, dt, 4);
}

int
mate_replay_register_quant(mate_replay *r, mate_error *err)
{
	static const struct mate_replay_op_def ops[] = {
		{ "fp4_quantize", "(input, global_scale=None, sf_vec_size=16, sf_use_ue8m0=False, "
		    "is_sf_swizzled_layout=True, is_sf_8x4_layout=False, "
		    "is_global_scale_inversed=False, enable_pdl=None, backend='cuda', "
		    "nvfp4_4over6=" UNSET ")", op_fp4_quantize, 0, NULL },
		{ "nvfp4_quantize", "(a, a_global_sf, sfLayout=SfLayout.layout_128x4, "
		    "do_shuffle=False, sf_vec_size=16, enable_pdl=None, backend='cuda', "
		    "per_token_activation=False, expanded_idx_to_permuted_idx=None, out_scale=None, "
		    "nvfp4_4over6=" UNSET ")", op_nvfp4_quantize, 0, NULL },
		{ "mxfp4_quantize", "(a, backend='cuda', enable_pdl=None, "
		    "sfLayout=SfLayout.layout_128x4)", op_mxfp4_quantize, 0, NULL },
		{ "mxfp8_quantize", "(input, is_sf_swizzled_layout=True, alignment=32, "
		    "enable_pdl=None, backend='cuda', sf_swizzle_layout=None)", op_mxfp8_quantize, 0,
		    NULL },
		{ "mxfp4_dequantize", "(a_fp4, a_sf, sfLayout=SfLayout.layout_128x4)",
		    op_mxfp4_dequantize, 0, NULL },
		{ "mxfp4_dequantize_host", "(weight, scale, group_size=32)", op_mxfp4_dequantize_host,
		    0, NULL },
		{ "rmsnorm_quant", "(out, input, weight, scale, eps=1e-06, enable_pdl=None)",
		    op_rmsnorm_quant, 0, "row:out.0 input.0" },
		{ "fused_add_rmsnorm_quant", "(out, input, residual, weight, scale, eps=1e-06, "
		    "enable_pdl=None)", op_rmsnorm_quant, 1, "row:out.0 input.0 residual.0" },
		{ "silu_and_mul_nvfp4_quantize", "(input, global_scale, sf_vec_size=16, "
		    "is_sf_swizzled_layout=True, is_sf_8x4_layout=False, enable_pdl=None, "
		    "nvfp4_4over6=" UNSET ")", op_silu_and_mul_nvfp4_quantize, 0, NULL },
		{ "mm_fp4", "(a, b, a_descale, b_descale, alpha=None, out_dtype=torch.bfloat16, "
		    "out=None, block_size=16, use_8x4_sf_layout=False, backend='auto', "
		    "use_nvfp4=True, enable_pdl=True)", op_mm_fp4, 0, NULL },
		{ "mm_mxfp8", "(a, b, a_descale, b_descale, out=None, out_dtype=torch.bfloat16, "
		    "use_8x4_sf_layout=False, backend='auto')", op_mm_mxfp8, 0, NULL },
	};
	return mate_replay_register_ops(r, ops, sizeof(ops) / sizeof(ops[0]), err);
}
