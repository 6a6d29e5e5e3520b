/* op_cost.c: the per-op FLOP model of mate's built-in handlers (nominal counts: a
 * multiply-add is 2, an exp or a square root 1), shared by mate-bench and mate-replay
 * --bench; the bytes a call moves are its tensors' bytes, in and out (replay.c). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "op_cost.h"

int
mate_op_param_name(const char *sig, int pos, char *buf, size_t cap)
{
	const char *p = sig;
	int depth = 0, i = 0;
	char quote = 0;

	if (sig == NULL || *p++ != '(' || cap == 0)
		return -1;
	while (*p != '\0') {
		size_t n = 0;

		while (*p == ' ')
			p++;
		while (*p == '*' || *p == '/')  /* '*', '*args' and '/' take no position */
			p++;
		while (isalnum((unsigned char)p[n]) || p[n] == '_')
			n++;
		if (n > 0 && p[-1] != '*') {
			if (i++ == pos) {
				snprintf(buf, cap, "%.*s", (int)n, p);
				return 0;
			}
		}
		for (p += n; *p != '\0'; p++) {  /* to the next top-level comma */
			if (quote) {
				quote = *p == quote ? 0 : quote;
				continue;
			}
			if (*p == '\'' || *p == '"')
				quote = *p;
			else if (*p == '(' || *p == '[' || *p == '{')
				depth++;
			else if ((*p == ')' || *p == ']' || *p == '}') && depth-- == 0)
				return -1;
			else if (*p == ',' && depth == 0) {
				p++;
				break;
			}
		}
	}
	return -1;
}

const mate_value *
mate_op_arg(const mate_value *args, const char *sig, const char *name)
{
	char key[160], pname[128];
	const mate_value *v;

	snprintf(key, sizeof(key), "kwarg_%s", name);
	if ((v = mate_value_lookup(args, key)) != NULL)
		return v;
	for (int i = 0; mate_op_param_name(sig, i, pname, sizeof(pname)) == 0; i++)
		if (strcmp(pname, name) == 0) {
			snprintf(key, sizeof(key), "arg_%d", i);
			return mate_value_lookup(args, key);
		}
	return NULL;
}

/* The tensor argument `name` (the first of a tuple), or NULL. */
static const mate_tensor *
tensor(const mate_value *args, const char *sig, const char *name)
{
	const mate_value *v = mate_op_arg(args, sig, name);

	if (v != NULL && (mate_value_kind_of(v) == MATE_V_TUPLE || mate_value_kind_of(v) == MATE_V_LIST))
		v = mate_value_len(v) > 0 ? mate_value_item(v, 0) : NULL;
	return v != NULL && mate_value_kind_of(v) == MATE_V_TENSOR ? mate_value_get_tensor(v) : NULL;
}

static double
numel(const mate_tensor *t)
{
	return t != NULL ? (double)mate_tensor_numel(t) : 0;
}

static int
is(const char *fn, const char *const *names)
{
	for (; *names != NULL; names++)
		if (strcmp(fn, *names) == 0)
			return 1;
	return 0;
}

/* mm, bmm and their kin: 2 M N K per matrix; b is (k, n), or (n, k) when k is last. */
static double
gemm_flops(const char *fn, const char *sig, const mate_value *args)
{
	const mate_tensor *a = tensor(args, sig, "a"), *b = tensor(args, sig, "b");
	int64_t k, n;

	if (a == NULL)
		a = tensor(args, sig, strncmp(fn, "Tensor.", 7) == 0 ? "self" : "A");
	if (a == NULL)
		a = tensor(args, sig, "input");
	if (b == NULL)
		b = tensor(args, sig, "B");
	if (b == NULL)
		b = tensor(args, sig, "mat2");
	if (a == NULL || b == NULL || a->ndim < 2 || b->ndim < 2)
		return -1;
	k = a->shape[a->ndim - 1];
	n = b->shape[b->ndim - 2] == k ? b->shape[b->ndim - 1] : b->shape[b->ndim - 2];
	return 2.0 * numel(a) * (double)n;
}

