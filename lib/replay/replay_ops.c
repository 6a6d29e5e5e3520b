/* replay_ops.c: mate's built-in replay handlers, one per operation of spec/ops.md (and the recorded BLAS calls), on the kernels of kernels.h. */
#include "mate_private.h"
#include "kernels.h"
#include "replay_blas.h"
#include "replay_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Registers every built-in handler on r (module: any). */
int mate_replay_register_builtins(mate_replay *r, mate_error *err);
int mate_replay_register_attn(mate_replay *r, mate_error *err) MATE_HIDDEN;
int mate_replay_register_trtllm(mate_replay *r, mate_error *err) MATE_HIDDEN;
int mate_replay_register_rope(mate_replay *r, mate_error *err);
int mate_replay_register_sampling(mate_replay *r, mate_error *err);
int mate_replay_register_gemm_bits(mate_replay *r, mate_error *err);
int mate_replay_register_norm_silu(mate_replay *r, mate_error *err);
int mate_replay_register_quant(mate_replay *r, mate_error *err);

/* The `out=` argument (pos, name) when given, to be written and returned (of exactly the
 * result's shape and dtype: mate_replay_output()); else a new tensor of dt and shape. */
static int
output(mate_replay_call *c, int pos, const char *name, mate_dtype dt, int ndim,
    const int64_t *shape, mate_value **outv, const mate_tensor **out)
{
	int rc = mate_replay_output(c, pos, name, dt, 0, ndim, shape, outv);

	*out = rc == MATE_OK ? mate_value_get_tensor(*outv) : NULL;
	return rc;
}

/* ---- normalisation and activations ------------------------------------------ */

/* A norm's outputs: each element is its input over the root of a mean of the row's
 * squares, a D-term sum: within 2 D u of itself, relatively. */
static void
norm_bound(mate_replay_call *c, const mate_tensor *x)
{
	if (x->ndim >= 1)
		mate_replay_set_reduction_sum(c, x->shape[x->ndim - 1], 0, 1,
		    x->dtype == MATE_F64 ? MATE_F64 : MATE_F32);
}

/* rmsnorm / gemma_rmsnorm(input, weight, eps=1e-6, out=None, enable_pdl=None) */
static int
op_rmsnorm(mate_replay_call *c, void *gemma)
{
	const mate_kernels *k = mate_replay_kernels(c);
	const mate_tensor *x, *w, *out;
	mate_value *outv;
	mate_error err;
	double eps;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, 0, "input", 0, &x)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "weight", 0, &w)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, 2, "eps", 1e-6, &eps)) != MATE_OK ||
	    (rc = output(c, 3, "out", x->dtype, x->ndim, x->shape, &outv, &out)) != MATE_OK)
		return rc;
	norm_bound(c, x);
	rc = (gemma ? k->gemma_rmsnorm : k->rmsnorm)(x, w, eps, out, &err);
	return mate_replay_kernel_done(c, rc, &err, outv);
}

/* fused_add_rmsnorm / gemma_fused_add_rmsnorm(input, residual, weight, eps=1e-6,
 * enable_pdl=None): in place, returns None */
static int
op_fused_add_rmsnorm(mate_replay_call *c, void *gemma)
{
	const mate_kernels *k = mate_replay_kernels(c);
	const mate_tensor *x, *res, *w;
	mate_error err;
	double eps;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, 0, "input", 0, &x)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "residual", 0, &res)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 2, "weight", 0, &w)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, 3, "eps", 1e-6, &eps)) != MATE_OK)
		return rc;
	norm_bound(c, x);
	rc = (gemma ? k->gemma_fused_add_rmsnorm : k->fused_add_rmsnorm)(x, res, w, eps, &err);
	return mate_replay_kernel_done(c, rc, &err, NULL);
}

enum { ACT_SILU, ACT_GELU, ACT_GELU_TANH };

/* silu_and_mul / gelu_and_mul / gelu_tanh_and_mul(input, out=None, enable_pdl=None) */
static int
op_act_and_mul(mate_replay_call *c, void *which)
{
	const mate_kernels *k = mate_replay_kernels(c);
	const mate_tensor *x, *out;
	int64_t shape[MATE_MAX_DIMS];
	mate_value *outv;
	mate_error err;
	int rc, act = (int)(intptr_t)which;

	if ((rc = mate_replay_arg_tensor(c, 0, "input", 0, &x)) != MATE_OK)
		return rc;
	if (x->ndim < 1 || x->shape[x->ndim - 1] % 2 != 0)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: the last dimension must be even",
		    mate_replay_call_function(c));
	memcpy(shape, x->shape, sizeof(shape));
	shape[x->ndim - 1] /= 2;
	if ((rc = output(c, 1, "out", x->dtype, x->ndim, shape, &outv, &out)) != MATE_OK)
		return rc;
	rc = (act == ACT_SILU ? k->silu_and_mul : act == ACT_GELU ? k->gelu_and_mul :
	    k->gelu_tanh_and_mul)(x, out, &err);
	return mate_replay_kernel_done(c, rc, &err, outv);
}

