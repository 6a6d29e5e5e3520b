/* replay_ops_norm.c: replay handlers of FlashInfer's fused_rmsnorm_silu, on the CPU rmsnorm kernel and a SiLU epilogue, and of its layernorm and fused_qk_rmsnorm_rope. */
#include "mate_private.h"
#include "kernels_fi.h"
#include "replay_private.h"

#include <string.h>

/* Registers the handlers on r (called by mate_replay_register_builtins()). */
int mate_replay_register_norm_silu(mate_replay *r, mate_error *err);

/* fused_rmsnorm_silu(input, weight, eps=1e-06, out=None, block_scale=None):
 * silu(rmsnorm(input) * weight) in float32, one rounding to out's dtype
 * (bf16, or float8 e4m3fn saturated); the NVFP4 output is not replayed */
static int
op_rmsnorm_silu(mate_replay_call *c, void *ctx)
{
	const mate_tensor *x, *w, *out;
	const mate_value *given;
	mate_value *outv, *acc;
	mate_error err;
	double eps;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, 0, "input", 0, &x)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "weight", 0, &w)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, 2, "eps", 1e-6, &eps)) != MATE_OK)
		return rc;
	if (x->ndim != 2)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "fused_rmsnorm_silu: input must be "
		    "(num_tokens, hidden_size)");
	given = mate_replay_arg(c, 3, "out");
	if (mate_value_kind_of(given) == MATE_V_TENSOR) {
		out = mate_value_get_tensor(given);
		if (out->dtype != MATE_BF16 && out->dtype != MATE_F8_E4M3FN && out->dtype != MATE_F32 &&
		    out->dtype != MATE_F16)
			return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "fused_rmsnorm_silu: out of dtype "
			    "%s (NVFP4) is not replayed", mate_dtype_name(out->dtype));
		outv = mate_value_copy(given);
	} else {
		outv = mate_replay_new_tensor(c, x->dtype, 2, x->shape);
	}
	if (outv == NULL)
		return MATE_ERR_NOMEM;
	if ((acc = mate_replay_new_tensor(c, MATE_F32, 2, x->shape)) == NULL) {
		mate_value_free(outv);
		return MATE_ERR_NOMEM;
	}
	mate_replay_set_reduction_sum(c, x->shape[1], 0, 1, MATE_F32);  /* a norm: 2 D u |x| */
	if ((rc = mate_kernels_cpu()->rmsnorm(x, w, eps, mate_value_get_tensor(acc), &err)) == MATE_OK)
		rc = mate_cpu_silu_store(mate_value_get_tensor(acc), mate_value_get_tensor(outv), &err);
	mate_value_free(acc);
	if (rc != MATE_OK) {
		mate_value_free(outv);
		return mate_replay_fail(c, rc, "fused_rmsnorm_silu: %s", err.message);
	}
	return mate_replay_return(c, outv);
}

/* layernorm(input, gemma, beta, eps=1e-06): (input - mean) * rsqrt(var + eps) *
 * gemma + beta per row, in input's dtype (FlashInfer's kernel: bf16 input, float32
 * gemma and beta) */
static int
op_layernorm(mate_replay_call *c, void *ctx)
{
	const mate_tensor *x, *g, *b;
	mate_value *outv;
	mate_error err;
	double eps;
	int rc;

	(void)ctx;
	if ((rc = mate_replay_arg_tensor(c, 0, "input", 0, &x)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "gemma", 0, &g)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 2, "beta", 0, &b)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, 3, "eps", 1e-6, &eps)) != MATE_OK)
		return rc;
	if (x->ndim != 2)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "layernorm: input must be "
		    "(batch_size, hidden_size)");
	if ((outv = mate_replay_new_tensor(c, x->dtype, 2, x->shape)) == NULL)
		return MATE_ERR_NOMEM;
	mate_replay_set_reduction_sum(c, x->shape[1], 0, 1, MATE_F32);  /* a norm: 2 D u |x| */
	rc = mate_cpu_layernorm(x, g, b, eps, mate_value_get_tensor(outv), &err);
	return mate_replay_kernel_done(c, rc, &err, outv);
}

/* The view of t (..., cols) as (rows, cols), rows running over its leading dimensions;
 * 0 when those do not make one run of rows. */
static int
rows_view(const mate_tensor *t, mate_tensor *v)
{
	int64_t rows = 1;

	if (t->ndim < 2)
		return 0;
	for (int d = 0; d < t->ndim - 1; d++) {
		if (d < t->ndim - 2 && t->shape[d] != 1 && t->stride[d] != t->stride[d + 1] * t->shape[d + 1])
			return 0;
		rows *= t->shape[d];
	}
	*v = *t;
	v->ndim = 2;
	v->shape[0] = rows;
	v->shape[1] = t->shape[t->ndim - 1];
	v->stride[0] = t->stride[t->ndim - 2];
	v->stride[1] = t->stride[t->ndim - 1];
	return 1;
}

/* fused_qk_rmsnorm_rope(qkv, q_weight, k_weight, *, ppf, pph, ppw, num_frame_channels,
 * num_height_channels, num_width_channels, num_heads_q, num_heads_k, num_heads_v,
 * head_dim, eps=1e-06, base=10000.0, interleave=True, factor=1.0, low=0.0, high=0.0,
 * attention_factor=1.0, is_qk_norm=True, output_fp8=False, output_quant_scale=1.0,
 * v_quant_scale=1.0, q_out=None, k_out=None, v_out=None) -> (q, k, v), each
 * (tokens..., heads, head_dim) (mate_cpu_qk_norm_rope()) */
