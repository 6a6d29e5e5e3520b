/* backend_cuda.cu: the CUDA backend (in mate-cuda.so): device count, stream-local device-to-host copies, description. */
#include "config.h"
#include "backend.h"
#include "kernels.h"
#include "cuda_module.h"
#include "cuda_host.h"

#include <cuda_runtime.h>
#include <stdio.h>

static int
cuda_device_count(void)
{
	static int count = -1;
	if (count < 0) {
		int n = 0;
		count = cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
	}
	return count;
}

static int
cuda_copy_to_host(void *dst, const void *src, size_t n, void *stream)
{
	cudaStream_t s = (cudaStream_t)stream;
	if (cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, s) != cudaSuccess)
		return -1;
	return cudaStreamSynchronize(s) == cudaSuccess ? 0 : -1;
}

static void
cuda_describe(char *buf, size_t len)
{
	int rt = 0, drv = 0, n = cuda_device_count();
	cudaRuntimeGetVersion(&rt);
	cudaDriverGetVersion(&drv);
	int off = snprintf(buf, len, "CUDA runtime %d.%d, driver %d.%d, %d device(s)",
	    rt / 1000, (rt % 1000) / 10, drv / 1000, (drv % 1000) / 10, n);
	for (int i = 0; i < n && off > 0 && (size_t)off < len; i++) {
		cudaDeviceProp p;
		if (cudaGetDeviceProperties(&p, i) == cudaSuccess)
			off += snprintf(buf + off, len - off, "; cuda:%d %s", i, p.name);
	}
}

static int
cuda_stream_capturing(void *stream)
{
	cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;

	if (cudaStreamIsCapturing((cudaStream_t)stream, &st) != cudaSuccess)
		return 0;
	return st != cudaStreamCaptureStatusNone;
}

static const mate_backend cuda_backend = {
	.name = "cuda",
	.device_count = cuda_device_count,
	.copy_to_host = cuda_copy_to_host,
	.describe = cuda_describe,
	.kernels = mate_cu_kernels,
	.stream_capturing = cuda_stream_capturing,
};

extern "C" const mate_backend *
mate_cu_backend(void)
{
	return &cuda_backend;
}
