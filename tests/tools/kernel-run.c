/* kernel-run.c: test driver: reads tensors from safetensors, runs one named kernel, writes every tensor back. */
#include "config.h"
#include "kernels.h"
#include "backend.h"
#include "mate_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * usage: kernel-run [--device cpu|cuda] KERNEL IN.safetensors OUT.safetensors [KEY=VALUE]...
 *
 * Tensors are found by name (input, weight, out, a, b, q, k, v, lse, ...);
 * outputs are tensors in IN too (the caller fills them with the dtype and
 * shape it wants), and OUT receives every tensor after the kernel ran, in
 * its stored layout. KEY=VALUE sets scalar parameters (eps, temperature,
 * causal, kv_layout, ...) and views, applied in this order:
 *   narrow.NAME=D,S,N the kernel sees elements [S, S + N) of stored dim D
 *                     (x.narrow(D, S, N): a storage offset when S > 0)
 *   perm.NAME=2,0,1   the kernel sees the stored tensor permuted (x.permute)
 *   skip.NAME=D       the kernel sees every other element along dim D
 * Exit status: 0 ok, 1 kernel error (message on stderr, first word the
 * status), 2 usage or file errors, 77 --device cuda without a device.
 */

#define MAX_ARGS 64
#define MAX_VIEWS 16

struct ctx {
	mate_value *tensors;
	int nargs;
	char *key[MAX_ARGS], *val[MAX_ARGS];
	mate_tensor views[MAX_VIEWS];
	int nviews;
};

static const char *
arg(const struct ctx *c, const char *key)
{
	for (int i = 0; i < c->nargs; i++)
		if (strcmp(c->key[i], key) == 0)
			return c->val[i];
	return NULL;
}

static double
argf(const struct ctx *c, const char *key, double def)
{
	const char *v = arg(c, key);
	return v != NULL ? strtod(v, NULL) : def;
}

static long long
argi(const struct ctx *c, const char *key, long long def)
{
	const char *v = arg(c, key);

	if (v == NULL)
		return def;
	if (strlen(v) == 1 && (v[0] < '0' || v[0] > '9'))
		return v[0];  /* 'N', 'T' */
	return strtoll(v, NULL, 0);
}

/* Applies narrow.NAME / perm.NAME / skip.NAME to a copy of the stored tensor. */
static int
make_view(const struct ctx *c, const char *name, mate_tensor *t)
{
	char key[128];
	const char *p;

	snprintf(key, sizeof(key), "narrow.%s", name);
	if ((p = arg(c, key)) != NULL) {
		long long d, st, n;
		if (sscanf(p, "%lld,%lld,%lld", &d, &st, &n) != 3 || d < 0 || d >= t->ndim ||
		    st < 0 || n < 0 || st + n > t->shape[d])
			return -1;
		t->offset += st * t->stride[d];
		t->shape[d] = n;
	}
	snprintf(key, sizeof(key), "perm.%s", name);
	if ((p = arg(c, key)) != NULL) {
		mate_tensor s = *t;
		for (int d = 0; d < t->ndim; d++) {
			int from = (int)strtol(p, (char **)&p, 10);
			if (from < 0 || from >= t->ndim)
				return -1;
			t->shape[d] = s.shape[from];
			t->stride[d] = s.stride[from];
			if (*p == ',')
				p++;
		}
	}
	snprintf(key, sizeof(key), "skip.%s", name);
	if ((p = arg(c, key)) != NULL) {
		int d = atoi(p);
		if (d < 0 || d >= t->ndim)
			return -1;
		t->shape[d] /= 2;
		t->stride[d] *= 2;
	}
	return 0;
}

/* The named tensor as the kernel sees it, or NULL when absent. */
static const mate_tensor *
tensor(struct ctx *c, const char *name)
{
	mate_value *v = mate_value_lookup(c->tensors, name);
	mate_tensor *t;

	if (v == NULL || mate_value_kind_of(v) != MATE_V_TENSOR || c->nviews == MAX_VIEWS)
		return NULL;
	t = &c->views[c->nviews++];
	*t = *mate_value_get_tensor(v);
	if (make_view(c, name, t) != 0) {
		fprintf(stderr, "kernel-run: bad view of %s\n", name);
		exit(2);
	}
	return t;
}

