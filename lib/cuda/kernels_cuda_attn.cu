/* kernels_cuda_attn.cu: CUDA single-request attention (decode, prefill): one block per (query row, head), online softmax. */
#include "config.h"
#include "kernels_cuda.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define ATTN_THREADS 128
#define ATTN_TILE 32                 /* keys per step of the online softmax */
#define ATTN_MAX_DV 512              /* value dims: ATTN_MAX_DV / ATTN_THREADS per thread */
#define ATTN_MAX_D 2048              /* query/key dims, kept in shared memory */
#define ATTN_NV (ATTN_MAX_DV / ATTN_THREADS)

struct attn_args {
	const void *q, *k, *v;
	void *o, *lse;
	int q_dt, k_dt, v_dt, o_dt, lse_dt;
	int64_t Lq, Lk, Hq, Hk, D, Dv, group;
	int64_t k_sl, k_sh, v_sl, v_sh;  /* strides of the position and head dims */
	int causal, lse_base_e;
	int64_t window_left;
	double scale, cap, v_scale;
	const uint8_t *keep;             /* Lq x Lk, or NULL */
	const double *slopes;            /* per query head, or NULL */
	const void *rope;                /* (position - pos0, D/2, {cos, sin}) of T, or NULL */
	int64_t pos0;
};

/* Logit of key t for the (rotated) query in qs, reduced over the warp. */
template <typename T>
static __device__ T
attn_logit(const attn_args &a, const T *qs, int64_t i, int64_t h, int64_t t, int64_t qpos)
{
	const T *rt = (const T *)a.rope;
	int64_t half = a.D / 2, kb = t * a.k_sl + (h / a.group) * a.k_sh;
	T dot = 0, z;

	for (int64_t d = threadIdx.x & 31; d < a.D; d += 32) {
		T kd = kcu_ld<T>(a.k_dt, a.k, kb + d);
		if (rt != NULL) {
			const T *cs = rt + ((t - a.pos0) * half + (d % half)) * 2;
			T other = kcu_ld<T>(a.k_dt, a.k, kb + (d < half ? d + half : d - half));
			kd = d < half ? kd * cs[0] - other * cs[1] : kd * cs[0] + other * cs[1];
		}
		dot += qs[d] * kd;
	}
	z = kcu_warp_sum(dot) * (T)a.scale;
	if (a.cap > 0)
		z = (T)a.cap * tanh(z / (T)a.cap);
	if (a.slopes != NULL)
		z += (T)a.slopes[h] * (T)(t - qpos);
	return z;
}

/* Loads and rotates the query row into shared memory. */
template <typename T>
static __device__ void
attn_load_q(const attn_args &a, T *qs, int64_t r, int64_t qpos)
{
	const T *rt = (const T *)a.rope;
	int64_t half = a.D / 2;

	for (int64_t d = threadIdx.x; d < a.D; d += blockDim.x)
		qs[d] = kcu_ld<T>(a.q_dt, a.q, r * a.D + d);
	__syncthreads();
	if (rt != NULL) {
		for (int64_t d = threadIdx.x; d < half; d += blockDim.x) {
			const T *cs = rt + ((qpos - a.pos0) * half + d) * 2;
			T x1 = qs[d], x2 = qs[d + half];
			qs[d] = x1 * cs[0] - x2 * cs[1];
			qs[d + half] = x2 * cs[0] + x1 * cs[1];
		}
		__syncthreads();
	}
}

