/* kernels_cuda.cu: CUDA kernels (norms, activations, softmax), the staging of host and strided tensors, the kernel table. */
#include "config.h"
#include "kernels_cuda.h"
#include "backend.h"
#include "cuda_module.h"

#include <stdlib.h>
#include <string.h>

/* ---- staging ------------------------------------------------------------- */

struct kcu_layout {
	int ndim;
	int64_t shape[MATE_MAX_DIMS];
	int64_t stride[MATE_MAX_DIMS];
};

/* Copies between a strided view (L, from base) and a contiguous array. */
template <typename E>
static __global__ void
strided_copy(E *strided, E *flat, kcu_layout L, int64_t n, int to_strided)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	    i += (int64_t)gridDim.x * blockDim.x) {
		int64_t off = 0, r = i;
		for (int d = L.ndim - 1; d >= 0; d--) {
			off += (r % L.shape[d]) * L.stride[d];
			r /= L.shape[d];
		}
		if (to_strided)
			strided[off] = flat[i];
		else
			flat[i] = strided[off];
	}
}

static unsigned
blocks_for(int64_t n, int threads)
{
	int64_t b = (n + threads - 1) / threads;
	return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

int
kcu_ok(kcu_call *c, cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return 1;
	if (c->rc == MATE_OK)
		c->rc = mate_set_error(c->err, MATE_ERR_IO, "%s: %s", what, cudaGetErrorString(e));
	return 0;
}

int
kcu_launched(kcu_call *c, const char *what)
{
	return kcu_ok(c, cudaGetLastError(), what);
}

static int
device_strided_copy(kcu_call *c, const mate_tensor *t, void *flat, int to_strided)
{
	kcu_layout L;
	size_t es = mate_dtype_size(t->dtype);
	int64_t n = mate_tensor_numel(t);
	char *base = (char *)t->data + t->offset * (int64_t)es;
	unsigned nb = blocks_for(n, 256);

	memset(&L, 0, sizeof(L));
	L.ndim = t->ndim;
	memcpy(L.shape, t->shape, sizeof(L.shape));
	memcpy(L.stride, t->stride, sizeof(L.stride));
	switch (es) {
	case 1: strided_copy<uint8_t><<<nb, 256, 0, c->stream>>>((uint8_t *)base, (uint8_t *)flat, L, n, to_strided); break;
	case 2: strided_copy<uint16_t><<<nb, 256, 0, c->stream>>>((uint16_t *)base, (uint16_t *)flat, L, n, to_strided); break;
	case 4: strided_copy<uint32_t><<<nb, 256, 0, c->stream>>>((uint32_t *)base, (uint32_t *)flat, L, n, to_strided); break;
	case 8: strided_copy<uint64_t><<<nb, 256, 0, c->stream>>>((uint64_t *)base, (uint64_t *)flat, L, n, to_strided); break;
	default:
		c->rc = mate_set_error(c->err, MATE_ERR_UNSUPPORTED, "element size %zu", es);
		return 0;
	}
	return kcu_launched(c, "strided copy");
}

int
kcu_begin(kcu_call *c, const mate_tensor *first, mate_error *err)
{
	int n = 0;

	memset(c, 0, sizeof(*c));
	c->err = err;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		cudaGetLastError();
		return c->rc = mate_set_error(err, MATE_ERR_UNSUPPORTED, "no CUDA device");
	}
	cudaGetDevice(&c->prev_device);
	if (first != NULL && first->device_type == MATE_DEVICE_CUDA) {
		if (first->device_index != c->prev_device) {
			if (!kcu_ok(c, cudaSetDevice(first->device_index), "cudaSetDevice"))
				return c->rc;
			c->set_device = 1;
		}
		c->stream = (cudaStream_t)first->stream;
	}
	return MATE_OK;
}

void *
kcu_alloc(kcu_call *c, size_t bytes)
{
	void *p = NULL;

	if (c->rc != MATE_OK)
		return NULL;
	if (c->nscratch == KCU_MAX_SCRATCH) {
		c->rc = mate_set_error(c->err, MATE_ERR_LIMIT, "too many device buffers");
		return NULL;
	}
	if (!kcu_ok(c, cudaMalloc(&p, bytes > 0 ? bytes : 16), "cudaMalloc"))
		return NULL;
	c->scratch[c->nscratch++] = p;
	return p;
}