enum { LIBRARY_FN, TORCH_METHOD };

/* softmax(logits, temperature=None, enable_pdl=None), FlashInfer's; with
 * ctx TORCH_METHOD torch's Tensor.softmax(self, dim, dtype=None) (and
 * torch.softmax(input, dim, dtype=None)), on the last dim only */
static int
op_softmax(mate_replay_call *c, void *ctx)
{
	const mate_kernels *k = mate_replay_kernels(c);
	const mate_tensor *x, *tt = NULL, *out;
	const mate_value *temp;
	int torch_method = (intptr_t)ctx == TORCH_METHOD;
	mate_value *outv;
	mate_dtype dt = MATE_F32;
	mate_error err;
	double t = 1.0;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, 0, torch_method ? "input" : "logits", 0, &x)) != MATE_OK)
		return rc;
	if (torch_method) {  /* torch's x.softmax(dim): the last dim only */
		int64_t dim;

		if ((rc = mate_replay_arg_int(c, 1, "dim", -1, &dim)) != MATE_OK ||
		    (rc = mate_replay_arg_dtype(c, 2, "dtype", x->dtype, &dt)) != MATE_OK)
			return rc;
		if (dim != -1 && dim != x->ndim - 1)
			return mate_replay_fail(c, MATE_ERR_UNSUPPORTED,
			    "Tensor.softmax: only the last dimension is replayed (dim %lld)", (long long)dim);
	} else if (mate_value_kind_of(temp = mate_replay_arg(c, 1, "temperature")) == MATE_V_TENSOR &&
	    mate_tensor_numel(mate_value_get_tensor(temp)) != 1) {
		tt = mate_value_get_tensor(temp);
	} else if ((rc = mate_replay_arg_float(c, 1, "temperature", 1.0, &t)) != MATE_OK) {
		return rc;
	}
	if ((rc = output(c, -1, NULL, dt, x->ndim, x->shape, &outv, &out)) != MATE_OK)
		return rc;
	rc = k->softmax(x, t, tt, out, &err);
	return mate_replay_kernel_done(c, rc, &err, outv);
}

/* ---- matrix products -------------------------------------------------------- */

/* mm(a, b, out_dtype=None, out=None) and bmm(a, b, out_dtype=None, out=None);
 * torch's Tensor.mm(self, mat2) and Tensor.bmm(self, mat2) (torch.mm(input,
 * mat2, *, out=None)) are the same on their first two arguments */
static int
op_mm(mate_replay_call *c, void *batched)
{
	const mate_kernels *k = mate_replay_kernels(c);
	const mate_tensor *a, *b, *out;
	int64_t shape[3];
	int nd = batched ? 3 : 2;
	mate_value *outv;
	mate_dtype dt;
	mate_error err;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, 0, "a", 0, &a)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "b", 0, &b)) != MATE_OK ||
	    (rc = mate_replay_arg_dtype(c, 2, "out_dtype", a->dtype, &dt)) != MATE_OK)
		return rc;
	if ((rc = mate_replay_mm_shape(c, a, b, nd, shape)) != MATE_OK)
		return rc;
	if ((rc = output(c, -1, "out", dt, nd, shape, &outv, &out)) != MATE_OK)
		return rc;
	rc = (batched ? k->bmm : k->mm)(a, b, out, &err);
	mate_replay_set_reduction(c, a, b);
	return mate_replay_kernel_done(c, rc, &err, outv);
}

