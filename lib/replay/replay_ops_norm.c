/* replay_ops_norm.c: replay handler of FlashInfer's fused_rmsnorm_silu, on the CPU rmsnorm kernel and a SiLU epilogue. */
#include "mate_private.h"
#include "kernels_fi.h"
#include "replay_private.h"

/* Registers the handler on r (called by mate_replay_register_builtins()). */
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

int
mate_replay_register_norm_silu(mate_replay *r, mate_error *err)
{
	return mate_replay_register_signature(r, NULL, "fused_rmsnorm_silu",
	    "(input, weight, eps=1e-06, out=None, block_scale=None)", op_rmsnorm_silu, NULL, err);
}
