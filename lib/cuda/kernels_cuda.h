/* kernels_cuda.h: what the CUDA kernel files share: staging of host and strided tensors, dtype access, reductions (C++, private). */
#ifndef MATE_KERNELS_CUDA_H_INCLUDED
#define MATE_KERNELS_CUDA_H_INCLUDED

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <math.h>
#include <stdlib.h>

extern "C" {
#include "mate_private.h"
}
#include "kernels.h"
#include "cuda_host.h"

#define KCU_MAX_STAGED 16
#define KCU_MAX_SCRATCH 16

/* A tensor as the device kernels see it: contiguous row-major on the device. */
struct kcu_dev {
	const mate_tensor *src;  /* the caller's tensor */
	void *p;                 /* device address of element 0 */
	int dtype;
	int64_t n;               /* elements */
	void *owned;             /* device copy made for staging, or NULL */
	int out;                 /* written back to src by kcu_finish() */
};

/* One kernel call: its device, stream, staged tensors and scratch. */
struct kcu_call {
	cudaStream_t stream;
	int prev_device;
	int set_device;
	kcu_dev t[KCU_MAX_STAGED];
	int nt;
	void *scratch[KCU_MAX_SCRATCH];
	int nscratch;
	mate_error *err;
	int rc;
};

/* Starts a call: fails with MATE_ERR_UNSUPPORTED without a device; runs on
 * the device and stream of `first` when it is a device tensor. */
int kcu_begin(kcu_call *c, const mate_tensor *first, mate_error *err);
/* Stages t (NULL: returns NULL, no error): in copies its values to the
 * device, out makes kcu_finish() write the result back. NULL with c->rc
 * set on failure. dtype is checked by the caller. */
kcu_dev *kcu_stage(kcu_call *c, const mate_tensor *t, int in, int out, const char *what);
/* Device scratch freed by kcu_finish(); NULL with c->rc set on failure. */
void *kcu_alloc(kcu_call *c, size_t bytes);
/* Copies host memory to new scratch. */
void *kcu_upload(kcu_call *c, const void *host, size_t bytes);
/* Records a CUDA failure (returns 0) or success (1). */
int kcu_ok(kcu_call *c, cudaError_t e, const char *what);
/* Writes outputs back, synchronises, frees, restores the device; the status. */
int kcu_finish(kcu_call *c);
/* Dtypes the device kernels read and write: those the CPU kernels write. */
static inline int
kcu_dtype_ok(int dt)
{
	return mate_kernel_out_dtype_ok(dt);
}
/* Checks a launched kernel. */
int kcu_launched(kcu_call *c, const char *what);
/* Converts n elements between dtypes on the device (through f32 or f64). */
int kcu_convert(kcu_call *c, const void *src, int sdt, void *dst, int ddt, int64_t n);
/* The value of a one-element tensor (host or device) widened to double. */
int kcu_scalar(kcu_call *c, const mate_tensor *t, double def, double *out, const char *what);

/* Host-side argument errors. */
#define KCU_ARG(c, ...) ((c)->rc = mate_set_error((c)->err, MATE_ERR_ARGUMENT, __VA_ARGS__))

/* ---- device dtype access --------------------------------------------------- */

static __device__ __forceinline__ float
kcu_ldf(int dt, const void *p, int64_t i)
{
	switch (dt) {
	case MATE_F32: return ((const float *)p)[i];
	case MATE_F16: return __half2float(((const __half *)p)[i]);
	case MATE_BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
	case MATE_F64: return (float)((const double *)p)[i];
	case MATE_F8_E4M3FN:
		return __half2float(__half(__nv_cvt_fp8_to_halfraw(((const __nv_fp8_storage_t *)p)[i],
		    __NV_E4M3)));
	case MATE_F8_E5M2:
		return __half2float(__half(__nv_cvt_fp8_to_halfraw(((const __nv_fp8_storage_t *)p)[i],
		    __NV_E5M2)));
	default: return __int_as_float(0x7fc00000);
	}
}

static __device__ __forceinline__ void
kcu_stf(int dt, void *p, int64_t i, float v)
{
	switch (dt) {
	case MATE_F32: ((float *)p)[i] = v; break;
	case MATE_F16: ((__half *)p)[i] = __float2half_rn(v); break;
	case MATE_BF16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v); break;
	case MATE_F64: ((double *)p)[i] = v; break;
	case MATE_F8_E4M3FN:
		((__nv_fp8_storage_t *)p)[i] = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
		break;
	case MATE_F8_E5M2:
		((__nv_fp8_storage_t *)p)[i] = __nv_cvt_float_to_fp8(v, __NV_NOSAT, __NV_E5M2);
		break;
	default: break;
	}
}