static int
run_attn(const mate_kernels *K, const char *name, struct ctx *c, mate_error *err)
{
	mate_attn_params p;
	const char *s;

	mate_attn_params_init(&p);
	if ((s = arg(c, "kv_layout")) != NULL)
		p.kv_layout = mate_kv_layout_from_name(s);
	if ((s = arg(c, "pos_encoding_mode")) != NULL)
		p.pos_encoding_mode = mate_pos_encoding_from_name(s);
	p.causal = (int)argi(c, "causal", 0);
	p.window_left = argi(c, "window_left", -1);
	p.logits_soft_cap = argf(c, "logits_soft_cap", 0);
	p.sm_scale = argf(c, "sm_scale", 0);
	p.rope_scale = argf(c, "rope_scale", 0);
	p.rope_theta = argf(c, "rope_theta", 0);
	p.q_scale = argf(c, "q_scale", 1);
	p.k_scale = argf(c, "k_scale", 1);
	p.v_scale = argf(c, "v_scale", 1);
	p.lse_base_e = (int)argi(c, "lse_base_e", 0);
	p.custom_mask = tensor(c, "custom_mask");
	p.packed_custom_mask = tensor(c, "packed_custom_mask");
	if (strcmp(name, "single_decode_with_kv_cache") == 0)
		return K->single_decode(tensor(c, "q"), tensor(c, "k"), tensor(c, "v"), &p,
		    tensor(c, "out"), tensor(c, "lse"), err);
	return K->single_prefill(tensor(c, "q"), tensor(c, "k"), tensor(c, "v"), &p,
	    tensor(c, "out"), tensor(c, "lse"), err);
}

static int
run_gemm(const mate_kernels *K, struct ctx *c, mate_error *err)
{
	mate_gemm_call g;

	memset(&g, 0, sizeof(g));
	g.order = (int)argi(c, "order", MATE_BLAS_ROW_MAJOR);
	g.transa = (int)argi(c, "transa", 'N');
	g.transb = (int)argi(c, "transb", 'N');
	g.m = argi(c, "m", 0), g.n = argi(c, "n", 0), g.k = argi(c, "k", 0);
	g.alpha = argf(c, "alpha", 1), g.beta = argf(c, "beta", 0);
	g.lda = argi(c, "lda", 0), g.ldb = argi(c, "ldb", 0), g.ldc = argi(c, "ldc", 0);
	g.fortran = (int)argi(c, "fortran", 0);
	g.batch = argi(c, "batch", 1);
	g.stride_a = argi(c, "stride_a", 0);
	g.stride_b = argi(c, "stride_b", 0);
	g.stride_c = argi(c, "stride_c", 0);
	g.a = tensor(c, "a"), g.b = tensor(c, "b"), g.c = tensor(c, "c");
	return K->gemm(&g, err);
}

static int
run_segment_gemm(const mate_kernels *K, struct ctx *c, mate_error *err)
{
	mate_segment_gemm_args a;

	memset(&a, 0, sizeof(a));
	a.x = tensor(c, "x");
	a.weights = tensor(c, "weights");
	a.out = tensor(c, "out");
	a.batch_size = argi(c, "batch_size", 0);
	a.column_major = (int)argi(c, "column_major", 0);
	a.seg_lens = tensor(c, "seg_lens");
	a.seg_indptr = tensor(c, "seg_indptr");
	a.weight_indices = tensor(c, "weight_indices");
	return mate_segment_gemm(K, &a, err);
}