template <typename T>
static __global__ void
attn_kernel(attn_args a)
{
	extern __shared__ double smem[];
	T *qs = (T *)smem, *zs = qs + a.D;
	int64_t r = blockIdx.x, i = r / a.Hq, h = r % a.Hq, qpos = i + a.Lk - a.Lq;
	int64_t lo = 0, hi = a.Lk - 1, vh = (h / a.group) * a.v_sh;
	int warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
	T m = (T)-INFINITY, l = 0, acc[ATTN_NV];

	attn_load_q(a, qs, r, qpos);
	if (a.window_left >= 0 && qpos - a.window_left > lo)
		lo = qpos - a.window_left;
	if (a.causal && qpos < hi)
		hi = qpos;
	for (int j = 0; j < ATTN_NV; j++)
		acc[j] = 0;
	for (int64_t t0 = lo; t0 <= hi; t0 += ATTN_TILE) {
		for (int tt = warp; tt < ATTN_TILE; tt += nw) {
			int64_t t = t0 + tt;
			T z = (T)-INFINITY;
			if (t <= hi && (a.keep == NULL || a.keep[i * a.Lk + t]))
				z = attn_logit(a, qs, i, h, t, qpos);
			if ((threadIdx.x & 31) == 0)
				zs[tt] = z;
		}
		__syncthreads();
		T mnew = m;
		for (int tt = 0; tt < ATTN_TILE; tt++)
			mnew = zs[tt] > mnew ? zs[tt] : mnew;
		if (mnew != (T)-INFINITY) {
			T corr = exp(m - mnew);
			l *= corr;
			for (int j = 0; j < ATTN_NV; j++)
				acc[j] *= corr;
			for (int tt = 0; tt < ATTN_TILE && t0 + tt <= hi; tt++) {
				T p = exp(zs[tt] - mnew);
				int64_t vb = (t0 + tt) * a.v_sl + vh;
				l += p;
				for (int j = 0; j < ATTN_NV; j++) {
					int64_t d = threadIdx.x + (int64_t)j * blockDim.x;
					if (d < a.Dv)
						acc[j] += p * kcu_ld<T>(a.v_dt, a.v, vb + d);
				}
			}
			m = mnew;
		}
		__syncthreads();
	}
	for (int j = 0; j < ATTN_NV; j++) {
		int64_t d = threadIdx.x + (int64_t)j * blockDim.x;
		if (d < a.Dv)
			kcu_st(a.o_dt, a.o, r * a.Dv + d, l > 0 ? acc[j] / l * (T)a.v_scale : (T)0);
	}
	if (threadIdx.x == 0 && a.lse != NULL) {
		T lse = l > 0 ? m + log(l) : (T)-INFINITY;
		if (!a.lse_base_e)
			lse = lse * (T)1.44269504088896340736;
		kcu_st(a.lse_dt, a.lse, r, lse);
	}
}