void *
kcu_upload(kcu_call *c, const void *host, size_t bytes)
{
	void *p = kcu_alloc(c, bytes);

	if (p != NULL && bytes > 0 &&
	    !kcu_ok(c, cudaMemcpyAsync(p, host, bytes, cudaMemcpyHostToDevice, c->stream),
	    "cudaMemcpy") )
		return NULL;
	if (p != NULL && !kcu_ok(c, cudaStreamSynchronize(c->stream), "cudaStreamSynchronize"))
		return NULL;
	return p;
}

/* Copies a host view to the device through a contiguous host buffer. */
static int
stage_host_in(kcu_call *c, kcu_dev *d, size_t bytes)
{
	void *tmp = malloc(bytes > 0 ? bytes : 1);
	int ok;

	if (tmp == NULL) {
		c->rc = mate_set_error(c->err, MATE_ERR_NOMEM, "out of memory");
		return 0;
	}
	mate_tensor_copy_contiguous(d->src, tmp);
	ok = kcu_ok(c, cudaMemcpyAsync(d->p, tmp, bytes, cudaMemcpyHostToDevice, c->stream),
	    "cudaMemcpy") && kcu_ok(c, cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
	free(tmp);
	return ok;
}

kcu_dev *
kcu_stage(kcu_call *c, const mate_tensor *t, int in, int out, const char *what)
{
	kcu_dev *d;
	int64_t n, bytes;
	size_t es;

	if (t == NULL || c->rc != MATE_OK)
		return NULL;
	n = mate_tensor_numel(t);
	es = mate_dtype_size(t->dtype);
	if (n < 0 || es == 0 || mate_tensor_storage_extent(t) < 0 ||
	    !mate_mul_ok(n, (int64_t)es, &bytes) || (t->data == NULL && n > 0)) {
		KCU_ARG(c, "%s: invalid tensor", what);
		return NULL;
	}
	if (c->nt == KCU_MAX_STAGED) {
		c->rc = mate_set_error(c->err, MATE_ERR_LIMIT, "too many tensors");
		return NULL;
	}
	d = &c->t[c->nt++];
	memset(d, 0, sizeof(*d));
	d->src = t, d->dtype = t->dtype, d->n = n, d->out = out;
	if (t->device_type == MATE_DEVICE_CUDA && mate_tensor_is_contiguous(t)) {
		d->p = (char *)t->data + t->offset * (int64_t)es;
		return d;
	}
	if (!kcu_ok(c, cudaMalloc(&d->owned, bytes > 0 ? (size_t)bytes : 16), "cudaMalloc"))
		return NULL;
	d->p = d->owned;
	if (in && n > 0) {
		if (t->device_type == MATE_DEVICE_CUDA ? !device_strided_copy(c, t, d->p, 0)
		    : !stage_host_in(c, d, (size_t)bytes))
			return NULL;
	}
	return d;
}

/* Copies a staged output back into the caller's view. */
static void
write_back(kcu_call *c, kcu_dev *d)
{
	size_t bytes = (size_t)d->n * mate_dtype_size(d->src->dtype);
	void *tmp;

	if (d->owned == NULL || d->n == 0)
		return;
	if (d->src->device_type == MATE_DEVICE_CUDA) {
		device_strided_copy(c, d->src, d->p, 1);
		return;
	}
	if ((tmp = malloc(bytes)) == NULL) {
		c->rc = mate_set_error(c->err, MATE_ERR_NOMEM, "out of memory");
		return;
	}
	if (kcu_ok(c, cudaMemcpyAsync(tmp, d->p, bytes, cudaMemcpyDeviceToHost, c->stream),
	    "cudaMemcpy") && kcu_ok(c, cudaStreamSynchronize(c->stream), "cudaStreamSynchronize"))
		mate_tensor_scatter(d->src, tmp);
	free(tmp);
}

int
kcu_finish(kcu_call *c)
{
	if (c->rc == MATE_OK)
		kcu_launched(c, "kernel");
	for (int i = 0; i < c->nt && c->rc == MATE_OK; i++)
		if (c->t[i].out)
			write_back(c, &c->t[i]);
	kcu_ok(c, cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
	for (int i = 0; i < c->nt; i++)
		cudaFree(c->t[i].owned);
	for (int i = 0; i < c->nscratch; i++)
		cudaFree(c->scratch[i]);
	if (c->set_device)
		cudaSetDevice(c->prev_device);
	return c->rc;
}

template <typename T>
static __global__ void
convert_kernel(const void *src, int sdt, void *dst, int ddt, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	    i += (int64_t)gridDim.x * blockDim.x)
		kcu_st(ddt, dst, i, kcu_ld<T>(sdt, src, i));
}

int
kcu_convert(kcu_call *c, const void *src, int sdt, void *dst, int ddt, int64_t n)
{
	if (c->rc != MATE_OK || n == 0)
		return c->rc == MATE_OK;
	if (sdt == MATE_F64 || ddt == MATE_F64)
		convert_kernel<double><<<blocks_for(n, 256), 256, 0, c->stream>>>(src, sdt, dst, ddt, n);
	else
		convert_kernel<float><<<blocks_for(n, 256), 256, 0, c->stream>>>(src, sdt, dst, ddt, n);
	return kcu_launched(c, "convert");
}

int
kcu_scalar(kcu_call *c, const mate_tensor *t, double def, double *out, const char *what)
{
	unsigned char buf[16];
	mate_tensor h;

	if (t == NULL || t->device_type != MATE_DEVICE_CUDA)
		return (c->rc = mate_kernel_scalar(t, def, out, what, c->err)) == MATE_OK;
	if (mate_tensor_numel(t) != 1 || mate_dtype_size(t->dtype) == 0 ||
	    mate_dtype_size(t->dtype) > sizeof(buf) || t->data == NULL) {
		KCU_ARG(c, "%s: expected one element", what);
		return 0;
	}
	if (!kcu_ok(c, cudaMemcpyAsync(buf, mate_tensor_element(t, 0), mate_dtype_size(t->dtype),
	    cudaMemcpyDeviceToHost, c->stream), "cudaMemcpy") ||
	    !kcu_ok(c, cudaStreamSynchronize(c->stream), "cudaStreamSynchronize"))
		return 0;
	h = *t;
	h.device_type = MATE_DEVICE_CPU;
	h.data = buf;
	h.offset = 0;
	return (c->rc = mate_kernel_scalar(&h, def, out, what, c->err)) == MATE_OK;
}

/* ---- checks --------------------------------------------------------------- */

static int
check_t(kcu_call *c, const mate_tensor *t, const char *what, int ndim)
{
	if (c->rc != MATE_OK)
		return 0;
	if (t == NULL) {
		KCU_ARG(c, "%s: missing tensor", what);
		return 0;
	}
	if ((ndim >= 0 && t->ndim != ndim) || (ndim < 0 && t->ndim < 1) || t->ndim > MATE_MAX_DIMS) {
		KCU_ARG(c, "%s: %d dimensions", what, t->ndim);
		return 0;
	}
	if (mate_tensor_numel(t) < 0 || mate_tensor_storage_extent(t) < 0) {
		KCU_ARG(c, "%s: invalid shape or strides", what);
		return 0;
	}
	if (!kcu_dtype_ok(t->dtype)) {
		c->rc = mate_set_error(c->err, MATE_ERR_UNSUPPORTED, "%s: dtype %s not supported",
		    what, mate_dtype_name(t->dtype));
		return 0;
	}
	return 1;
}

static int
check_dim(kcu_call *c, const mate_tensor *t, const char *what, int d, int64_t want)
{
	if (c->rc != MATE_OK)
		return 0;
	if (t->shape[d] != want) {
		KCU_ARG(c, "%s: dimension %d is %lld, expected %lld", what, d,
		    (long long)t->shape[d], (long long)want);
		return 0;
	}
	return 1;
}

/* b has a's leading dims and last dim `last`. */
static int
check_like(kcu_call *c, const mate_tensor *a, const mate_tensor *b, const char *what, int64_t last)
{
	if (!check_t(c, b, what, a->ndim))
		return 0;
	for (int d = 0; d < a->ndim - 1; d++)
		if (!check_dim(c, b, what, d, a->shape[d]))
			return 0;
	return check_dim(c, b, what, a->ndim - 1, last);
}

/* ---- RMSNorm ------------------------------------------------------------- */

template <typename T>
static __global__ void
rms_kernel(const void *in, int in_dt, void *res, int res_dt, const void *w, int w_dt,
    void *out, int out_dt, int64_t H, T eps, int gemma)
{
	int64_t base = blockIdx.x * H;
	T ss = 0, rs;

	for (int64_t i = threadIdx.x; i < H; i += blockDim.x) {
		T x = kcu_ld<T>(in_dt, in, base + i);
		if (res != NULL)  /* the norm reads the unrounded sum, as FlashInfer's does */
			x += kcu_ld<T>(res_dt, res, base + i);
		ss += x * x;
	}
	ss = kcu_block_reduce(ss, 0);
	rs = (T)1 / sqrt(ss / (T)H + eps);
	/* each thread reads and writes its own elements, in both loops */
	for (int64_t i = threadIdx.x; i < H; i += blockDim.x) {
		T x = kcu_ld<T>(in_dt, in, base + i);
		T wv = kcu_ld<T>(w_dt, w, i);
		if (res != NULL) {
			x += kcu_ld<T>(res_dt, res, base + i);
			kcu_st(res_dt, res, base + i, x);
		}
		if (gemma)
			wv = (T)1 + wv;
		kcu_st(out_dt, out, base + i, x * rs * wv);
	}
}

static int
norm(const mate_tensor *in, const mate_tensor *res, const mate_tensor *w, double eps,
    const mate_tensor *out, int gemma, mate_error *err)
{
	kcu_call c;
	kcu_dev *din, *dres = NULL, *dw, *dout;
	int64_t H, rows;

	if (kcu_begin(&c, in, err) != MATE_OK || !check_t(&c, in, "input", -1) ||
	    !check_t(&c, w, "weight", 1))
		return kcu_finish(&c);
	H = in->shape[in->ndim - 1];
	rows = H > 0 ? mate_tensor_numel(in) / H : 0;
	if (!check_dim(&c, w, "weight", 0, H) ||
	    (res != NULL ? !check_like(&c, in, res, "residual", H) : !check_like(&c, in, out, "out", H)))
		return kcu_finish(&c);
	if (rows > INT32_MAX) {
		c.rc = mate_set_error(err, MATE_ERR_LIMIT, "too many rows");
		return kcu_finish(&c);
	}
	din = kcu_stage(&c, in, 1, res != NULL, "input");
	dw = kcu_stage(&c, w, 1, 0, "weight");
	if (res != NULL)
		dres = kcu_stage(&c, res, 1, 1, "residual");
	dout = res != NULL ? din : kcu_stage(&c, out, 0, 1, "out");
	if (c.rc != MATE_OK || rows == 0 || H == 0)
		return kcu_finish(&c);
	if (in->dtype == MATE_F64)
		rms_kernel<double><<<(unsigned)rows, 256, 0, c.stream>>>(din->p, din->dtype,
		    dres ? dres->p : NULL, dres ? dres->dtype : 0, dw->p, dw->dtype, dout->p,
		    dout->dtype, H, (double)eps, gemma);
	else
		rms_kernel<float><<<(unsigned)rows, 256, 0, c.stream>>>(din->p, din->dtype,
		    dres ? dres->p : NULL, dres ? dres->dtype : 0, dw->p, dw->dtype, dout->p,
		    dout->dtype, H, (float)eps, gemma);
	return kcu_finish(&c);
}

static int
cuda_rmsnorm(const mate_tensor *in, const mate_tensor *w, double eps, const mate_tensor *out,
    mate_error *err)
{
	return norm(in, NULL, w, eps, out, 0, err);
}

static int
cuda_gemma_rmsnorm(const mate_tensor *in, const mate_tensor *w, double eps,
    const mate_tensor *out, mate_error *err)
{
	return norm(in, NULL, w, eps, out, 1, err);
}

static int
cuda_fused_add_rmsnorm(const mate_tensor *in, const mate_tensor *res, const mate_tensor *w,
    double eps, mate_error *err)
{
	if (res == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "residual: missing tensor");
	return norm(in, res, w, eps, NULL, 0, err);
}

static int
cuda_gemma_fused_add_rmsnorm(const mate_tensor *in, const mate_tensor *res,
    const mate_tensor *w, double eps, mate_error *err)
{
	if (res == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "residual: missing tensor");
	return norm(in, res, w, eps, NULL, 1, err);
}

/* ---- gated activations ------------------------------------------------------ */

enum { ACT_SILU, ACT_GELU, ACT_GELU_TANH };

template <typename T>
static __device__ __forceinline__ T
act_fn(int act, T a)
{
	if (act == ACT_SILU)
		return a / ((T)1 + exp(-a));
	if (act == ACT_GELU)
		return (T)0.5 * a * ((T)1 + erf(a * (T)0.70710678118654752440));
	return (T)0.5 * a * ((T)1 + tanh((T)0.79788456080286535588 * (a + (T)0.044715 * a * a * a)));
}

template <typename T>
static __global__ void
act_kernel(const void *in, int in_dt, void *out, int out_dt, int64_t rows, int64_t D, int act)
{
	int64_t n = rows * D;

	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	    i += (int64_t)gridDim.x * blockDim.x) {
		int64_t r = i / D, j = i % D;
		T a = kcu_ld<T>(in_dt, in, r * 2 * D + j), b = kcu_ld<T>(in_dt, in, r * 2 * D + D + j);
		kcu_st(out_dt, out, i, act_fn(act, a) * b);
	}
}