static int
run(const mate_kernels *K, const char *name, struct ctx *c, mate_error *err)
{
	double eps = argf(c, "eps", 1e-6);

	if (strcmp(name, "rmsnorm") == 0)
		return K->rmsnorm(tensor(c, "input"), tensor(c, "weight"), eps, tensor(c, "out"), err);
	if (strcmp(name, "gemma_rmsnorm") == 0)
		return K->gemma_rmsnorm(tensor(c, "input"), tensor(c, "weight"), eps,
		    tensor(c, "out"), err);
	if (strcmp(name, "fused_add_rmsnorm") == 0)
		return K->fused_add_rmsnorm(tensor(c, "input"), tensor(c, "residual"),
		    tensor(c, "weight"), eps, err);
	if (strcmp(name, "gemma_fused_add_rmsnorm") == 0)
		return K->gemma_fused_add_rmsnorm(tensor(c, "input"), tensor(c, "residual"),
		    tensor(c, "weight"), eps, err);
	if (strcmp(name, "silu_and_mul") == 0)
		return K->silu_and_mul(tensor(c, "input"), tensor(c, "out"), err);
	if (strcmp(name, "gelu_and_mul") == 0)
		return K->gelu_and_mul(tensor(c, "input"), tensor(c, "out"), err);
	if (strcmp(name, "gelu_tanh_and_mul") == 0)
		return K->gelu_tanh_and_mul(tensor(c, "input"), tensor(c, "out"), err);
	if (strcmp(name, "softmax") == 0)
		return K->softmax(tensor(c, "logits"), argf(c, "temperature", 1.0),
		    tensor(c, "temperature"), tensor(c, "out"), err);
	if (strcmp(name, "mm") == 0)
		return K->mm(tensor(c, "a"), tensor(c, "b"), tensor(c, "out"), err);
	if (strcmp(name, "bmm") == 0)
		return K->bmm(tensor(c, "a"), tensor(c, "b"), tensor(c, "out"), err);
	if (strcmp(name, "bmm_fp8") == 0)
		return K->bmm_fp8(tensor(c, "A"), tensor(c, "B"), tensor(c, "A_scale"),
		    tensor(c, "B_scale"), tensor(c, "out"), err);
	if (strcmp(name, "mm_fp8") == 0)
		return K->mm_fp8(tensor(c, "a"), tensor(c, "b"), tensor(c, "alpha"),
		    tensor(c, "out"), err);
	if (strcmp(name, "single_decode_with_kv_cache") == 0 ||
	    strcmp(name, "single_prefill_with_kv_cache") == 0)
		return run_attn(K, name, c, err);
	if (strcmp(name, "gemm") == 0)
		return run_gemm(K, c, err);
	if (strcmp(name, "segment_gemm") == 0)
		return run_segment_gemm(K, c, err);
	fprintf(stderr, "kernel-run: unknown kernel %s\n", name);
	exit(2);
}

static const mate_kernels *
pick(const char *device)
{
	if (strcmp(device, "cpu") == 0)
		return mate_kernels_cpu();
	if (strcmp(device, "cuda") == 0) {
#ifdef HAVE_CUDA
		const mate_backend *b = mate_backend_cuda();
		if (b != NULL && b->device_count() > 0)
			return b->kernels();
#endif
		fprintf(stderr, "kernel-run: no CUDA device\n");
		exit(77);
	}
	fprintf(stderr, "kernel-run: unknown device %s\n", device);
	exit(2);
}

int
main(int argc, char **argv)
{
	const char *device = "cpu";
	struct ctx c;
	mate_error err;
	int rc, i = 1;

	if (argc > 2 && strcmp(argv[1], "--device") == 0) {
		device = argv[2];
		i = 3;
	}
	if (argc - i < 3) {
		fprintf(stderr, "usage: kernel-run [--device cpu|cuda] KERNEL IN OUT [KEY=VALUE]...\n");
		return 2;
	}
	memset(&c, 0, sizeof(c));
	for (int a = i + 3; a < argc && c.nargs < MAX_ARGS; a++) {
		char *eq = strchr(argv[a], '=');
		if (eq == NULL)
			continue;
		*eq = '\0';
		c.key[c.nargs] = argv[a];
		c.val[c.nargs++] = eq + 1;
	}
	mate_error_clear(&err);
	if ((c.tensors = mate_safetensors_read(argv[i + 1], NULL, &err)) == NULL) {
		fprintf(stderr, "kernel-run: %s\n", err.message);
		return 2;
	}
	rc = run(pick(device), argv[i], &c, &err);
	if (rc != MATE_OK) {
		fprintf(stderr, "%d %s\n", rc, err.message);
		mate_value_free(c.tensors);
		return 1;
	}
	if (mate_safetensors_write(argv[i + 2], c.tensors, NULL, &err) != MATE_OK) {
		fprintf(stderr, "kernel-run: %s\n", err.message);
		rc = 2;
	}
	mate_value_free(c.tensors);
	return rc;
}
