/* kernels_cuda_paged.cu: CUDA batch attention on paged and ragged KV caches (FlashInfer's batch wrappers): one block per (query row, head) reading its request's keys through the page table, online softmax. */
#include "config.h"
#include "kernels_cuda.h"
#include "kernels_paged.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define BA_THREADS 128
#define BA_TILE 32                   /* keys per step of the online softmax */
#define BA_MAX_DV 512                /* value dims: BA_MAX_DV / BA_THREADS per thread */
#define BA_MAX_D 2048                /* query/key dims, kept in shared memory */
#define BA_NV (BA_MAX_DV / BA_THREADS)

struct batch_args {
	const void *q, *k, *v;
	void *o, *lse;
	int q_dt, k_dt, v_dt, o_dt, lse_dt;
	int64_t Hq, D, Dv, group, page_size;     /* page_size 0: ragged */
	int64_t k_sp, k_se, k_sh;                /* element strides of page, entry, head */
	int64_t v_sp, v_se, v_sh;
	const int64_t *row_req;                  /* request of each query row, -1: none */
	const int64_t *qo_indptr, *kv_indptr, *kv_indices, *kv_len;
	int causal, lse_base_e;
	int64_t window_left;
	float scale, cap, v_scale;
	const float *slopes;                     /* per query head, or NULL */
	const float *rope;                       /* (position - pos0, D/2, {cos, sin}), or NULL */
	int64_t pos0;
};

/* The offset of key (value) t of request b, head kvh, in the staged cache. */
static __device__ __forceinline__ int64_t
kv_at(const batch_args &a, int64_t b, int64_t t, int64_t sp, int64_t se, int64_t sh, int64_t kvh)
{
	if (a.page_size > 0)
		return a.kv_indices[a.kv_indptr[b] + t / a.page_size] * sp + (t % a.page_size) * se +
		    kvh * sh;
	return (a.kv_indptr[b] + t) * se + kvh * sh;
}

/* Logit of key t for the (rotated) query in qs, reduced over the warp. */
static __device__ float
batch_logit(const batch_args &a, const float *qs, int64_t b, int64_t h, int64_t t, int64_t qpos)
{
	int64_t half = a.D / 2, kb = kv_at(a, b, t, a.k_sp, a.k_se, a.k_sh, h / a.group);
	float dot = 0, z;

	for (int64_t d = threadIdx.x & 31; d < a.D; d += 32) {
		float kd = kcu_ldf(a.k_dt, a.k, kb + d);
		if (a.rope != NULL) {
			const float *cs = a.rope + ((t - a.pos0) * half + (d % half)) * 2;
			float other = kcu_ldf(a.k_dt, a.k, kb + (d < half ? d + half : d - half));
			kd = d < half ? kd * cs[0] - other * cs[1] : kd * cs[0] + other * cs[1];
		}
		dot += qs[d] * kd;
	}
	z = kcu_warp_sum(dot) * a.scale;
	if (a.cap > 0)
		z = a.cap * tanhf(z / a.cap);
	if (a.slopes != NULL)
		z += a.slopes[h] * (float)(t - qpos);
	return z;
}

