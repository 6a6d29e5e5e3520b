/* kernels.c: the CPU kernel table and what every backend's kernels share (names, defaults, scatter). */
#include "kernels_cpu.h"
#include "kernels_paged.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The index in names[n] of name, with or without the Python enum's
 * "Class." prefix; -1 when it is not there. */
static int
enum_index(const char *name, const char *prefix, const char *const *names, int n)
{
	size_t len = strlen(prefix);

	if (name == NULL)
		return -1;
	if (strncmp(name, prefix, len) == 0)
		name += len;
	for (int i = 0; i < n; i++)
		if (strcmp(name, names[i]) == 0)
			return i;
	return -1;
}

int
mate_kv_layout_from_name(const char *name)
{
	/* by value: MATE_KV_NHD, MATE_KV_HND */
	static const char *const names[] = { "NHD", "HND" };

	return enum_index(name, "TensorLayout.", names, 2);
}

int
mate_pos_encoding_from_name(const char *name)
{
	/* by value: MATE_POS_NONE, MATE_POS_ROPE_LLAMA, MATE_POS_ALIBI */
	static const char *const names[] = { "NONE", "ROPE_LLAMA", "ALIBI" };

	return enum_index(name, "PosEncodingMode.", names, 3);
}

void
mate_attn_params_init(mate_attn_params *p)
{
	memset(p, 0, sizeof(*p));
	p->kv_layout = MATE_KV_NHD;
	p->pos_encoding_mode = MATE_POS_NONE;
	p->window_left = -1;
	p->q_scale = p->k_scale = p->v_scale = 1.0;
}

int
mate_kernel_scalar(const mate_tensor *t, double def, double *out, const char *what,
    mate_error *err)
{
	if (t == NULL) {
		*out = def;
		return MATE_OK;
	}
	if (mate_tensor_numel(t) != 1 || t->data == NULL ||
	    mate_dtype_kind(t->dtype) == MATE_KIND_COMPLEX || mate_dtype_size(t->dtype) == 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: expected one real element", what);
	if (t->device_type != MATE_DEVICE_CPU)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: not in host memory", what);
	*out = mate_load_f64(t->dtype, mate_tensor_element(t, 0));
	return MATE_OK;
}

static int
trans_of(int t)
{
	switch (t) {
	case MATE_BLAS_NO_TRANS: case 'N': case 'n': return 0;
	case MATE_BLAS_TRANS: case 'T': case 't': return 1;
	case MATE_BLAS_CONJ_TRANS: case 'C': case 'c': return 2;
	default: return -1;
	}
}

static int64_t
max1(int64_t v)
{
	return v > 1 ? v : 1;
}

/* Elements an operand stored as r x c with leading dimension ld spans. */
static int
span(int colmajor, int64_t r, int64_t c, int64_t ld, int64_t *out)
{
	int64_t lo = colmajor ? r : c, hi = colmajor ? c : r, t;

	if (ld < max1(lo))
		return 0;
	if (r == 0 || c == 0) {
		*out = 0;
		return 1;
	}
	return mate_mul_ok(ld, hi - 1, &t) && mate_add_ok(t, lo, out);
}

int
mate_gemm_check(const mate_gemm_call *g, int *pta, int *ptb, int64_t need[3], mate_error *err)
{
	int cm = g->order == MATE_BLAS_COL_MAJOR;
	int ta = *pta = trans_of(g->transa), tb = *ptb = trans_of(g->transb);
	int64_t nb = g->batch > 1 ? g->batch : 1;
	const int64_t st[3] = { g->stride_a, g->stride_b, g->stride_c };

	if (g->order != MATE_BLAS_ROW_MAJOR && !cm)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "gemm: bad order %d", g->order);
	if (ta < 0 || tb < 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "gemm: bad transpose flag");
	if (g->fortran && !cm)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "gemm: Fortran calls are column major");
	if (g->m < 0 || g->n < 0 || g->k < 0 || g->m > INT_MAX || g->n > INT_MAX ||
	    g->k > INT_MAX || g->lda > INT_MAX || g->ldb > INT_MAX || g->ldc > INT_MAX)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "gemm: bad m, n, k or ld");
	if (!span(cm, ta ? g->k : g->m, ta ? g->m : g->k, g->lda, &need[0]) ||
	    !span(cm, tb ? g->n : g->k, tb ? g->k : g->n, g->ldb, &need[1]) ||
	    !span(cm, g->m, g->n, g->ldc, &need[2]))
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "gemm: a leading dimension is too small (lda %lld, ldb %lld, ldc %lld)",
		    (long long)g->lda, (long long)g->ldb, (long long)g->ldc);
	for (int i = 0; i < 3; i++) {
		int64_t t;
		if (nb > 1 && (st[i] < 0 || !mate_mul_ok(st[i], nb - 1, &t) ||
		    !mate_add_ok(need[i], t, &need[i])))
			return mate_set_error(err, MATE_ERR_ARGUMENT, "gemm: bad batch stride");
	}
	return MATE_OK;
}