static int
act_and_mul(const mate_tensor *in, const mate_tensor *out, int act, mate_error *err)
{
	kcu_call c;
	kcu_dev *din, *dout;
	int64_t D, rows;

	if (kcu_begin(&c, in, err) != MATE_OK || !check_t(&c, in, "input", -1))
		return kcu_finish(&c);
	if (in->shape[in->ndim - 1] % 2 != 0) {
		KCU_ARG(&c, "input: last dimension %lld is odd", (long long)in->shape[in->ndim - 1]);
		return kcu_finish(&c);
	}
	D = in->shape[in->ndim - 1] / 2;
	if (!check_like(&c, in, out, "out", D))
		return kcu_finish(&c);
	rows = D > 0 ? mate_tensor_numel(out) / D : 0;
	din = kcu_stage(&c, in, 1, 0, "input");
	dout = kcu_stage(&c, out, 0, 1, "out");
	if (c.rc != MATE_OK || rows * D == 0)
		return kcu_finish(&c);
	if (in->dtype == MATE_F64)
		act_kernel<double><<<blocks_for(rows * D, 256), 256, 0, c.stream>>>(din->p,
		    din->dtype, dout->p, dout->dtype, rows, D, act);
	else
		act_kernel<float><<<blocks_for(rows * D, 256), 256, 0, c.stream>>>(din->p,
		    din->dtype, dout->p, dout->dtype, rows, D, act);
	return kcu_finish(&c);
}