static __global__ void
batch_kernel(batch_args a)
{
	extern __shared__ float bsmem[];
	float *qs = bsmem, *zs = qs + a.D;
	int64_t r = blockIdx.x, i = r / a.Hq, h = r % a.Hq, b = a.row_req[i];
	int warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
	float m = -INFINITY, l = 0, acc[BA_NV];

	if (b < 0)
		return;   /* a row of no request: left as it was */
	int64_t Lq = a.qo_indptr[b + 1] - a.qo_indptr[b], Lk = a.kv_len[b];
	int64_t qpos = i - a.qo_indptr[b] + Lk - Lq, lo = 0, hi = Lk - 1;
	int64_t half = a.D / 2;

	for (int64_t d = threadIdx.x; d < a.D; d += blockDim.x)
		qs[d] = kcu_ldf(a.q_dt, a.q, r * a.D + d);
	__syncthreads();
	if (a.rope != NULL) {
		for (int64_t d = threadIdx.x; d < half; d += blockDim.x) {
			const float *cs = a.rope + ((qpos - a.pos0) * half + d) * 2;
			float x1 = qs[d], x2 = qs[d + half];
			qs[d] = x1 * cs[0] - x2 * cs[1];
			qs[d + half] = x2 * cs[0] + x1 * cs[1];
		}
		__syncthreads();
	}
	if (a.window_left >= 0 && qpos - a.window_left > lo)
		lo = qpos - a.window_left;
	if (a.causal && qpos < hi)
		hi = qpos;
	for (int j = 0; j < BA_NV; j++)
		acc[j] = 0;
	for (int64_t t0 = lo; t0 <= hi; t0 += BA_TILE) {
		for (int tt = warp; tt < BA_TILE; tt += nw) {
			int64_t t = t0 + tt;
			float z = -INFINITY;
			if (t <= hi)
				z = batch_logit(a, qs, b, h, t, qpos);
			if ((threadIdx.x & 31) == 0)
				zs[tt] = z;
		}
		__syncthreads();
		float mnew = m;
		for (int tt = 0; tt < BA_TILE; tt++)
			mnew = zs[tt] > mnew ? zs[tt] : mnew;
		if (mnew != -INFINITY) {
			float corr = expf(m - mnew);
			l *= corr;
			for (int j = 0; j < BA_NV; j++)
				acc[j] *= corr;
			for (int tt = 0; tt < BA_TILE && t0 + tt <= hi; tt++) {
				float p = expf(zs[tt] - mnew);
				int64_t vb = kv_at(a, b, t0 + tt, a.v_sp, a.v_se, a.v_sh, h / a.group);
				l += p;
				for (int j = 0; j < BA_NV; j++) {
					int64_t d = threadIdx.x + (int64_t)j * blockDim.x;
					if (d < a.Dv)
						acc[j] += p * kcu_ldf(a.v_dt, a.v, vb + d);
				}
			}
			m = mnew;
		}
		__syncthreads();
	}
	for (int j = 0; j < BA_NV; j++) {
		int64_t d = threadIdx.x + (int64_t)j * blockDim.x;
		if (d < a.Dv)
			kcu_stf(a.o_dt, a.o, r * a.Dv + d, l > 0 ? acc[j] / l * a.v_scale : 0.0f);
	}
	if (threadIdx.x == 0 && a.lse != NULL) {
		float lse = l > 0 ? m + logf(l) : -INFINITY;
		if (!a.lse_base_e)
			lse *= 1.44269504088896340736f;
		kcu_stf(a.lse_dt, a.lse, r, lse);
	}
}

/* ---- host side ---------------------------------------------------------------- */

/* The batch's tables, checked against the tensors: each query row's
 * request (row_req), the query offsets (qo, decode: one row a request) and
 * the key counts (kv_len; ragged: from kv_indptr). */
struct batch_tables {
	int64_t *row_req, *qo, *kv_len;
	int64_t max_len, pos0;
};

static int
batch_tables(kcu_call *c, const mate_batch_attn *a, int hnd, struct batch_tables *t)
{
	int64_t nq = a->q->shape[0], nkv = a->k->shape[a->page_size > 0 ? 0 : hnd ? 1 : 0];

	t->row_req = (int64_t *)malloc(sizeof(int64_t) * (size_t)(nq + 1));
	t->qo = (int64_t *)malloc(sizeof(int64_t) * (size_t)(a->batch + 1));
	t->kv_len = (int64_t *)malloc(sizeof(int64_t) * (size_t)(a->batch + 1));
	if (t->row_req == NULL || t->qo == NULL || t->kv_len == NULL)
		return c->rc = mate_set_error(c->err, MATE_ERR_NOMEM, "out of memory");
	for (int64_t i = 0; i < nq; i++)
		t->row_req[i] = -1;
	t->max_len = 0, t->pos0 = 0;
	for (int64_t b = 0; b <= a->batch; b++)
		t->qo[b] = a->qo_indptr != NULL ? a->qo_indptr[b] : b;
	for (int64_t b = 0; b < a->batch; b++) {
		int64_t q0 = t->qo[b], q1 = t->qo[b + 1], p0 = a->kv_indptr[b], p1 = a->kv_indptr[b + 1];

		if (q0 < 0 || q1 < q0 || q1 > nq)
			return KCU_ARG(c, "request %lld: query rows [%lld, %lld) outside q's %lld",
			    (long long)b, (long long)q0, (long long)q1, (long long)nq);
		if (p0 < 0 || p1 < p0 || p1 > (a->page_size > 0 ? a->n_indices : nkv))
			return KCU_ARG(c, "request %lld: kv_indptr [%lld, %lld) out of range",
			    (long long)b, (long long)p0, (long long)p1);
		if (a->page_size > 0) {
			t->kv_len[b] = a->kv_len[b];
			if (t->kv_len[b] < 0 || t->kv_len[b] > (p1 - p0) * a->page_size ||
			    (p1 > p0 && t->kv_len[b] <= (p1 - p0 - 1) * a->page_size))
				return KCU_ARG(c, "request %lld: %lld keys do not fill %lld pages of %lld",
				    (long long)b, (long long)t->kv_len[b], (long long)(p1 - p0),
				    (long long)a->page_size);
			for (int64_t i = p0; i < p1; i++)
				if (a->kv_indices[i] < 0 || a->kv_indices[i] >= nkv)
					return KCU_ARG(c, "request %lld: page %lld of a cache of %lld",
					    (long long)b, (long long)a->kv_indices[i], (long long)nkv);
		} else {
			t->kv_len[b] = p1 - p0;
		}
		for (int64_t i = q0; i < q1; i++)
			t->row_req[i] = b;
		if (q1 > q0 && t->kv_len[b] - (q1 - q0) < t->pos0)
			t->pos0 = t->kv_len[b] - (q1 - q0);
		if (t->kv_len[b] > t->max_len)
			t->max_len = t->kv_len[b];
	}
	return MATE_OK;
}

