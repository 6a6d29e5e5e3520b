/* cudart.c: a test-only libcudart.so.13 that computes on the CPU: "device" memory is host memory, kernels are host functions. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

/* Allocations above this fail with cudaErrorMemoryAllocation. */
#define FAKE_DEVICE_MEMORY (UINT64_C(1) << 34)

static void *
fake_alloc(size_t size)
{
	void *p = NULL;

	if (size > FAKE_DEVICE_MEMORY || posix_memalign(&p, 256, size ? size : 1) != 0)
		return NULL;
	return p;
}

cudaError_t
cudaMalloc(void **p, size_t size)
{
	if (p == NULL)
		return cudaErrorInvalidValue;
	return (*p = fake_alloc(size)) != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t
cudaMallocManaged(void **p, size_t size, unsigned flags)
{
	(void)flags;
	return cudaMalloc(p, size);
}

cudaError_t
cudaMallocHost(void **p, size_t size)
{
	return cudaMalloc(p, size);
}

cudaError_t
cudaHostAlloc(void **p, size_t size, unsigned flags)
{
	(void)flags;
	return cudaMalloc(p, size);
}

cudaError_t
cudaMallocAsync(void **p, size_t size, cudaStream_t s)
{
	(void)s;
	return cudaMalloc(p, size);
}

cudaError_t
cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
	*pitch = (width + 255) / 256 * 256;
	return cudaMalloc(p, *pitch * height);
}

cudaError_t
cudaFree(void *p)
{
	free(p);
	return cudaSuccess;
}

cudaError_t
cudaFreeHost(void *p)
{
	free(p);
	return cudaSuccess;
}

cudaError_t
cudaFreeAsync(void *p, cudaStream_t s)
{
	(void)s;
	free(p);
	return cudaSuccess;
}

cudaError_t
cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
	if (kind < 0 || kind > 4)   /* as the real runtime: not a cudaMemcpyKind */
		return cudaErrorInvalidMemcpyDirection;
	if (n > 0)
		memmove(dst, src, n);
	return cudaSuccess;
}

cudaError_t
cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, cudaStream_t s)
{
	(void)s;
	return cudaMemcpy(dst, src, n, kind);
}

cudaError_t
cudaMemcpy2D(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h, int kind)
{
	(void)kind;
	for (size_t i = 0; i < h; i++)
		memmove((char *)dst + i * dp, (const char *)src + i * sp, w);
	return cudaSuccess;
}

cudaError_t
cudaStreamCreate(cudaStream_t *s)
{
	return (*s = malloc(16)) != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t
cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
	(void)flags;
	return cudaStreamCreate(s);
}

cudaError_t
cudaStreamDestroy(cudaStream_t s)
{
	free(s);
	return cudaSuccess;
}

cudaError_t
cudaStreamSynchronize(cudaStream_t s)
{
	(void)s;
	return cudaSuccess;
}

cudaError_t
cudaStreamIsCapturing(cudaStream_t s, int *status)
{
	(void)s;
	*status = 0;
	return cudaSuccess;
}

cudaError_t
cudaDeviceSynchronize(void)
{
	return cudaSuccess;
}

cudaError_t
cudaGetDeviceCount(int *n)
{
	*n = 1;
	return cudaSuccess;
}

cudaError_t
cudaGetDevice(int *d)
{
	*d = 0;
	return cudaSuccess;
}

cudaError_t
cudaSetDevice(int d)
{
	return d == 0 ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t
cudaRuntimeGetVersion(int *v)
{
	*v = 13000;
	return cudaSuccess;
}

cudaError_t
cudaDriverGetVersion(int *v)
{
	*v = 13000;
	return cudaSuccess;
}

cudaError_t
cudaGetDeviceProperties(void *prop, int d)
{
	(void)prop;
	(void)d;
	return cudaErrorInvalidValue;
}

const char *
cudaGetErrorString(cudaError_t e)
{
	return e == cudaSuccess ? "no error" : e == cudaErrorMemoryAllocation ?
	    "out of memory" : "invalid argument";
}

/* A "kernel" is a host function taking the launch's arguments. */
cudaError_t
cudaLaunchKernel(const void *func, struct fake_dim3 grid, struct fake_dim3 block, void **args,
    size_t shmem, cudaStream_t s)
{
	fake_kernel k;

	(void)shmem;
	(void)s;
	if (func == NULL)
		return cudaErrorInvalidValue;
	memcpy(&k, &func, sizeof(k));
	k(args, grid, block);
	return cudaSuccess;
}

/* What nvcc-compiled objects call at load time (libmate's CUDA kernels in
 * a CUDA build): accepted and ignored. */
static void *fatbin_handle[4];

void **
__cudaRegisterFatBinary(void *fatbin)
{
	(void)fatbin;
	return fatbin_handle;
}

void __cudaRegisterFatBinaryEnd(void **h) { (void)h; }
void __cudaUnregisterFatBinary(void **h) { (void)h; }

void
__cudaRegisterFunction(void **h, const char *host, char *dev, const char *name, int limit,
    void *tid, void *bid, void *bdim, void *gdim, int *wsize)
{
	(void)h; (void)host; (void)dev; (void)name; (void)limit; (void)tid; (void)bid;
	(void)bdim; (void)gdim; (void)wsize;
}

void
__cudaRegisterVar(void **h, char *host, char *dev, const char *name, int ext, size_t size,
    int constant, int global)
{
	(void)h; (void)host; (void)dev; (void)name; (void)ext; (void)size; (void)constant;
	(void)global;
}