static int
cuda_silu_and_mul(const mate_tensor *in, const mate_tensor *out, mate_error *err)
{
	return act_and_mul(in, out, ACT_SILU, err);
}

static int
cuda_gelu_and_mul(const mate_tensor *in, const mate_tensor *out, mate_error *err)
{
	return act_and_mul(in, out, ACT_GELU, err);
}

static int
cuda_gelu_tanh_and_mul(const mate_tensor *in, const mate_tensor *out, mate_error *err)
{
	return act_and_mul(in, out, ACT_GELU_TANH, err);
}

/* ---- softmax ------------------------------------------------------------------ */

template <typename T>
static __global__ void
softmax_kernel(const void *in, int in_dt, void *out, int out_dt, int64_t V, T temp,
    const void *temp_p, int temp_dt, int64_t temp_n)
{
	int64_t base = blockIdx.x * V;
	T t = temp, m = (T)-INFINITY, sum = 0;

	if (temp_p != NULL)
		t = kcu_ld<T>(temp_dt, temp_p, temp_n == 1 ? 0 : blockIdx.x);
	for (int64_t i = threadIdx.x; i < V; i += blockDim.x) {
		T x = kcu_ld<T>(in_dt, in, base + i) / t;
		m = x > m ? x : m;
	}
	m = kcu_block_reduce(m, 1);
	for (int64_t i = threadIdx.x; i < V; i += blockDim.x)
		sum += exp(kcu_ld<T>(in_dt, in, base + i) / t - m);
	sum = kcu_block_reduce(sum, 0);
	for (int64_t i = threadIdx.x; i < V; i += blockDim.x)
		kcu_st(out_dt, out, base + i, exp(kcu_ld<T>(in_dt, in, base + i) / t - m) / sum);
}