/* bmm_fp8(A, B, A_scale, B_scale, dtype, out=None, backend='cublas') */
static int
op_bmm_fp8(mate_replay_call *c, void *ctx)
{
	const mate_kernels *k = mate_replay_kernels(c);
	const mate_tensor *A, *B, *as, *bs, *out;
	mate_value *outv;
	mate_dtype dt;
	mate_error err;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, 0, "A", 0, &A)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "B", 0, &B)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 2, "A_scale", 1, &as)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 3, "B_scale", 1, &bs)) != MATE_OK ||
	    (rc = mate_replay_arg_dtype(c, 4, "dtype", MATE_BF16, &dt)) != MATE_OK)
		return rc;
	if (A->ndim != 3 || B->ndim != 3)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "bmm_fp8: operands must be 3-D");
	if ((rc = output(c, 5, "out", dt, 3, (int64_t[]){ A->shape[0], A->shape[1], B->shape[2] },
	    &outv, &out)) != MATE_OK)
		return rc;
	rc = k->bmm_fp8(A, B, as, bs, out, &err);
	return mate_replay_kernel_done(c, rc, &err, outv);
}

/* mm_fp8(a, b, alpha=None, out_dtype=torch.bfloat16, out=None, backend='trtllm_low_latency'):
 * alpha * (a @ b^T) with FlashInfer's unprocessed weight b (n, k); the
 * 3-D weight prepare_low_latency_gemm_weights() shuffles for
 * trtllm_low_latency is not replayed */
static int
op_mm_fp8(mate_replay_call *c, void *ctx)
{
	const mate_kernels *k = mate_replay_kernels(c);
	const mate_tensor *a, *b, *alpha, *out;
	mate_tensor bt;
	mate_value *outv;
	mate_dtype dt;
	mate_error err;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, 0, "a", 0, &a)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "b", 0, &b)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 2, "alpha", 1, &alpha)) != MATE_OK ||
	    (rc = mate_replay_arg_dtype(c, 3, "out_dtype", MATE_BF16, &dt)) != MATE_OK)
		return rc;
	if (b->ndim == 3)
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "mm_fp8: b (k/128, n, 128) is a weight "
		    "shuffled by prepare_low_latency_gemm_weights(); only the unprocessed (n, k) "
		    "weight is replayed");
	if (a->ndim != 2 || b->ndim != 2)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "mm_fp8: operands must be 2-D");
	bt = *b;                /* (k, n): the transposed view */
	bt.shape[0] = b->shape[1];
	bt.shape[1] = b->shape[0];
	bt.stride[0] = b->stride[1];
	bt.stride[1] = b->stride[0];
	if ((rc = output(c, 4, "out", dt, 2, (int64_t[]){ a->shape[0], b->shape[0] },
	    &outv, &out)) != MATE_OK)
		return rc;
	rc = k->mm_fp8(a, &bt, alpha, out, &err);
	return mate_replay_kernel_done(c, rc, &err, outv);
}

/* ---- FlashInfer's SegmentGEMMWrapper (stateful, by self_id) ---------------- */

/* What SegmentGEMMWrapper.__init__ gave the object. */
struct segment_gemm_state {
	char backend[32];
};

/* SegmentGEMMWrapper.__init__(self, float_workspace_buffer, backend='auto'):
 * the workspace is scratch for FlashInfer's kernels; nothing to compare */
static int
op_segment_gemm_init(mate_replay_call *c, void *ctx)
{
	struct segment_gemm_state *st;
	const mate_tensor *ws;
	const char *backend;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, 1, "float_workspace_buffer", 0, &ws)) != MATE_OK ||
	    (rc = mate_replay_arg_str(c, 2, "backend", "auto", &backend)) != MATE_OK)
		return rc;
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", mate_replay_call_function(c));
	snprintf(st->backend, sizeof(st->backend), "%s", backend);
	if ((rc = mate_replay_call_set_self(c, st, free)) != MATE_OK)
		return rc;
	return mate_replay_return(c, mate_value_none());
}

/* SegmentGEMMWrapper.run(self, x, weights, batch_size, weight_column_major,
 * out=None, seg_lens=None, seg_indptr=None, weight_indices=None) on an
 * object made by __init__; rows outside every segment are zero */
