/* replay_ops_gemm.c: replay handlers of FlashInfer's bf16 GEMMs (mm_bf16, bmm_bf16; on the call's device) and bit packing (packbits, segment_packbits, on the CPU). */
#include "mate_private.h"
#include "kernels_fi.h"
#include "replay_private.h"

#include <stdio.h>
#include <string.h>

/* Registers these handlers on r (called by mate_replay_register_builtins()). */
int mate_replay_register_gemm_bits(mate_replay *r, mate_error *err);

/* "[d0, d1, ...]" of n dimensions (the first 8) into buf. */
static void
dims(const int64_t *shape, int n, char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "[");

	for (int i = 0; i < n && i < 8 && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
	if (o < len)
		snprintf(buf + o, len - o, "%s]", n > 8 ? ", ..." : "");
}

/* What FlashInfer checks before a bf16 GEMM (its _check_mm_bf16_problem_size and
 * _check_bmm_bf16_problem_size): bfloat16 operands and bias, an out= of the result's
 * shape and of out_dtype. A call it refuses fails here with its words, so that a recorded
 * failure replays as the same failure and a record it could not have made is no pass. */
static int
check_bf16_gemm(mate_replay_call *c, const mate_tensor *a, const mate_tensor *b,
    const mate_tensor *bias, int out_pos, mate_dtype out_dtype, int nd, const int64_t *shape)
{
	const mate_value *given = mate_replay_arg(c, out_pos, "out");
	const mate_tensor *out;
	const char *fn = mate_replay_call_function(c);

	if (a->dtype != MATE_BF16)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: First tensor has unsupported dtype %s. "
		    "Only bfloat16 is supported.", fn, mate_dtype_name(a->dtype));
	if (b->dtype != MATE_BF16)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: Second tensor has unsupported dtype %s. "
		    "Only bfloat16 is supported.", fn, mate_dtype_name(b->dtype));
	if (bias != NULL && bias->dtype != MATE_BF16)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: Bias tensor has unsupported dtype %s. "
		    "Only bfloat16 is supported.", fn, mate_dtype_name(bias->dtype));
	if (mate_value_kind_of(given) != MATE_V_TENSOR)
		return MATE_OK;
	out = mate_value_get_tensor(given);
	if (out->ndim != nd || memcmp(out->shape, shape, (size_t)nd * sizeof(*shape)) != 0) {
		char want[80], got[80];

		dims(shape, nd, want, sizeof(want));
		dims(out->shape, out->ndim, got, sizeof(got));
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: Output shape mismatch. Expected %s, "
		    "got %s.", fn, want, got);
	}
	if (out->dtype != out_dtype)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: Output dtype mismatch. Expected %s, got "
		    "%s.", fn, mate_dtype_name(out_dtype), mate_dtype_name(out->dtype));
	return MATE_OK;
}

/* mm_bf16(a, b, bias=None, pdl=False, out=None, out_dtype=torch.bfloat16,
 * backend='cudnn'): a (m, k) @ b (k, n) (+ bias (n) in float32 before the
 * one rounding); bmm_bf16(A, B, out=None, out_dtype=torch.bfloat16,
 * backend='cudnn'): A (b, m, k) @ B (b, k, n) */
static int
op_mm_bf16(mate_replay_call *c, void *batched)
{
	const mate_kernels *k = mate_replay_kernels(c);
	const mate_tensor *a, *b, *bias = NULL, *out;
	int nd = batched ? 3 : 2, o = batched ? 2 : 4;
	mate_value *outv, *acc;
	int64_t shape[3];
	mate_dtype dt;
	mate_error err;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, 0, batched ? "A" : "a", 0, &a)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, batched ? "B" : "b", 0, &b)) != MATE_OK ||
	    (!batched && (rc = mate_replay_arg_tensor(c, 2, "bias", 1, &bias)) != MATE_OK) ||
	    (rc = mate_replay_arg_dtype(c, o + 1, "out_dtype", MATE_BF16, &dt)) != MATE_OK)
		return rc;
	if ((rc = mate_replay_mm_shape(c, a, b, nd, shape)) != MATE_OK ||
	    (rc = check_bf16_gemm(c, a, b, bias, o, dt, nd, shape)) != MATE_OK)
		return rc;
	if ((rc = mate_replay_output(c, o, "out", dt, 0, nd, shape, &outv)) != MATE_OK)
		return rc;
	out = mate_value_get_tensor(outv);
	mate_replay_set_reduction(c, a, b);
	if (bias == NULL) {
		rc = (batched ? k->bmm : k->mm)(a, b, out, &err);
		return mate_replay_kernel_done(c, rc, &err, outv);
	}
	if ((acc = mate_replay_new_tensor(c, MATE_F32, 2, shape)) == NULL) {
		mate_value_free(outv);
		return MATE_ERR_NOMEM;
	}
	if ((rc = k->mm(a, b, mate_value_get_tensor(acc), &err)) == MATE_OK)
		rc = mate_cpu_add_bias(mate_value_get_tensor(acc), bias, out, &err);
	mate_value_free(acc);
	return mate_replay_kernel_done(c, rc, &err, outv);
}