/* Shapes, dtypes and parameters into ba. */
static int
batch_setup(kcu_call *c, const mate_batch_attn *a, const mate_attn_params *p, batch_args *ba)
{
	int hnd = p->kv_layout == MATE_KV_HND, paged = a->page_size > 0, nd = paged ? 4 : 3;
	const mate_tensor *ts[5] = { a->q, a->k, a->v, a->out, a->lse };
	const mate_tensor *k = a->k, *v = a->v;
	int64_t Hk, P = paged ? a->page_size : 0;

	for (int i = 0; i < 5; i++)
		if ((ts[i] != NULL || i < 4) && (ts[i] == NULL || !kcu_dtype_ok(ts[i]->dtype) ||
		    ts[i]->dtype == MATE_F64))
			return c->rc = mate_set_error(c->err, ts[i] == NULL ? MATE_ERR_ARGUMENT :
			    MATE_ERR_UNSUPPORTED, "batch attention: missing tensor or unsupported dtype");
	if (p->custom_mask != NULL || p->packed_custom_mask != NULL)
		return c->rc = mate_set_error(c->err, MATE_ERR_UNSUPPORTED,
		    "custom masks of a batch are not replayed");
	if (p->sinks != NULL)
		return c->rc = mate_set_error(c->err, MATE_ERR_UNSUPPORTED,
		    "attention sinks are replayed on the CPU only");
	if (p->kv_layout != MATE_KV_NHD && !hnd)
		return KCU_ARG(c, "kv_layout: %d unknown", p->kv_layout);
	if (p->pos_encoding_mode < MATE_POS_NONE || p->pos_encoding_mode > MATE_POS_ALIBI)
		return c->rc = mate_set_error(c->err, MATE_ERR_UNSUPPORTED,
		    "pos_encoding_mode %d is unsupported by mate's kernels", p->pos_encoding_mode);
	if (a->q->ndim != 3 || k->ndim != nd || v->ndim != nd || a->out->ndim != 3 ||
	    (a->lse != NULL && a->lse->ndim != 2))
		return KCU_ARG(c, "batch attention: wrong number of dimensions");
	for (int d = 0; d < nd - 1; d++)
		if (v->shape[d] != k->shape[d])
			return KCU_ARG(c, "batch attention: k and v differ in dim %d", d);
	ba->Hq = a->q->shape[1], ba->D = a->q->shape[2], ba->Dv = v->shape[nd - 1];
	Hk = k->shape[nd - 2 - hnd];
	if (k->shape[nd - 1] != ba->D || Hk == 0 || ba->Hq % Hk != 0 ||
	    (paged && k->shape[hnd ? 2 : 1] != P) || a->out->shape[0] != a->q->shape[0] ||
	    a->out->shape[1] != ba->Hq || a->out->shape[2] != ba->Dv ||
	    (a->lse != NULL && (a->lse->shape[0] != a->q->shape[0] || a->lse->shape[1] != ba->Hq)))
		return KCU_ARG(c, "batch attention: shapes do not fit together");
	if (ba->D > BA_MAX_D || ba->Dv > BA_MAX_DV || a->q->shape[0] * ba->Hq > INT_MAX ||
	    (p->pos_encoding_mode == MATE_POS_ROPE_LLAMA && ba->D % 2 != 0))
		return c->rc = mate_set_error(c->err, MATE_ERR_UNSUPPORTED,
		    "batch attention: head dims %lld/%lld or %lld rows not supported on CUDA",
		    (long long)ba->D, (long long)ba->Dv, (long long)(a->q->shape[0] * ba->Hq));
	ba->group = ba->Hq / Hk;
	ba->page_size = P;
	if (paged) {   /* (pages, P, Hk, D) or (pages, Hk, P, D) */
		ba->k_sp = P * Hk * ba->D, ba->v_sp = P * Hk * ba->Dv;
		ba->k_se = hnd ? ba->D : Hk * ba->D, ba->v_se = hnd ? ba->Dv : Hk * ba->Dv;
		ba->k_sh = hnd ? P * ba->D : ba->D, ba->v_sh = hnd ? P * ba->Dv : ba->Dv;
	} else {       /* (nnz, Hk, D) or (Hk, nnz, D) */
		int64_t n = k->shape[hnd ? 1 : 0];
		ba->k_sp = ba->v_sp = 0;
		ba->k_se = hnd ? ba->D : Hk * ba->D, ba->v_se = hnd ? ba->Dv : Hk * ba->Dv;
		ba->k_sh = hnd ? n * ba->D : ba->D, ba->v_sh = hnd ? n * ba->Dv : ba->Dv;
	}
	ba->causal = p->causal;
	ba->lse_base_e = p->lse_base_e;
	ba->window_left = p->window_left;
	ba->scale = (float)((p->sm_scale > 0 ? p->sm_scale : 1.0 / sqrt((double)ba->D)) *
	    p->q_scale * p->k_scale);
	ba->cap = p->logits_soft_cap > 0 ? (float)p->logits_soft_cap : 0.0f;
	ba->v_scale = (float)p->v_scale;
	return MATE_OK;
}