static int
op_qk_norm_rope(mate_replay_call *c, void *ctx)
{
	static const char *const ints[] = { "ppf", "pph", "ppw", "num_frame_channels",
	    "num_height_channels", "num_width_channels", "num_heads_q", "num_heads_k",
	    "num_heads_v", "head_dim" };
	const mate_tensor *qkv, *qw, *kw;
	mate_qk_norm_rope p;
	int64_t *iv[10], shape[MATE_MAX_DIMS], heads[3];
	mate_tensor x, o[3];
	mate_value *out[3] = { NULL, NULL, NULL }, *ret;
	mate_error err;
	int rc, nd;

	(void)ctx;
	memset(&p, 0, sizeof(p));
	iv[0] = &p.ppf, iv[1] = &p.pph, iv[2] = &p.ppw, iv[3] = &p.frame_channels;
	iv[4] = &p.height_channels, iv[5] = &p.width_channels, iv[6] = &p.heads_q;
	iv[7] = &p.heads_k, iv[8] = &p.heads_v, iv[9] = &p.head_dim;
	if ((rc = mate_replay_arg_tensor(c, 0, "qkv", 0, &qkv)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "q_weight", 0, &qw)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 2, "k_weight", 0, &kw)) != MATE_OK)
		return rc;
	for (int i = 0; i < 10; i++)
		if ((rc = mate_replay_arg_int(c, -1, ints[i], -1, iv[i])) != MATE_OK)
			return rc;
	if ((rc = mate_replay_arg_float(c, -1, "eps", 1e-6, &p.eps)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, -1, "base", 10000.0, &p.base)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, -1, "interleave", 1, &p.interleave)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, -1, "factor", 1.0, &p.factor)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, -1, "low", 0.0, &p.low)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, -1, "high", 0.0, &p.high)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, -1, "attention_factor", 1.0, &p.attention_factor)) !=
	    MATE_OK ||
	    (rc = mate_replay_arg_bool(c, -1, "is_qk_norm", 1, &p.qk_norm)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, -1, "output_fp8", 0, &p.output_fp8)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, -1, "output_quant_scale", 1.0, &p.out_scale)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, -1, "v_quant_scale", 1.0, &p.v_scale)) != MATE_OK)
		return rc;
	if ((qkv->ndim != 2 && qkv->ndim != 3) || !rows_view(qkv, &x))
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "fused_qk_rmsnorm_rope: qkv must be "
		    "(num_tokens, hidden) or (batch, seq_len, hidden), its rows contiguous");
	heads[0] = p.heads_q, heads[1] = p.heads_k, heads[2] = p.heads_v;
	for (int i = 0; i < 3; i++)   /* before the outputs are sized by them */
		if (heads[i] < 1 || heads[i] > 32)
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "fused_qk_rmsnorm_rope: %s = %lld: "
			    "expected 1 to 32", ints[6 + i], (long long)heads[i]);
	if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "fused_qk_rmsnorm_rope: head_dim = %lld: "
		    "expected 64, 128 or 256", (long long)p.head_dim);
	nd = qkv->ndim + 1;
	for (int i = 0; i < 3; i++) {
		for (int d = 0; d < qkv->ndim - 1; d++)
			shape[d] = qkv->shape[d];
		shape[nd - 2] = heads[i];
		shape[nd - 1] = p.head_dim;
		if ((out[i] = mate_replay_new_tensor(c, p.output_fp8 ? MATE_F8_E4M3FN : MATE_BF16, nd,
		    shape)) == NULL)
			break;
		/* a new tensor is contiguous: the kernel writes it as (tokens, heads * head_dim) */
		o[i] = *mate_value_get_tensor(out[i]);
		o[i].ndim = 2;
		o[i].shape[1] = o[i].stride[0] = heads[i] * p.head_dim;
		o[i].shape[0] = mate_tensor_numel(mate_value_get_tensor(out[i])) / o[i].shape[1];
		o[i].stride[1] = 1;
	}
	if (out[0] == NULL || out[1] == NULL || out[2] == NULL || (ret = mate_value_tuple()) == NULL) {
		for (int i = 0; i < 3; i++)
			mate_value_free(out[i]);
		return MATE_ERR_NOMEM;
	}
	for (int i = 0; i < 3; i++)
		mate_value_append(ret, out[i]);
	rc = mate_cpu_qk_norm_rope(&x, qw, kw, &p, &o[0], &o[1], &o[2], &err);
	return mate_replay_kernel_done(c, rc, &err, ret);
}

int
mate_replay_register_norm_silu(mate_replay *r, mate_error *err)
{
	int rc;

	if ((rc = mate_replay_register_signature(r, NULL, "fused_rmsnorm_silu",
	    "(input, weight, eps=1e-06, out=None, block_scale=None)", op_rmsnorm_silu, NULL,
	    err)) != MATE_OK)
		return rc;
	if ((rc = mate_replay_register_signature(r, NULL, "layernorm", "(input, gemma, beta, "
	    "eps=1e-06)", op_layernorm, NULL, err)) != MATE_OK)
		return rc;
	mate_replay_set_slice(r, "row:input.0 result.0");
	return mate_replay_register_signature(r, NULL, "fused_qk_rmsnorm_rope", "(qkv, q_weight, "
	    "k_weight, *, ppf, pph, ppw, num_frame_channels, num_height_channels, "
	    "num_width_channels, num_heads_q, num_heads_k, num_heads_v, head_dim, eps=1e-06, "
	    "base=10000.0, interleave=True, factor=1.0, low=0.0, high=0.0, attention_factor=1.0, "
	    "is_qk_norm=True, output_fp8=False, output_quant_scale=1.0, v_quant_scale=1.0, "
	    "q_out=None, k_out=None, v_out=None)", op_qk_norm_rope, NULL, err);
}