double
mate_alibi_slope(int64_t h, int64_t heads)
{
	int64_t n = 1;

	while (n * 2 <= heads)
		n *= 2;
	if (h < n)
		return pow(2.0, -8.0 * (double)(h + 1) / (double)n);
	return pow(2.0, -4.0 * (double)((h - n) * 2 + 1) / (double)n);
}

static int
check_masks(const mate_attn_params *p, int64_t Lq, int64_t Lk, mate_error *err)
{
	const mate_tensor *m = p->custom_mask, *pm = p->packed_custom_mask;
	int64_t n = Lq * Lk;

	if (m != NULL && (m->device_type != MATE_DEVICE_CPU || m->ndim != 2 ||
	    m->shape[0] != Lq || m->shape[1] != Lk || m->data == NULL ||
	    mate_dtype_kind(m->dtype) == MATE_KIND_COMPLEX || mate_dtype_size(m->dtype) == 0 ||
	    mate_tensor_storage_extent(m) < 0))
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "custom_mask: expected (%lld, %lld) in host memory", (long long)Lq, (long long)Lk);
	if (m == NULL && pm != NULL && (pm->device_type != MATE_DEVICE_CPU ||
	    pm->dtype != MATE_U8 || mate_tensor_numel(pm) < (n + 7) / 8 || pm->data == NULL ||
	    mate_tensor_storage_extent(pm) < 0))
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "packed_custom_mask: expected %lld uint8 in host memory", (long long)((n + 7) / 8));
	return MATE_OK;
}

int
mate_attn_keep_mask(const mate_attn_params *p, int64_t Lq, int64_t Lk, uint8_t **keep,
    mate_error *err)
{
	const mate_tensor *m = p->custom_mask, *pm = p->packed_custom_mask;
	int64_t n;
	int rc;

	*keep = NULL;
	if (m == NULL && pm == NULL)
		return MATE_OK;
	if ((rc = check_masks(p, Lq, Lk, err)) != MATE_OK)
		return rc;
	/* a byte per bit of a packed mask: counted against the one memory limit before it is made */
	if (mate_mul_ok(Lq, Lk, &n) && (uint64_t)n > mate_memory_cap())
		return mate_set_error(err, MATE_ERR_LIMIT, "the mask of %lld x %lld would take more "
		    "than the memory limit of %llu MiB (MATE_MAX_MEMORY raises it)", (long long)Lq,
		    (long long)Lk, (unsigned long long)(mate_memory_cap() >> 20));
	if (!mate_mul_ok(Lq, Lk, &n) || (*keep = malloc(n > 0 ? (size_t)n : 1)) == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory (mask of %lld x %lld)",
		    (long long)Lq, (long long)Lk);
	for (int64_t i = 0; i < Lq; i++)
		for (int64_t t = 0; t < Lk; t++) {
			int64_t idx = i * Lk + t;
			if (m != NULL) {
				const char *e = (const char *)m->data + (m->offset + i * m->stride[0] +
				    t * m->stride[1]) * (int64_t)mate_dtype_size(m->dtype);
				(*keep)[idx] = mate_load_f64(m->dtype, e) != 0;
			} else {
				uint8_t byte = *(const uint8_t *)mate_tensor_element(pm, idx >> 3);
				(*keep)[idx] = (byte >> (idx & 7)) & 1;
			}
		}
	return MATE_OK;
}

/* By name: a swapped or missing entry is a compile error (.cu, C++20 order)
 * or a failure of test_kernels (every entry set). */
static const mate_kernels cpu_kernels = {
	.name = "cpu",
	.rmsnorm = mate_cpu_rmsnorm,
	.fused_add_rmsnorm = mate_cpu_fused_add_rmsnorm,
	.gemma_rmsnorm = mate_cpu_gemma_rmsnorm,
	.gemma_fused_add_rmsnorm = mate_cpu_gemma_fused_add_rmsnorm,
	.silu_and_mul = mate_cpu_silu_and_mul,
	.gelu_and_mul = mate_cpu_gelu_and_mul,
	.gelu_tanh_and_mul = mate_cpu_gelu_tanh_and_mul,
	.softmax = mate_cpu_softmax,
	.mm = mate_cpu_mm,
	.bmm = mate_cpu_bmm,
	.bmm_fp8 = mate_cpu_bmm_fp8,
	.mm_fp8 = mate_cpu_mm_fp8,
	.single_decode = mate_cpu_single_decode,
	.single_prefill = mate_cpu_single_prefill,
	.gemm = mate_cpu_gemm,
	.batch_attention = mate_cpu_batch_attention,
};

const mate_kernels *
mate_kernels_cpu(void)
{
	return &cpu_kernels;
}
