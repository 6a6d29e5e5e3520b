/* record-cuda-prog.c: a CUDA program for the mate-record tests: allocations of every kind, copies, a kernel launch, cuBLAS GEMMs, a second thread and a forked child; with RECORD_CUDA_FAIL, a cuBLAS call or a copy that fails; with RECORD_CUDA_TF32, its GemmEx in TF32; with RECORD_CUDA_BF16, one more GemmEx of bfloat16 A, B and C. Linked against the fake libraries (or the real ones on a GPU). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_cuda.h"

#define CHECK_CUDA(x) do { if ((x) != 0) { fprintf(stderr, "%s failed\n", #x); exit(1); } } while (0)

/* Kernel: x[i] *= s for i < n (args: float *x, float s, int n). Exported by
 * name so that the recorder can name it. */
void saxpy_kernel(void **args, struct fake_dim3 grid, struct fake_dim3 block);

void
saxpy_kernel(void **args, struct fake_dim3 grid, struct fake_dim3 block)
{
	float *x = *(float **)args[0], s = *(float *)args[1];
	int n = *(int *)args[2];

	(void)grid;
	(void)block;
	for (int i = 0; i < n; i++)
		x[i] *= s;
}

static uint16_t
to_half(float f)
{
	/* exact for the small integers and halves used here */
	uint32_t u;
	int e;

	memcpy(&u, &f, 4);
	if (f == 0)
		return (uint16_t)((u >> 16) & 0x8000);
	e = (int)((u >> 23) & 0xff) - 127 + 15;
	return (uint16_t)(((u >> 16) & 0x8000) | (uint32_t)(e << 10) | ((u >> 13) & 0x3ff));
}

static void
fill(float *v, int n, int seed)
{
	for (int i = 0; i < n; i++)
		v[i] = (float)((i * 7 + seed * 13) % 17 - 8) / 4.0f;
}

static void *
other_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5; i++) {
		void *p;
		CHECK_CUDA(cudaMalloc(&p, 1000 + (size_t)i));
		CHECK_CUDA(cudaFree(p));
	}
	return NULL;
}

/* RECORD_CUDA_FAIL names the calls that fail: "cublas" (a cublasGemmEx after the others),
 * "memcpy" (a cudaMemcpy after the GEMMs), or both. */
static int
failing(const char *what)
{
	const char *s = getenv("RECORD_CUDA_FAIL");

	return s != NULL && strstr(s, what) != NULL;
}

static void
gemms(float *dA, float *dB, float *dC, cudaStream_t s)
{
	cublasHandle_t h;
	float alpha = 1.5f, beta = 0.0f, *dalpha, hA16[32 * 64], hb[8 * 8 * 3];
	uint16_t a16[32 * 64];
	int tf32;
	void *dA16, *dBat;

	CHECK_CUDA(cublasCreate_v2(&h));
	CHECK_CUDA(cublasSetStream_v2(h, s));
	/* C (64x48) = 1.5 A (64x32) B (32x48), column major */
	CHECK_CUDA(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 48, 32, &alpha, dA, 64, dB, 32,
	    &beta, dC, 64));
	/* GemmEx: A as f16 stored transposed (32x64), accumulate into C with beta 1 */
	fill(hA16, 32 * 64, 3);
	for (int i = 0; i < 32 * 64; i++)
		a16[i] = to_half(hA16[i]);
	/* RECORD_CUDA_TF32=1: A in float32 and CUBLAS_COMPUTE_32F_FAST_TF32, as PyTorch's
	 * float32 matmuls under allow_tf32 (the operands rounded to TF32 on the way in) */
	tf32 = getenv("RECORD_CUDA_TF32") != NULL;
	CHECK_CUDA(cudaMalloc(&dA16, tf32 ? sizeof(hA16) : sizeof(a16)));
	CHECK_CUDA(cudaMemcpy(dA16, tf32 ? (void *)hA16 : (void *)a16, tf32 ? sizeof(hA16) :
	    sizeof(a16), cudaMemcpyHostToDevice));
	beta = 1.0f;
	CHECK_CUDA(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 64, 48, 32, &alpha, dA16,
	    tf32 ? CUDA_R_32F : CUDA_R_16F, 32, dB, CUDA_R_32F, 32, &beta, dC, CUDA_R_32F, 64,
	    tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	/* strided batched, alpha and beta in device memory */
	fill(hb, 8 * 8 * 3, 5);
	CHECK_CUDA(cudaMalloc(&dBat, 3 * 3 * 64 * sizeof(float)));
	CHECK_CUDA(cudaMemcpy(dBat, hb, sizeof(hb), cudaMemcpyHostToDevice));
	CHECK_CUDA(cudaMemcpy((float *)dBat + 192, hb, sizeof(hb), cudaMemcpyHostToDevice));
	CHECK_CUDA(cudaMalloc((void **)&dalpha, 2 * sizeof(float)));
	CHECK_CUDA(cudaMemcpy(dalpha, (float[2]){ 0.5f, 0.0f }, 2 * sizeof(float), cudaMemcpyHostToDevice));
	CHECK_CUDA(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE));
	CHECK_CUDA(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_T, 8, 8, 8, dalpha,
	    dBat, CUDA_R_32F, 8, 64, (float *)dBat + 192, CUDA_R_32F, 8, 64, dalpha + 1,
	    (float *)dBat + 384, CUDA_R_32F, 8, 64, 3, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	CHECK_CUDA(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST));
	if (getenv("RECORD_CUDA_BF16") != NULL) {
		/* A, B and C in bfloat16, summed in float: a torch.bfloat16 matmul's call */
		static uint16_t h16[64 * 32 + 32 * 48 + 64 * 48];
		void *d16;
		const float one = 1.0f, half = 0.5f;
		fill(hb, 8 * 8 * 3, 7);
		for (size_t i = 0; i < sizeof(h16) / sizeof(h16[0]); i++) {
			float x = hb[i % (8 * 8 * 3)] * (float)(1 + i % 5);
			uint32_t u;
			memcpy(&u, &x, sizeof(u));
			h16[i] = (uint16_t)(u >> 16);
		}
		CHECK_CUDA(cudaMalloc(&d16, sizeof(h16)));
		CHECK_CUDA(cudaMemcpy(d16, h16, sizeof(h16), cudaMemcpyHostToDevice));
		CHECK_CUDA(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 48, 32, &one, d16,
		    CUDA_R_16BF, 64, (uint16_t *)d16 + 64 * 32, CUDA_R_16BF, 32, &half,
		    (uint16_t *)d16 + 64 * 32 + 32 * 48, CUDA_R_16BF, 64, CUBLAS_COMPUTE_32F,
		    CUBLAS_GEMM_DEFAULT));
		CHECK_CUDA(cudaFree(d16));
	}
	if (failing("cublas"))   /* a compute type the fake does not have */
		fprintf(stderr, "cublasGemmEx: status %d\n", cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N,
		    64, 48, 32, &alpha, dA, CUDA_R_32F, 64, dB, CUDA_R_32F, 32, &beta, dC, CUDA_R_32F, 64,
		    CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT));
	CHECK_CUDA(cudaFree(dalpha));
	CHECK_CUDA(cudaFree(dBat));
	CHECK_CUDA(cudaFree(dA16));
	CHECK_CUDA(cublasDestroy_v2(h));
}