static int
op_segment_gemm_run(mate_replay_call *c, void *ctx)
{
	const mate_kernels *k = mate_replay_kernels(c);
	mate_segment_gemm_args a;
	const mate_tensor *out;
	mate_value *outv;
	mate_error err;
	int64_t d_out;
	int rc;

	if (mate_replay_call_object(c) == NULL)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: the call has no self_id",
		    mate_replay_call_function(c));
	if (mate_replay_call_self(c) == NULL)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: object %s (process_id:self_id): no "
		    "SegmentGEMMWrapper.__init__ of it was replayed before this call",
		    mate_replay_call_function(c), mate_replay_call_object(c));
	memset(&a, 0, sizeof(a));
	if ((rc = mate_replay_arg_tensor(c, 1, "x", 0, &a.x)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 2, "weights", 0, &a.weights)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 3, "batch_size", 0, &a.batch_size)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 4, "weight_column_major", 0, &a.column_major)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 6, "seg_lens", 1, &a.seg_lens)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 7, "seg_indptr", 1, &a.seg_indptr)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 8, "weight_indices", 1, &a.weight_indices)) != MATE_OK)
		return rc;
	if (a.x->ndim != 2 || a.weights->ndim != 3)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: x must be 2-D and weights 3-D",
		    mate_replay_call_function(c));
	d_out = a.weights->shape[a.column_major ? 1 : 2];
	if ((rc = output(c, 5, "out", a.x->dtype, 2, (int64_t[]){ a.x->shape[0], d_out },
	    &outv, &out)) != MATE_OK)
		return rc;
	a.out = out;
	/* each output element: a d_in-term dot product of an x row and a weight column */
	mate_replay_set_reduction_sum(c, a.weights->shape[a.column_major ? 2 : 1],
	    mate_replay_max_row_l1(a.x) * mate_replay_max_abs(a.weights), 0,
	    a.x->dtype == MATE_F64 ? MATE_F64 : MATE_F32);
	rc = mate_segment_gemm(k, &a, &err);
	return mate_replay_kernel_done(c, rc, &err, outv);
}

/* ---- attention ------------------------------------------------------------- */

/* An enum-like argument given as a name ("NHD", "PosEncodingMode.NONE") or
 * as its integer value; *out is -1 when the name is unknown. */
static int
arg_mode(mate_replay_call *c, int pos, const char *name, int def,
    int (*from_name)(const char *), int *out)
{
	const mate_value *v = mate_replay_arg(c, pos, name);
	const char *s;
	int64_t i;
	int rc;

	*out = def;
	if (mate_value_kind_of(v) == MATE_V_INT || (mate_value_kind_of(v) == MATE_V_ENUM &&
	    from_name(mate_value_enum_name(v)) < 0)) {
		if ((rc = mate_replay_arg_int(c, pos, name, def, &i)) != MATE_OK)
			return rc;
		*out = (int)i;
		return MATE_OK;
	}
	if ((rc = mate_replay_arg_str(c, pos, name, NULL, &s)) != MATE_OK)
		return rc;
	if (s != NULL && (*out = from_name(s)) < 0)
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: %s=%s is not replayed",
		    mate_replay_call_function(c), name, s);
	return MATE_OK;
}

/* Argument positions of the two attention APIs. */
struct attn_pos {
	int layout, pos_enc, q_scale, k_scale, v_scale, window, cap, sm, rope_scale, rope_theta;
	int ret_lse, o_dtype, mask, packed, causal;
	const char *qs, *ks, *vs;
};

static const struct attn_pos decode_pos = { 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, -1, -1, -1, -1,
	"q_scale", "k_scale", "v_scale" };
static const struct attn_pos prefill_pos = { 10, 11, 3, 4, 5, 14, 15, 13, 16, 17, 19, 6, 7, 8, 9,
	"scale_q", "scale_k", "scale_v" };

static int
attn_params(mate_replay_call *c, const struct attn_pos *ap, mate_attn_params *p, int *ret_lse)
{
	int rc;

	mate_attn_params_init(p);
	if ((rc = arg_mode(c, ap->layout, "kv_layout", MATE_KV_NHD, mate_kv_layout_from_name,
	    &p->kv_layout)) != MATE_OK ||
	    (rc = arg_mode(c, ap->pos_enc, "pos_encoding_mode", MATE_POS_NONE,
	    mate_pos_encoding_from_name, &p->pos_encoding_mode)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, ap->q_scale, ap->qs, 1.0, &p->q_scale)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, ap->k_scale, ap->ks, 1.0, &p->k_scale)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, ap->v_scale, ap->vs, 1.0, &p->v_scale)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, ap->window, "window_left", -1, &p->window_left)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, ap->cap, "logits_soft_cap", 0, &p->logits_soft_cap)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, ap->sm, "sm_scale", 0, &p->sm_scale)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, ap->rope_scale, "rope_scale", 0, &p->rope_scale)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, ap->rope_theta, "rope_theta", 0, &p->rope_theta)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, ap->ret_lse, "return_lse", 0, ret_lse)) != MATE_OK)
		return rc;
	if (ap->causal >= 0 &&
	    ((rc = mate_replay_arg_bool(c, ap->causal, "causal", 0, &p->causal)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, ap->mask, "custom_mask", 1, &p->custom_mask)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, ap->packed, "packed_custom_mask", 1,
	    &p->packed_custom_mask)) != MATE_OK))
		return rc;
	return MATE_OK;
}