static int
cuda_softmax(const mate_tensor *in, double temperature, const mate_tensor *temp_t,
    const mate_tensor *out, mate_error *err)
{
	kcu_call c;
	kcu_dev *din, *dout, *dt = NULL;
	int64_t B, V;

	if (kcu_begin(&c, in, err) != MATE_OK || !check_t(&c, in, "logits", 2) ||
	    !check_like(&c, in, out, "out", in->shape[1]))
		return kcu_finish(&c);
	B = in->shape[0], V = in->shape[1];
	if (temp_t != NULL && (!kcu_dtype_ok(temp_t->dtype) ||
	    (mate_tensor_numel(temp_t) != 1 && mate_tensor_numel(temp_t) != B))) {
		KCU_ARG(&c, "temperature: expected 1 or %lld float elements", (long long)B);
		return kcu_finish(&c);
	}
	if (B > INT32_MAX) {
		c.rc = mate_set_error(err, MATE_ERR_LIMIT, "too many rows");
		return kcu_finish(&c);
	}
	din = kcu_stage(&c, in, 1, 0, "logits");
	dout = kcu_stage(&c, out, 0, 1, "out");
	if (temp_t != NULL)
		dt = kcu_stage(&c, temp_t, 1, 0, "temperature");
	if (c.rc != MATE_OK || B * V == 0)
		return kcu_finish(&c);
	if (in->dtype == MATE_F64)
		softmax_kernel<double><<<(unsigned)B, 256, 0, c.stream>>>(din->p, din->dtype,
		    dout->p, dout->dtype, V, temperature, dt ? dt->p : NULL, dt ? dt->dtype : 0,
		    dt ? dt->n : 0);
	else
		softmax_kernel<float><<<(unsigned)B, 256, 0, c.stream>>>(din->p, din->dtype,
		    dout->p, dout->dtype, V, (float)temperature, dt ? dt->p : NULL,
		    dt ? dt->dtype : 0, dt ? dt->n : 0);
	return kcu_finish(&c);
}