/* A host copy of a (host or device) mask tensor, for mate_attn_keep_mask(). */
static const mate_tensor *
host_mask(kcu_call *c, const mate_tensor *t, mate_tensor *h, void **buf)
{
	kcu_dev *d;
	size_t bytes;

	if (t == NULL || t->device_type != MATE_DEVICE_CUDA)
		return t;
	if ((d = kcu_stage(c, t, 1, 0, "mask")) == NULL)
		return NULL;
	bytes = (size_t)d->n * mate_dtype_size(t->dtype);
	if ((*buf = malloc(bytes > 0 ? bytes : 1)) == NULL) {
		c->rc = mate_set_error(c->err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	if (!kcu_ok(c, cudaMemcpyAsync(*buf, d->p, bytes, cudaMemcpyDeviceToHost, c->stream),
	    "cudaMemcpy") || !kcu_ok(c, cudaStreamSynchronize(c->stream), "cudaStreamSynchronize"))
		return NULL;
	mate_tensor_init(h, t->dtype, t->ndim, t->shape, NULL, *buf);
	return h;
}

/* The keep mask, RoPE table and ALiBi slopes, uploaded. */
template <typename T>
static void
upload_tables(kcu_call *c, attn_args *a, const mate_attn_params *p, int prefill)
{
	mate_attn_params hp = *p;
	mate_tensor hm, hpm;
	void *b1 = NULL, *b2 = NULL;
	uint8_t *keep = NULL;

	if (prefill && (p->custom_mask != NULL || p->packed_custom_mask != NULL)) {
		hp.custom_mask = host_mask(c, p->custom_mask, &hm, &b1);
		hp.packed_custom_mask = host_mask(c, p->packed_custom_mask, &hpm, &b2);
		if (c->rc == MATE_OK &&
		    (c->rc = mate_attn_keep_mask(&hp, a->Lq, a->Lk, &keep, c->err)) == MATE_OK) {
			a->keep = (const uint8_t *)kcu_upload(c, keep, (size_t)(a->Lq * a->Lk));
			a->causal = 0;  /* a custom mask takes precedence */
		}
		free(keep);
		free(b1);
		free(b2);
	}
	if (p->pos_encoding_mode == MATE_POS_ALIBI && c->rc == MATE_OK)
		a->slopes = kcu_alibi_slopes<double>(c, a->Hq);
	if (p->pos_encoding_mode == MATE_POS_ROPE_LLAMA && c->rc == MATE_OK)
		a->rope = kcu_rope_table<T>(c, p, a->pos0, a->Lk - a->pos0, a->D);
}

/* Shapes and parameters; q (Lq, Hq, D) or, decoding, (Hq, D). */
static int
attn_setup(kcu_call *c, attn_args *a, const mate_tensor *q, const mate_tensor *k,
    const mate_tensor *v, const mate_attn_params *p, const mate_tensor *o,
    const mate_tensor *lse, int prefill)
{
	int hnd = p->kv_layout == MATE_KV_HND, qd = prefill ? 3 : 2;
	const mate_tensor *ts[5] = { q, k, v, o, lse };

	for (int i = 0; i < 5; i++)
		if ((ts[i] != NULL || i < 4) && (ts[i] == NULL || !kcu_dtype_ok(ts[i]->dtype)))
			return c->rc = mate_set_error(c->err, ts[i] == NULL ? MATE_ERR_ARGUMENT :
			    MATE_ERR_UNSUPPORTED, "attention: missing tensor or unsupported dtype");
	if (q->ndim != qd || k->ndim != 3 || v->ndim != 3 || o->ndim != qd ||
	    (lse != NULL && lse->ndim != qd - 1))
		return KCU_ARG(c, "attention: wrong number of dimensions");
	if (p->kv_layout != MATE_KV_NHD && !hnd)
		return KCU_ARG(c, "kv_layout: %d unknown", p->kv_layout);
	if (p->pos_encoding_mode < MATE_POS_NONE || p->pos_encoding_mode > MATE_POS_ALIBI)
		return c->rc = mate_set_error(c->err, MATE_ERR_UNSUPPORTED,
		    "pos_encoding_mode %d is unsupported by mate's kernels", p->pos_encoding_mode);
	if (p->sinks != NULL)
		return c->rc = mate_set_error(c->err, MATE_ERR_UNSUPPORTED,
		    "attention sinks are replayed on the CPU only");
	a->Lq = prefill ? q->shape[0] : 1;
	a->Hq = q->shape[qd - 2], a->D = q->shape[qd - 1];
	a->Lk = k->shape[hnd ? 1 : 0], a->Hk = k->shape[hnd ? 0 : 1], a->Dv = v->shape[2];
	if (k->shape[2] != a->D || v->shape[0] != k->shape[0] || v->shape[1] != k->shape[1] ||
	    a->Hk == 0 || a->Hq % a->Hk != 0 || o->shape[qd - 2] != a->Hq ||
	    o->shape[qd - 1] != a->Dv || (prefill && o->shape[0] != a->Lq) ||
	    (lse != NULL && (lse->shape[qd - 2] != a->Hq || (prefill && lse->shape[0] != a->Lq))))
		return KCU_ARG(c, "attention: shapes do not fit together");
	if (a->D > ATTN_MAX_D || a->Dv > ATTN_MAX_DV || a->Lq * a->Hq > INT_MAX ||
	    (p->pos_encoding_mode == MATE_POS_ROPE_LLAMA && a->D % 2 != 0))
		return c->rc = mate_set_error(c->err, MATE_ERR_UNSUPPORTED,
		    "attention: head dims %lld/%lld or %lld rows not supported on CUDA",
		    (long long)a->D, (long long)a->Dv, (long long)(a->Lq * a->Hq));
	a->group = a->Hq / a->Hk;
	a->k_sl = hnd ? a->D : a->Hk * a->D;
	a->k_sh = hnd ? a->Lk * a->D : a->D;
	a->v_sl = hnd ? a->Dv : a->Hk * a->Dv;
	a->v_sh = hnd ? a->Lk * a->Dv : a->Dv;
	a->causal = prefill && p->causal;
	a->lse_base_e = p->lse_base_e;
	a->window_left = p->window_left;
	a->scale = (p->sm_scale > 0 ? p->sm_scale : 1.0 / sqrt((double)a->D)) * p->q_scale *
	    p->k_scale;
	a->cap = p->logits_soft_cap > 0 ? p->logits_soft_cap : 0;
	a->v_scale = p->v_scale;
	a->pos0 = a->Lk - a->Lq < 0 ? a->Lk - a->Lq : 0;
	return MATE_OK;
}

static int
attention(const mate_tensor *q, const mate_tensor *k, const mate_tensor *v,
    const mate_attn_params *p, const mate_tensor *o, const mate_tensor *lse, int prefill,
    mate_error *err)
{
	kcu_call c;
	attn_args a;
	mate_attn_params defaults;
	kcu_dev *dq, *dk, *dv, *dout, *dl;
	int dbl = q != NULL && q->dtype == MATE_F64;
	size_t es = dbl ? sizeof(double) : sizeof(float);

	if (p == NULL) {
		mate_attn_params_init(&defaults);
		p = &defaults;
	}
	memset(&a, 0, sizeof(a));
	if (kcu_begin(&c, q, err) != MATE_OK || attn_setup(&c, &a, q, k, v, p, o, lse, prefill))
		return kcu_finish(&c);
	dq = kcu_stage(&c, q, 1, 0, "q");
	dk = kcu_stage(&c, k, 1, 0, "k");
	dv = kcu_stage(&c, v, 1, 0, "v");
	dout = kcu_stage(&c, o, 0, 1, "out");
	dl = kcu_stage(&c, lse, 0, 1, "lse");
	if (dbl)
		upload_tables<double>(&c, &a, p, prefill);
	else
		upload_tables<float>(&c, &a, p, prefill);
	if (c.rc != MATE_OK || a.Lq * a.Hq == 0)
		return kcu_finish(&c);
	a.q = dq->p, a.k = dk->p, a.v = dv->p, a.o = dout->p, a.lse = dl ? dl->p : NULL;
	a.q_dt = dq->dtype, a.k_dt = dk->dtype, a.v_dt = dv->dtype, a.o_dt = dout->dtype;
	a.lse_dt = dl ? dl->dtype : MATE_F32;
	if (dbl)
		attn_kernel<double><<<(unsigned)(a.Lq * a.Hq), ATTN_THREADS,
		    (size_t)(a.D + ATTN_TILE) * es, c.stream>>>(a);
	else
		attn_kernel<float><<<(unsigned)(a.Lq * a.Hq), ATTN_THREADS,
		    (size_t)(a.D + ATTN_TILE) * es, c.stream>>>(a);
	kcu_launched(&c, "attention");
	return kcu_finish(&c);
}

int
mate_cuda_single_decode(const mate_tensor *q, const mate_tensor *k, const mate_tensor *v,
    const mate_attn_params *p, const mate_tensor *o, const mate_tensor *lse, mate_error *err)
{
	return attention(q, k, v, p, o, lse, 0, err);
}

int
mate_cuda_single_prefill(const mate_tensor *q, const mate_tensor *k, const mate_tensor *v,
    const mate_attn_params *p, const mate_tensor *o, const mate_tensor *lse, mate_error *err)
{
	return attention(q, k, v, p, o, lse, 1, err);
}