static int
arg_bitorder(mate_replay_call *c, int pos, int *little)
{
	const char *s;
	int rc;

	if ((rc = mate_replay_arg_str(c, pos, "bitorder", "big", &s)) != MATE_OK)
		return rc;
	if (strcmp(s, "big") != 0 && strcmp(s, "little") != 0)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: bitorder '%s' is neither 'big' nor "
		    "'little'", mate_replay_call_function(c), s);
	*little = strcmp(s, "little") == 0;
	return MATE_OK;
}

/* packbits(x, bitorder='big') -> uint8 ((n + 7) / 8) */
static int
op_packbits(mate_replay_call *c, void *ctx)
{
	const mate_tensor *x;
	mate_value *outv;
	mate_error err;
	int64_t n;
	int rc, little;

	if ((rc = mate_replay_arg_tensor(c, 0, "x", 0, &x)) != MATE_OK ||
	    (rc = arg_bitorder(c, 1, &little)) != MATE_OK)
		return rc;
	n = (mate_tensor_numel(x) + 7) / 8;
	if ((outv = mate_replay_new_tensor(c, MATE_U8, 1, &n)) == NULL)
		return MATE_ERR_NOMEM;
	rc = mate_cpu_packbits(x, 0, mate_tensor_numel(x), little, mate_value_get_tensor(outv), 0, &err);
	return mate_replay_kernel_done(c, rc, &err, outv);
}

/* segment_packbits(x, indptr, bitorder='big') -> (y, new_indptr int32):
 * segment i, x[indptr[i]:indptr[i+1]], packed on its own into
 * y[new_indptr[i]:new_indptr[i+1]] */
static int
op_segment_packbits(mate_replay_call *c, void *ctx)
{
	const mate_tensor *x, *indptr, *np;
	mate_value *y = NULL, *nip;
	mate_error err;
	int64_t nb, total = 0;
	int rc, little;

	if ((rc = mate_replay_arg_tensor(c, 0, "x", 0, &x)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "indptr", 0, &indptr)) != MATE_OK ||
	    (rc = arg_bitorder(c, 2, &little)) != MATE_OK)
		return rc;
	nb = indptr->ndim == 1 ? indptr->shape[0] : 0;
	if (nb < 1 || (rc = mate_kernel_check_ints(indptr, "indptr", nb, &err)) != MATE_OK)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "segment_packbits: indptr must be a 1-D "
		    "integer tensor of batch_size + 1 elements");
	if ((nip = mate_replay_new_tensor(c, MATE_I32, 1, &nb)) == NULL)
		return MATE_ERR_NOMEM;
	np = mate_value_get_tensor(nip);
	for (int64_t i = 0; i + 1 < nb; i++) {
		int64_t s = mate_kernel_int_at(indptr, i), e = mate_kernel_int_at(indptr, i + 1);

		if (s < 0 || e < s || e > mate_tensor_numel(x)) {
			mate_value_free(nip);
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "segment_packbits: segment %lld is "
			    "[%lld, %lld) of %lld bits", (long long)i, (long long)s, (long long)e,
			    (long long)mate_tensor_numel(x));
		}
		total += (e - s + 7) / 8;
		((int32_t *)mate_tensor_element(np, i + 1))[0] = (int32_t)total;
	}
	if ((y = mate_replay_new_tensor(c, MATE_U8, 1, &total)) == NULL) {
		mate_value_free(nip);
		return MATE_ERR_NOMEM;
	}
	for (int64_t i = 0; i + 1 < nb && rc == MATE_OK; i++)
		rc = mate_cpu_packbits(x, mate_kernel_int_at(indptr, i), mate_kernel_int_at(indptr, i + 1),
		    little, mate_value_get_tensor(y), mate_kernel_int_at(np, i), &err);
	return mate_replay_kernel_done_pair(c, rc, &err, y, nip);
}

int
mate_replay_register_gemm_bits(mate_replay *r, mate_error *err)
{
	static const struct mate_replay_op_def ops[] = {
		{ "mm_bf16", "(a, b, bias=None, pdl=False, out=None, out_dtype=torch.bfloat16, "
		    "backend='cudnn')", op_mm_bf16, 0,
		    "row:a.0 out.0 result.0;column:b.1 bias.0 out.1 result.1;=K:a.1" },
		{ "bmm_bf16", "(A, B, out=None, out_dtype=torch.bfloat16, backend='cudnn')", op_mm_bf16, 1,
		    MATE_SLICE_BMM("A", "B") },
		{ "packbits", "(x, bitorder='big')", op_packbits, 0, NULL },
		{ "segment_packbits", "(x, indptr, bitorder='big')", op_segment_packbits, 0, NULL },
	};
	return mate_replay_register_ops(r, ops, sizeof(ops) / sizeof(ops[0]), err);
}