/* ---- the table ------------------------------------------------------------------- */

/* By name, in the struct's order (C++ designated initializers: another
 * order, or a name that is not a member, does not compile). */
static const mate_kernels cuda_kernels = {
	.name = "cuda",
	.rmsnorm = cuda_rmsnorm,
	.fused_add_rmsnorm = cuda_fused_add_rmsnorm,
	.gemma_rmsnorm = cuda_gemma_rmsnorm,
	.gemma_fused_add_rmsnorm = cuda_gemma_fused_add_rmsnorm,
	.silu_and_mul = cuda_silu_and_mul,
	.gelu_and_mul = cuda_gelu_and_mul,
	.gelu_tanh_and_mul = cuda_gelu_tanh_and_mul,
	.softmax = cuda_softmax,
	.mm = mate_cuda_mm,
	.bmm = mate_cuda_bmm,
	.bmm_fp8 = mate_cuda_bmm_fp8,
	.mm_fp8 = mate_cuda_mm_fp8,
	.single_decode = mate_cuda_single_decode,
	.single_prefill = mate_cuda_single_prefill,
	.gemm = mate_cuda_gemm,
	.batch_attention = mate_cuda_batch_attention,
};

extern "C" const mate_kernels *
mate_cu_kernels(void)
{
	return &cuda_kernels;
}
