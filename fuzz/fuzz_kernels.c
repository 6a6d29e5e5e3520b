/* fuzz_kernels.c: libFuzzer target: CPU kernels on arbitrary small shapes, strides, dtypes and parameters (as replayed dumps give them). */
#include "config.h"
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

#define ARENA (1 << 16)
#define NT 6

struct in {
	const uint8_t *p;
	size_t n;
};

static unsigned
take(struct in *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

static const mate_dtype dtypes[] = {
	MATE_F32, MATE_F16, MATE_BF16, MATE_F64, MATE_F8_E4M3FN, MATE_F8_E5M2,
	MATE_F8_E4M3FNUZ, MATE_BOOL, MATE_U8, MATE_I32
};

/* A tensor view within the arena: up to 4 dims of up to 9, small strides. */
static void
make_tensor(struct in *in, char *arena, mate_tensor *t)
{
	int64_t shape[4], stride[4];
	int nd = (int)(take(in) % 5);
	mate_dtype dt = dtypes[take(in) % (sizeof(dtypes) / sizeof(dtypes[0]))];
	int contiguous = take(in) & 1;

	for (int d = 0; d < nd; d++) {
		shape[d] = take(in) % 10;
		stride[d] = take(in) % 40;
	}
	mate_tensor_init(t, dt, nd, shape, contiguous ? NULL : stride, arena);
	t->offset = take(in) % 16;
	if (mate_tensor_storage_extent(t) < 0 ||
	    mate_tensor_storage_extent(t) * (int64_t)mate_dtype_size(dt) > ARENA)
		mate_tensor_init(t, dt, 0, shape, NULL, arena);   /* a scalar instead */
}

static void
run_attn(struct in *in, const mate_kernels *K, mate_tensor *t, int decode, mate_error *err)
{
	mate_attn_params p;
	unsigned flags = take(in);

	mate_attn_params_init(&p);
	p.kv_layout = (int)(flags & 1);
	p.pos_encoding_mode = (int)((flags >> 1) % 4);
	p.causal = (flags >> 3) & 1;
	p.window_left = (int)(take(in) % 12) - 2;
	p.logits_soft_cap = (flags >> 4) & 1 ? 5.0 : 0;
	p.lse_base_e = (flags >> 5) & 1;
	if ((flags >> 6) & 1)
		p.custom_mask = &t[5];
	else if ((flags >> 7) & 1)
		p.packed_custom_mask = &t[5];
	if (decode)
		K->single_decode(&t[0], &t[1], &t[2], &p, &t[3], take(in) & 1 ? &t[4] : NULL, err);
	else
		K->single_prefill(&t[0], &t[1], &t[2], &p, &t[3], take(in) & 1 ? &t[4] : NULL, err);
}

static void
run_gemm(struct in *in, const mate_kernels *K, mate_tensor *t, mate_error *err)
{
	mate_gemm_call g;

	memset(&g, 0, sizeof(g));
	g.order = take(in) & 1 ? MATE_BLAS_ROW_MAJOR : MATE_BLAS_COL_MAJOR;
	g.transa = take(in) & 1 ? 'T' : 'N';
	g.transb = take(in) & 1 ? 'T' : 'N';
	g.m = take(in) % 9, g.n = take(in) % 9, g.k = take(in) % 9;
	g.lda = take(in) % 12, g.ldb = take(in) % 12, g.ldc = take(in) % 12;
	g.alpha = 1.5, g.beta = take(in) & 1 ? 0.5 : 0;
	g.fortran = take(in) % 4 == 0;
	g.batch = take(in) % 3;
	g.stride_a = take(in) % 50, g.stride_b = take(in) % 50, g.stride_c = take(in) % 50;
	g.a = &t[0], g.b = &t[1], g.c = &t[2];
	K->gemm(&g, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *arena;
	const mate_kernels *K = mate_kernels_cpu();
	struct in in = { data, size };
	mate_tensor t[NT];
	mate_error err;
	unsigned op;

	if (arena == NULL && (arena = aligned_alloc(64, ARENA)) == NULL)
		return 0;
	op = take(&in) % 16;
	for (int i = 0; i < NT; i++)
		make_tensor(&in, arena, &t[i]);
	/* the rest of the input is the arena's data */
	for (size_t i = 0; i < ARENA; i++)
		arena[i] = (char)(in.n > 0 ? in.p[i % in.n] : 0x3c);
	switch (op) {
	case 0: K->rmsnorm(&t[0], &t[1], 1e-6, &t[2], &err); break;
	case 1: K->fused_add_rmsnorm(&t[0], &t[1], &t[2], 1e-6, &err); break;
	case 2: K->gemma_rmsnorm(&t[0], &t[1], 1e-6, &t[2], &err); break;
	case 3: K->gemma_fused_add_rmsnorm(&t[0], &t[1], &t[2], 1e-6, &err); break;
	case 4: K->silu_and_mul(&t[0], &t[1], &err); break;
	case 5: K->gelu_and_mul(&t[0], &t[1], &err); break;
	case 6: K->gelu_tanh_and_mul(&t[0], &t[1], &err); break;
	case 7: K->softmax(&t[0], 0.7, take(&in) & 1 ? &t[2] : NULL, &t[1], &err); break;
	case 8: K->mm(&t[0], &t[1], &t[2], &err); break;
	case 9: K->bmm(&t[0], &t[1], &t[2], &err); break;
	case 10: K->bmm_fp8(&t[0], &t[1], &t[3], &t[4], &t[2], &err); break;
	case 11: K->mm_fp8(&t[0], &t[1], &t[3], &t[2], &err); break;
	case 12: run_attn(&in, K, t, 1, &err); break;
	case 13: run_attn(&in, K, t, 0, &err); break;
	default: run_gemm(&in, K, t, &err); break;
	}
	return 0;
}