/* Attention: QK^T and PV, 4 heads*qo*kv*d multiply-adds' worth (causal: half). */
static double
attention_flops(const char *fn, const char *sig, const mate_value *args)
{
	const mate_tensor *q = tensor(args, sig, "q"), *k = tensor(args, sig, "k");
	const mate_value *layout = mate_op_arg(args, sig, "kv_layout"), *causal;
	int hnd = layout != NULL && mate_value_kind_of(layout) == MATE_V_STR &&
	    strcmp(mate_value_get_str(layout, NULL), "HND") == 0;
	double kv;

	if (q == NULL || k == NULL || k->ndim != 3)
		return -1;
	kv = (double)k->shape[hnd ? 1 : 0];
	if (strcmp(fn, "single_decode_with_kv_cache") == 0)
		return 4.0 * numel(q) * kv;
	causal = mate_op_arg(args, sig, "causal");
	return 4.0 * numel(q) * kv * (causal != NULL && mate_value_kind_of(causal) == MATE_V_BOOL &&
	    mate_value_get_bool(causal) ? 0.5 : 1.0);
}

/* FlashInfer's trtllm-gen and XQA paged attention: QK^T (head dim D) and PV (Dv: D, or MLA's
 * kv_lora_rank) over each request's seq_lens keys for its query rows (query rows / requests
 * each), causal or not alike. */
static double
paged_flops(const char *sig, const mate_value *args, int mla)
{
	const mate_tensor *q = tensor(args, sig, "query"), *sl = tensor(args, sig, "seq_lens");
	const mate_value *rank = mla ? mate_op_arg(args, sig, "kv_lora_rank") : NULL;
	double keys = 0, D, Dv, heads;

	if (q == NULL || sl == NULL || q->ndim < 3 || sl->ndim != 1 || sl->shape[0] < 1 ||
	    sl->data == NULL || mate_dtype_kind(sl->dtype) != MATE_KIND_INT ||
	    (mla && (rank == NULL || mate_value_kind_of(rank) != MATE_V_INT)))
		return -1;
	for (int64_t b = 0; b < sl->shape[0]; b++)
		keys += mate_load_f64(sl->dtype, mate_tensor_element(sl, b));
	D = (double)q->shape[q->ndim - 1], heads = (double)q->shape[q->ndim - 2];
	Dv = mla ? (double)mate_value_get_int(rank) : D;
	return 2.0 * (D + Dv) * heads * floor(numel(q) / (D * heads) / (double)sl->shape[0]) * keys;
}

/* An integer argument arg_<pos>, or -1. */
static double
int_at(const mate_value *args, int pos)
{
	char key[32];
	const mate_value *v;

	snprintf(key, sizeof(key), "arg_%d", pos);
	v = mate_value_lookup(args, key);
	return v != NULL && mate_value_kind_of(v) == MATE_V_INT ? (double)mate_value_get_int(v) : -1;
}

/* BLAS GEMMs: 2 M N K (times the batch), M, N, K at m, m + 1, m + 2. */
static double
blas_flops(const mate_value *args, int m, int batch)
{
	double f = 2.0 * int_at(args, m) * int_at(args, m + 1) * int_at(args, m + 2);

	if (int_at(args, m) < 0 || int_at(args, m + 1) < 0 || int_at(args, m + 2) < 0)
		return -1;
	return batch >= 0 ? (int_at(args, batch) >= 0 ? f * int_at(args, batch) : -1) : f;
}

