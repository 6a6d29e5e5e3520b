/* fake_cuda.h: the few CUDA runtime and cuBLAS types the test-only fake libraries and their test program use. */
#ifndef FAKE_CUDA_H_INCLUDED
#define FAKE_CUDA_H_INCLUDED

#include <stddef.h>

typedef int cudaError_t;
typedef void *cudaStream_t;
enum {
	cudaSuccess = 0,
	cudaErrorInvalidValue = 1,
	cudaErrorMemoryAllocation = 2,
	cudaErrorInvalidMemcpyDirection = 21
};
enum { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };

struct fake_dim3 {
	unsigned x, y, z;
};
/* A fake kernel: a host function run by cudaLaunchKernel. */
typedef void (*fake_kernel)(void **args, struct fake_dim3 grid, struct fake_dim3 block);

cudaError_t cudaMalloc(void **p, size_t size);
cudaError_t cudaMallocManaged(void **p, size_t size, unsigned flags);
cudaError_t cudaMallocHost(void **p, size_t size);
cudaError_t cudaHostAlloc(void **p, size_t size, unsigned flags);
cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s);
cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height);
cudaError_t cudaFree(void *p);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaFreeAsync(void *p, cudaStream_t s);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, int kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, cudaStream_t s);
cudaError_t cudaMemcpy2D(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h,
    int kind);
cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamIsCapturing(cudaStream_t s, int *status);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaGetDevice(int *d);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaRuntimeGetVersion(int *v);
cudaError_t cudaDriverGetVersion(int *v);
cudaError_t cudaGetDeviceProperties(void *prop, int d);
const char *cudaGetErrorString(cudaError_t e);
cudaError_t cudaLaunchKernel(const void *func, struct fake_dim3 grid, struct fake_dim3 block,
    void **args, size_t shmem, cudaStream_t s);
void **__cudaRegisterFatBinary(void *fatbin);
void __cudaRegisterFatBinaryEnd(void **h);
void __cudaUnregisterFatBinary(void **h);
void __cudaRegisterFunction(void **h, const char *host, char *dev, const char *name, int limit,
    void *tid, void *bid, void *bdim, void *gdim, int *wsize);
void __cudaRegisterVar(void **h, char *host, char *dev, const char *name, int ext, size_t size,
    int constant, int global);

/* cuBLAS */
typedef int cublasStatus_t;
typedef struct fake_cublas *cublasHandle_t;
enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 };
enum { CUBLAS_POINTER_MODE_HOST = 0, CUBLAS_POINTER_MODE_DEVICE = 1 };
enum { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum { CUBLAS_COMPUTE_16F = 64, CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_64F = 70,
	CUBLAS_COMPUTE_32F_FAST_TF32 = 77 };
enum { CUBLAS_GEMM_DEFAULT = -1 };

cublasStatus_t cublasCreate_v2(cublasHandle_t *h);
cublasStatus_t cublasDestroy_v2(cublasHandle_t h);
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s);
cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t *s);
cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, int mode);
cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t h, int *mode);
cublasStatus_t cublasSgemm_v2(cublasHandle_t h, int ta, int tb, int m, int n, int k,
    const float *alpha, const float *a, int lda, const float *b, int ldb, const float *beta,
    float *c, int ldc);
cublasStatus_t cublasGemmEx(cublasHandle_t h, int ta, int tb, int m, int n, int k,
    const void *alpha, const void *a, int at, int lda, const void *b, int bt, int ldb,
    const void *beta, void *c, int ct, int ldc, int compute, int algo);
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, int ta, int tb, int m, int n, int k,
    const void *alpha, const void *a, int at, int lda, long long sa, const void *b, int bt,
    int ldb, long long sb, const void *beta, void *c, int ct, int ldc, long long sc, int batch,
    int compute, int algo);

#endif /* FAKE_CUDA_H_INCLUDED */
