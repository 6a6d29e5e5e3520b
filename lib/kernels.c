/* kernels.c: the CPU kernel table and what every backend's kernels share (names, defaults, scatter). */
#include "kernels_cpu.h"

#include <string.h>

int
mate_kv_layout_from_name(const char *name)
{
	if (name == NULL)
		return -1;
	if (strncmp(name, "TensorLayout.", 13) == 0)
		name += 13;
	if (strcmp(name, "NHD") == 0)
		return MATE_KV_NHD;
	if (strcmp(name, "HND") == 0)
		return MATE_KV_HND;
	return -1;
}

int
mate_pos_encoding_from_name(const char *name)
{
	if (name == NULL)
		return -1;
	if (strncmp(name, "PosEncodingMode.", 16) == 0)
		name += 16;
	if (strcmp(name, "NONE") == 0)
		return MATE_POS_NONE;
	if (strcmp(name, "ROPE_LLAMA") == 0)
		return MATE_POS_ROPE_LLAMA;
	if (strcmp(name, "ALIBI") == 0)
		return MATE_POS_ALIBI;
	return -1;
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

/* Copies the innermost dimension run by run; recursion over outer dims. */
static const char *
scatter(const mate_tensor *t, int d, char *dst, const char *src, size_t es)
{
	if (d == t->ndim)
		return (const char *)memcpy(dst, src, es) + es;
	if (d == t->ndim - 1 && t->stride[d] == 1) {
		size_t n = (size_t)t->shape[d] * es;
		memcpy(dst, src, n);
		return src + n;
	}
	for (int64_t i = 0; i < t->shape[d]; i++)
		src = scatter(t, d + 1, dst + i * t->stride[d] * (int64_t)es, src, es);
	return src;
}

void
mate_tensor_scatter(const mate_tensor *t, const void *src)
{
	size_t es = mate_dtype_size(t->dtype);
	char *base = (char *)t->data + t->offset * (int64_t)es;

	if (mate_tensor_numel(t) <= 0)
		return;
	if (mate_tensor_is_contiguous(t)) {
		memcpy(base, src, (size_t)mate_tensor_nbytes(t));
		return;
	}
	scatter(t, 0, base, src, es);
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

static const mate_kernels cpu_kernels = {
	"cpu",
	mate_cpu_rmsnorm,
	mate_cpu_fused_add_rmsnorm,
	mate_cpu_gemma_rmsnorm,
	mate_cpu_gemma_fused_add_rmsnorm,
	mate_cpu_silu_and_mul,
	mate_cpu_gelu_and_mul,
	mate_cpu_gelu_tanh_and_mul,
	mate_cpu_softmax,
	mate_cpu_mm,
	mate_cpu_bmm,
	mate_cpu_bmm_fp8,
	mate_cpu_mm_fp8,
	mate_cpu_single_decode,
	mate_cpu_single_prefill,
	mate_cpu_gemm,
};

const mate_kernels *
mate_kernels_cpu(void)
{
	return &cpu_kernels;
}