/* single_decode_with_kv_cache and single_prefill_with_kv_cache, signatures
 * in SIG_DECODE and SIG_PREFILL below */
static int
op_attention(mate_replay_call *c, void *prefill)
{
	const mate_kernels *k = mate_replay_kernels(c);
	const struct attn_pos *ap = prefill ? &prefill_pos : &decode_pos;
	const mate_tensor *q, *kk, *v, *lse = NULL;
	mate_attn_params p;
	mate_value *outv, *lsev = NULL;
	int64_t shape[3];
	mate_dtype dt;
	mate_error err;
	int rc, ret_lse, nd = prefill ? 3 : 2;

	if ((rc = mate_replay_arg_tensor(c, 0, "q", 0, &q)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "k", 0, &kk)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 2, "v", 0, &v)) != MATE_OK ||
	    (rc = attn_params(c, ap, &p, &ret_lse)) != MATE_OK ||
	    (rc = mate_replay_arg_dtype(c, ap->o_dtype, prefill ? "o_dtype" : NULL, q->dtype, &dt)) != MATE_OK)
		return rc;
	if (q->ndim != nd || v->ndim != 3)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: q must be %d-D and v 3-D",
		    mate_replay_call_function(c), nd);
	memcpy(shape, q->shape, sizeof(int64_t) * (size_t)nd);
	shape[nd - 1] = v->shape[2];
	if ((outv = mate_replay_new_tensor(c, dt, nd, shape)) == NULL)
		return MATE_ERR_NOMEM;
	if (ret_lse && (lsev = mate_replay_new_tensor(c, MATE_F32, nd - 1, q->shape)) == NULL) {
		mate_value_free(outv);
		return MATE_ERR_NOMEM;
	}
	if (lsev != NULL)
		lse = mate_value_get_tensor(lsev);
	if (kk->ndim == 3)
		mate_replay_attention_bound(c, kk->shape[p.kv_layout == MATE_KV_HND ? 1 : 0], q, kk,
		    NULL, NULL, v, &p);
	rc = (prefill ? k->single_prefill : k->single_decode)(q, kk, v, &p,
	    mate_value_get_tensor(outv), lse, &err);
	return mate_replay_kernel_done_pair(c, rc, &err, outv, lsev);
}

/* The signatures the handlers implement: FlashInfer's (spec/ops.md), with
 * the parameters that do not change the math (enable_pdl, backend,
 * use_tensor_cores, use_fp16_qk_reduction); torch's for its methods. */
#define SIG_RMSNORM "(input, weight, eps=1e-06, out=None, enable_pdl=None)"
#define SIG_FUSED_ADD "(input, residual, weight, eps=1e-06, enable_pdl=None)"
#define SIG_ACT "(input, out=None, enable_pdl=None)"
#define SIG_SEGMENT_RUN "(self, x, weights, batch_size, weight_column_major, out=None, " \
	"seg_lens=None, seg_indptr=None, weight_indices=None)"
/* By query head, with its KV head (GQA: query head h reads KV head h / (Hq / Hkv)); the
 * lse (result_1) is (heads) or (tokens, heads); an HND cache is not cut. */
#define SLICE_HEADS "head:q.-2 k.-2/ v.-2/ result_1.-1 result.-2 ?kv_layout=NHD"
#define SIG_DECODE "(q, k, v, kv_layout='NHD', pos_encoding_mode='NONE', " \
	"use_tensor_cores=False, q_scale=None, k_scale=None, v_scale=None, window_left=-1, " \
	"logits_soft_cap=None, sm_scale=None, rope_scale=None, rope_theta=None, return_lse=False)"
#define SIG_PREFILL "(q, k, v, scale_q=None, scale_k=None, scale_v=None, o_dtype=None, " \
	"custom_mask=None, packed_custom_mask=None, causal=False, kv_layout='NHD', " \
	"pos_encoding_mode='NONE', use_fp16_qk_reduction=False, sm_scale=None, window_left=-1, " \
	"logits_soft_cap=None, rope_scale=None, rope_theta=None, backend='auto', return_lse=False)"

/* How mate-replay --shrink cuts a fused add's rows (both written in place). */
#define SLICE_FUSED_ADD "row:input.0 residual.0"