double
mate_op_flops(const char *fn, const char *sig, const mate_value *args)
{
	static const char *const gemms[] = { "mm", "bmm", "Tensor.mm", "Tensor.bmm", "mm_fp8",
	    "bmm_fp8", "mm_bf16", "bmm_bf16", "mm_mxfp8", NULL };
	static const char *const norms[] = { "rmsnorm", "gemma_rmsnorm", "fused_rmsnorm_silu",
	    "rmsnorm_quant", NULL };
	static const char *const adds[] = { "fused_add_rmsnorm", "gemma_fused_add_rmsnorm",
	    "fused_add_rmsnorm_quant", NULL };
	static const char *const acts[] = { "silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul", NULL };
	static const char *const softmax[] = { "softmax", "Tensor.softmax", NULL };
	const mate_tensor *t;

	if (fn == NULL || args == NULL)
		return -1;
	if (is(fn, gemms))
		return gemm_flops(fn, sig, args);
	if (strcmp(fn, "mm_fp4") == 0)     /* a (M, K/2) bytes of e2m1 pairs: 2 M N K */
		return 2 * gemm_flops(fn, sig, args);
	if (strncmp(fn, "cblas_", 6) == 0)
		return blas_flops(args, 3, -1);
	if (strcmp(fn, "sgemm_") == 0 || strcmp(fn, "dgemm_") == 0)
		return blas_flops(args, 2, -1);
	if (strncmp(fn, "cublas", 6) == 0)
		return blas_flops(args, 3, strstr(fn, "Batched") != NULL ? 20 : -1);
	if (strcmp(fn, "single_decode_with_kv_cache") == 0 ||
	    strcmp(fn, "single_prefill_with_kv_cache") == 0)
		return attention_flops(fn, sig, args);
	if (strcmp(fn, "trtllm_batch_decode_with_kv_cache") == 0 ||
	    strcmp(fn, "trtllm_batch_context_with_kv_cache") == 0 ||
	    strcmp(fn, "xqa_batch_decode_with_kv_cache") == 0 ||
	    strcmp(fn, "trtllm_batch_decode_with_kv_cache_mla") == 0)
		return paged_flops(sig, args, strstr(fn, "_mla") != NULL);
	if (strcmp(fn, "SegmentGEMMWrapper.run") == 0) {
		const mate_tensor *x = tensor(args, sig, "x"), *w = tensor(args, sig, "weights");
		const mate_value *cm = mate_op_arg(args, sig, "weight_column_major");

		if (x == NULL || w == NULL || x->ndim != 2 || w->ndim != 3)
			return -1;
		return 2.0 * numel(x) * (double)(cm != NULL && mate_value_get_bool(cm) ?
		    w->shape[1] : w->shape[2]);
	}
	/* elementwise: per element of the input, square and add, scale (norms); add first */
	if ((t = tensor(args, sig, "input")) != NULL && is(fn, norms))
		return 4.0 * numel(t);
	/* layernorm: the mean's add, the variance's subtract, square and add, then
	 * subtract, scale, times gemma, plus beta */
	if (t != NULL && strcmp(fn, "layernorm") == 0)
		return 8.0 * numel(t);
	if (t != NULL && is(fn, adds))
		return 5.0 * numel(t);
	if (t != NULL && is(fn, acts))  /* the activation of half, times the other half */
		return 3.0 * numel(t);
	if (is(fn, softmax) && ((t = tensor(args, sig, "logits")) != NULL ||
	    (t = tensor(args, sig, "input")) != NULL || (t = tensor(args, sig, "self")) != NULL))
		return 4.0 * numel(t);  /* max, exp, sum, divide */
	if (strncmp(fn, "apply_", 6) == 0 && strstr(fn, "rope") != NULL) {
		const mate_tensor *q = tensor(args, sig, "q"), *k = tensor(args, sig, "k");

		if (q == NULL)
			q = tensor(args, sig, "query"), k = tensor(args, sig, "key");
		return q != NULL ? 3.0 * (numel(q) + numel(k)) : -1;  /* a rotation: 2 mul, 1 add */
	}
	/* block quantization: |x| and its block's max, times the scale, the rounding; the
	 * dequantization a product per value, two values a byte */
	if ((strcmp(fn, "fp4_quantize") == 0 || strcmp(fn, "mxfp8_quantize") == 0) &&
	    (t = tensor(args, sig, "input")) != NULL)
		return 3.0 * numel(t);
	if ((strcmp(fn, "nvfp4_quantize") == 0 || strcmp(fn, "mxfp4_quantize") == 0) &&
	    (t = tensor(args, sig, "a")) != NULL)
		return 3.0 * numel(t);
	/* silu(gate) * up (3 an input element), then the quantization of the half */
	if (strcmp(fn, "silu_and_mul_nvfp4_quantize") == 0 && (t = tensor(args, sig, "input")) != NULL)
		return 4.5 * numel(t);
	if (strcmp(fn, "mxfp4_dequantize") == 0 && (t = tensor(args, sig, "a_fp4")) != NULL)
		return 2.0 * numel(t);
	if (strcmp(fn, "mxfp4_dequantize_host") == 0 && (t = tensor(args, sig, "weight")) != NULL)
		return 2.0 * numel(t);
	if (strcmp(fn, "merge_state") == 0 && (t = tensor(args, sig, "v_a")) != NULL)
		return 6.0 * numel(t);
	if (strcmp(fn, "merge_state_in_place") == 0 && (t = tensor(args, sig, "v")) != NULL)
		return 6.0 * numel(t);
	if (strcmp(fn, "merge_states") == 0 && (t = tensor(args, sig, "v")) != NULL)
		return 3.0 * numel(t);
	return -1;
}