/* With RECORD_CUDA_HOLD=path, waits (up to 30 s) for that file to appear,
 * its device memory still allocated, so that a monitor can look at it. */
static void
hold(void)
{
	const char *path = getenv("RECORD_CUDA_HOLD");

	for (int i = 0; path != NULL && i < 3000 && access(path, F_OK) != 0; i++)
		usleep(10000);
}

static void
other_allocations(cudaStream_t s)
{
	void *p, *q, *r, *t;
	size_t pitch;

	CHECK_CUDA(cudaMallocAsync(&p, 3000, s));
	CHECK_CUDA(cudaFreeAsync(p, s));
	CHECK_CUDA(cudaMallocManaged(&q, 5000, 1));
	CHECK_CUDA(cudaMallocHost(&r, 7000));
	CHECK_CUDA(cudaMallocPitch(&t, &pitch, 100, 10));
	CHECK_CUDA(cudaFree(t));
	CHECK_CUDA(cudaFreeHost(r));
	CHECK_CUDA(cudaFree(q));
}

int
main(void)
{
	float hA[64 * 32], hB[32 * 48], hC[64 * 48], scale = 0.5f;
	float *dA, *dB, *dC;
	void *huge, *args[3];
	int n = 64 * 32;
	double sum = 0;
	cudaStream_t s;
	pthread_t th;
	pid_t pid;
	int st;

	fill(hA, 64 * 32, 1);
	fill(hB, 32 * 48, 2);
	if (getenv("RECORD_CUDA_TF32") != NULL)   /* thirds: 23 bits of mantissa, not TF32's 10 */
		for (int i = 0; i < 32 * 48; i++)
			hB[i] /= 3.0f;
	CHECK_CUDA(cudaMalloc((void **)&dA, sizeof(hA)));
	CHECK_CUDA(cudaMalloc((void **)&dB, sizeof(hB)));
	CHECK_CUDA(cudaMalloc((void **)&dC, sizeof(hC)));
	if (cudaMalloc(&huge, (size_t)1 << 40) == cudaSuccess)
		return 1;
	CHECK_CUDA(cudaStreamCreate(&s));
	CHECK_CUDA(cudaMemcpy(dA, hA, sizeof(hA), cudaMemcpyHostToDevice));
	CHECK_CUDA(cudaMemcpyAsync(dB, hB, sizeof(hB), cudaMemcpyHostToDevice, s));
	args[0] = &dA;
	args[1] = &scale;
	args[2] = &n;
	CHECK_CUDA(cudaLaunchKernel((const void *)saxpy_kernel, (struct fake_dim3){ 8, 1, 1 },
	    (struct fake_dim3){ 256, 1, 1 }, args, 0, s));
	gemms(dA, dB, dC, s);
	if (failing("memcpy"))   /* not a cudaMemcpyKind */
		fprintf(stderr, "cudaMemcpy: error %d\n", cudaMemcpy(hC, dC, sizeof(hC), 7));
	CHECK_CUDA(cudaMemcpy(hC, dC, sizeof(hC), cudaMemcpyDeviceToHost));
	other_allocations(s);
	if (pthread_create(&th, NULL, other_thread, NULL) != 0 || pthread_join(th, NULL) != 0)
		return 1;
	fflush(stdout);
	if ((pid = fork()) == 0) {
		void *p;
		CHECK_CUDA(cudaMalloc(&p, 4096));
		CHECK_CUDA(cudaFree(p));
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || st != 0)
		return 1;
	hold();
	CHECK_CUDA(cudaFree(dC));
	CHECK_CUDA(cudaFree(dB));
	CHECK_CUDA(cudaFree(dA));
	CHECK_CUDA(cudaStreamDestroy(s));
	for (int i = 0; i < 64 * 48; i++)
		sum += hC[i];
	printf("checksum %.6f\n", sum);
	return 0;
}