template <typename T> static __device__ __forceinline__ T kcu_ld(int dt, const void *p, int64_t i);
template <> __device__ __forceinline__ float
kcu_ld<float>(int dt, const void *p, int64_t i)
{
	return kcu_ldf(dt, p, i);
}
template <> __device__ __forceinline__ double
kcu_ld<double>(int dt, const void *p, int64_t i)
{
	return dt == MATE_F64 ? ((const double *)p)[i] : (double)kcu_ldf(dt, p, i);
}

static __device__ __forceinline__ void
kcu_st(int dt, void *p, int64_t i, float v)
{
	kcu_stf(dt, p, i, v);
}
static __device__ __forceinline__ void
kcu_st(int dt, void *p, int64_t i, double v)
{
	if (dt == MATE_F64)
		((double *)p)[i] = v;
	else
		kcu_stf(dt, p, i, (float)v);
}

/* ---- block reductions (blockDim.x a multiple of 32, at most 1024) ------------ */

template <typename T>
static __device__ __forceinline__ T
kcu_warp_sum(T v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

template <typename T>
static __device__ __forceinline__ T
kcu_warp_max(T v)
{
	for (int o = 16; o > 0; o >>= 1) {
		T w = __shfl_xor_sync(0xffffffffu, v, o);
		v = w > v ? w : v;
	}
	return v;
}

/* Sum (max: is_max) over the block, returned to every thread. */
template <typename T>
static __device__ T
kcu_block_reduce(T v, int is_max)
{
	__shared__ T part[32];
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;

	v = is_max ? kcu_warp_max(v) : kcu_warp_sum(v);
	__syncthreads();   /* part[] may still be read from a previous call */
	if (lane == 0)
		part[warp] = v;
	__syncthreads();
	v = lane < nw ? part[lane] : (is_max ? (T)-INFINITY : (T)0);
	return is_max ? kcu_warp_max(v) : kcu_warp_sum(v);
}

/* ---- position tables of the attention kernels ------------------------------ */

/* The RoPE table of positions pos0 .. pos0 + npos - 1, (npos, D/2, {cos,
 * sin}) of T, built on the host and uploaded; NULL with c->rc set on failure. */
template <typename T>
static T *
kcu_rope_table(kcu_call *c, const mate_attn_params *p, int64_t pos0, int64_t npos, int64_t D)
{
	int64_t half = D / 2;
	double scale = p->rope_scale > 0 ? p->rope_scale : 1.0;
	double theta = p->rope_theta > 0 ? p->rope_theta : 1e4;
	size_t n = (size_t)(npos * half * 2 + 1);
	T *tab = (T *)malloc(sizeof(T) * n);
	void *dev;

	if (tab == NULL) {
		c->rc = mate_set_error(c->err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	for (int64_t q = 0; q < npos; q++)
		for (int64_t i = 0; i < half; i++) {
			double ang = (double)(q + pos0) / scale *
			    pow(theta, -2.0 * (double)i / (double)D);
			tab[(q * half + i) * 2] = (T)cos(ang);
			tab[(q * half + i) * 2 + 1] = (T)sin(ang);
		}
	dev = kcu_upload(c, tab, sizeof(T) * n);
	free(tab);
	return (T *)dev;
}

/* The ALiBi slopes of heads heads, as T, uploaded; NULL with c->rc set on
 * failure. */
template <typename T>
static T *
kcu_alibi_slopes(kcu_call *c, int64_t heads)
{
	T *s = (T *)malloc(sizeof(T) * (size_t)heads);
	void *dev;

	if (s == NULL) {
		c->rc = mate_set_error(c->err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	for (int64_t h = 0; h < heads; h++)
		s[h] = (T)mate_alibi_slope(h, heads);
	dev = kcu_upload(c, s, sizeof(T) * (size_t)heads);
	free(s);
	return (T *)dev;
}

/* Entry points of the other CUDA files. */
int mate_cuda_mm(const mate_tensor *, const mate_tensor *, const mate_tensor *, mate_error *);
int mate_cuda_bmm(const mate_tensor *, const mate_tensor *, const mate_tensor *, mate_error *);
int mate_cuda_bmm_fp8(const mate_tensor *, const mate_tensor *, const mate_tensor *,
    const mate_tensor *, const mate_tensor *, mate_error *);
int mate_cuda_mm_fp8(const mate_tensor *, const mate_tensor *, const mate_tensor *,
    const mate_tensor *, mate_error *);
int mate_cuda_gemm(const mate_gemm_call *, mate_error *);
int mate_cuda_single_decode(const mate_tensor *, const mate_tensor *, const mate_tensor *,
    const mate_attn_params *, const mate_tensor *, const mate_tensor *, mate_error *);
int mate_cuda_single_prefill(const mate_tensor *, const mate_tensor *, const mate_tensor *,
    const mate_attn_params *, const mate_tensor *, const mate_tensor *, mate_error *);
int mate_cuda_batch_attention(const struct mate_batch_attn *, const mate_attn_params *,
    mate_error *);

#endif /* MATE_KERNELS_CUDA_H_INCLUDED */