int
mate_replay_register_builtins(mate_replay *r, mate_error *err)
{
	static const struct mate_replay_op_def ops[] = {
		{ "rmsnorm", SIG_RMSNORM, op_rmsnorm, 0, MATE_SLICE_ROWS },
		{ "gemma_rmsnorm", SIG_RMSNORM, op_rmsnorm, 1, MATE_SLICE_ROWS },
		{ "fused_add_rmsnorm", SIG_FUSED_ADD, op_fused_add_rmsnorm, 0, SLICE_FUSED_ADD },
		{ "gemma_fused_add_rmsnorm", SIG_FUSED_ADD, op_fused_add_rmsnorm, 1, SLICE_FUSED_ADD },
		{ "silu_and_mul", SIG_ACT, op_act_and_mul, ACT_SILU, MATE_SLICE_ROWS },
		{ "gelu_and_mul", SIG_ACT, op_act_and_mul, ACT_GELU, MATE_SLICE_ROWS },
		{ "gelu_tanh_and_mul", SIG_ACT, op_act_and_mul, ACT_GELU_TANH, MATE_SLICE_ROWS },
		{ "softmax", "(logits, temperature=None, enable_pdl=None)", op_softmax, LIBRARY_FN,
		    "row:logits.0 temperature.0 result.0" },
		{ "Tensor.softmax", "(input, dim, dtype=None)", op_softmax, TORCH_METHOD, NULL },
		{ "Tensor.softmax", "(self, dim, dtype=None)", op_softmax, TORCH_METHOD, NULL },
		{ "mm", "(a, b, out_dtype=None, out=None)", op_mm, 0, MATE_SLICE_MM("a", "b") },
		{ "bmm", "(a, b, out_dtype=None, out=None)", op_mm, 1, MATE_SLICE_BMM("a", "b") },
		{ "Tensor.mm", "(input, mat2, *, out=None)", op_mm, 0, MATE_SLICE_MM("input", "mat2") },
		{ "Tensor.mm", "(self, mat2)", op_mm, 0, MATE_SLICE_MM("self", "mat2") },
		{ "Tensor.bmm", "(input, mat2, *, out=None)", op_mm, 1, MATE_SLICE_BMM("input", "mat2") },
		{ "Tensor.bmm", "(self, mat2)", op_mm, 1, MATE_SLICE_BMM("self", "mat2") },
		{ "bmm_fp8", "(A, B, A_scale, B_scale, dtype, out=None, backend='cublas')", op_bmm_fp8, 0,
		    MATE_SLICE_BMM("A", "B") },
		{ "mm_fp8", "(a, b, alpha=None, out_dtype=torch.bfloat16, out=None, "
		    "backend='trtllm_low_latency')", op_mm_fp8, 0,
		    "row:a.0 out.0 result.0;column:b.0 out.1 result.1;=K:a.1" },  /* b is (n, k) */
		{ "single_decode_with_kv_cache", SIG_DECODE, op_attention, 0, SLICE_HEADS },
		{ "single_prefill_with_kv_cache", SIG_PREFILL, op_attention, 1, SLICE_HEADS },
		{ "SegmentGEMMWrapper.__init__", "(self, float_workspace_buffer, backend='auto')",
		    op_segment_gemm_init, 0, NULL },
		{ "SegmentGEMMWrapper.run", SIG_SEGMENT_RUN, op_segment_gemm_run, 0, NULL },
	};
	int rc;

	if ((rc = mate_replay_register_ops(r, ops, sizeof(ops) / sizeof(ops[0]), err)) != MATE_OK)
		return rc;
	/* FlashInfer's batch attention and KV cache (replay_ops_attn.c) */
	if ((rc = mate_replay_register_attn(r, err)) != MATE_OK)
		return rc;
	/* FlashInfer's trtllm-gen and XQA paged attention (replay_ops_trtllm.c) */
	if ((rc = mate_replay_register_trtllm(r, err)) != MATE_OK)
		return rc;
	if ((rc = mate_replay_register_rope(r, err)) != MATE_OK)
		return rc;
	if ((rc = mate_replay_register_sampling(r, err)) != MATE_OK)
		return rc;
	if ((rc = mate_replay_register_gemm_bits(r, err)) != MATE_OK)
		return rc;
	if ((rc = mate_replay_register_norm_silu(r, err)) != MATE_OK)
		return rc;
	/* FlashInfer's block quantization (replay_ops_quant.c) */
	if ((rc = mate_replay_register_quant(r, err)) != MATE_OK)
		return rc;
	/* the BLAS and cuBLAS calls mate-record records (replay_blas.c) */
	return mate_replay_register_blas(r, err);
}