/* The ALiBi slopes and the RoPE table (positions pos0 .. max_len - 1), uploaded. */
static void
batch_upload_pos(kcu_call *c, batch_args *ba, const mate_attn_params *p,
    const struct batch_tables *t)
{
	if (p->pos_encoding_mode == MATE_POS_ALIBI)
		ba->slopes = kcu_alibi_slopes<float>(c, ba->Hq);
	if (p->pos_encoding_mode == MATE_POS_ROPE_LLAMA) {
		ba->rope = kcu_rope_table<float>(c, p, t->pos0, t->max_len - t->pos0, ba->D);
		ba->pos0 = t->pos0;
	}
}

int
mate_cuda_batch_attention(const mate_batch_attn *a, const mate_attn_params *p, mate_error *err)
{
	kcu_call c;
	batch_args ba;
	struct batch_tables t = { NULL, NULL, NULL, 0, 0 };
	kcu_dev *dq, *dk, *dv, *dout, *dl;
	int64_t nq;

	memset(&ba, 0, sizeof(ba));
	if (a == NULL || p == NULL || a->q == NULL || a->k == NULL || a->kv_indptr == NULL ||
	    (a->page_size > 0 && (a->kv_indices == NULL || a->kv_len == NULL)))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "batch attention: missing arguments");
	if (kcu_begin(&c, a->q, err) != MATE_OK || batch_setup(&c, a, p, &ba) != MATE_OK ||
	    batch_tables(&c, a, p->kv_layout == MATE_KV_HND, &t) != MATE_OK)
		goto out;
	nq = a->q->shape[0];
	dq = kcu_stage(&c, a->q, 1, 0, "q");
	dk = kcu_stage(&c, a->k, 1, 0, "k");
	dv = kcu_stage(&c, a->v, 1, 0, "v");
	dout = kcu_stage(&c, a->out, 1, 1, "out");   /* rows of no request keep their values */
	dl = kcu_stage(&c, a->lse, 1, 1, "lse");
	ba.row_req = (const int64_t *)kcu_upload(&c, t.row_req, sizeof(int64_t) * (size_t)(nq + 1));
	ba.qo_indptr = (const int64_t *)kcu_upload(&c, t.qo, sizeof(int64_t) * (size_t)(a->batch + 1));
	ba.kv_indptr = (const int64_t *)kcu_upload(&c, a->kv_indptr,
	    sizeof(int64_t) * (size_t)(a->batch + 1));
	ba.kv_len = (const int64_t *)kcu_upload(&c, t.kv_len, sizeof(int64_t) * (size_t)(a->batch + 1));
	if (a->page_size > 0)
		ba.kv_indices = (const int64_t *)kcu_upload(&c, a->kv_indices,
		    sizeof(int64_t) * (size_t)a->n_indices);
	batch_upload_pos(&c, &ba, p, &t);
	if (c.rc != MATE_OK || nq * ba.Hq == 0)
		goto out;
	ba.q = dq->p, ba.k = dk->p, ba.v = dv->p, ba.o = dout->p, ba.lse = dl ? dl->p : NULL;
	ba.q_dt = dq->dtype, ba.k_dt = dk->dtype, ba.v_dt = dv->dtype, ba.o_dt = dout->dtype;
	ba.lse_dt = dl ? dl->dtype : MATE_F32;
	batch_kernel<<<(unsigned)(nq * ba.Hq), BA_THREADS, (size_t)(ba.D + BA_TILE) * sizeof(float),
	    c.stream>>>(ba);
	kcu_launched(&c, "batch attention");
out:
	free(t.row_req);
	free(t.qo);
	free(t.kv_len);
	return kcu_finish(&c);
}
