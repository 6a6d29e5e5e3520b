/* record-cuda-real.c: a real CUDA program for the GPU test of mate-record: cudaMalloc, copies and cuBLAS GEMMs (Sgemm, GemmEx in f16, strided batched) through the shared runtime. Exits 77 without a device. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x) do { if ((x) != 0) { fprintf(stderr, "%s failed\n", #x); return 1; } } while (0)

/* f32 -> f16, rounding to nearest even (normal numbers and zero only). */
static uint16_t
to_half(float f)
{
	uint32_t x, sign, mant, hm, rem;
	int e;

	memcpy(&x, &f, 4);
	sign = (x >> 16) & 0x8000;
	if ((x & 0x7fffffff) == 0)
		return (uint16_t)sign;
	e = (int)((x >> 23) & 0xff) - 127 + 15;
	mant = x & 0x7fffff;
	hm = mant >> 13;
	rem = mant & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (hm & 1)))
		hm++;
	if (hm == 0x400) {
		hm = 0;
		e++;
	}
	return (uint16_t)(sign | (uint32_t)e << 10 | hm);
}

int
main(void)
{
	enum { M = 96, N = 80, K = 64 };
	float *ha = malloc(sizeof(float) * M * K), *hb = malloc(sizeof(float) * K * N);
	float *hc = malloc(sizeof(float) * M * N), alpha = 1.0f, beta = 0.0f;
	uint16_t *h16 = malloc(sizeof(uint16_t) * M * K);
	float *da, *db, *dc;
	uint16_t *d16;
	cublasHandle_t h;
	cudaStream_t s;
	double sum = 0;
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		printf("no CUDA device\n");
		return 77;
	}
	for (int i = 0; i < M * K; i++) {
		ha[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
		h16[i] = to_half(ha[i]);
	}
	for (int i = 0; i < K * N; i++)
		hb[i] = (float)((i * 53) % 97) / 48.0f - 1.0f;
	CK(cudaMalloc((void **)&da, sizeof(float) * M * K));
	CK(cudaMalloc((void **)&db, sizeof(float) * K * N));
	CK(cudaMalloc((void **)&dc, sizeof(float) * M * N * 4));
	CK(cudaMalloc((void **)&d16, sizeof(uint16_t) * M * K));
	CK(cudaStreamCreate(&s));
	CK(cudaMemcpy(da, ha, sizeof(float) * M * K, cudaMemcpyHostToDevice));
	CK(cudaMemcpyAsync(db, hb, sizeof(float) * K * N, cudaMemcpyHostToDevice, s));
	CK(cudaMemcpy(d16, h16, sizeof(uint16_t) * M * K, cudaMemcpyHostToDevice));
	CK(cublasCreate(&h));
	CK(cublasSetStream(h, s));
	CK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &alpha, da, M, db, K, &beta, dc, M));
	beta = 0.5f;
	CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &alpha, d16, CUDA_R_16F, M, db,
	    CUDA_R_32F, K, &beta, dc, CUDA_R_32F, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	CK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 16, 16, 16, &alpha, da, CUDA_R_32F,
	    16, 256, db, CUDA_R_32F, 16, 256, &beta, dc + M * N, CUDA_R_32F, 16, 256, 3,
	    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	CK(cudaMemcpyAsync(hc, dc, sizeof(float) * M * N, cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	for (int i = 0; i < M * N; i++)
		sum += hc[i];
	CK(cublasDestroy(h));
	CK(cudaStreamDestroy(s));
	CK(cudaFree(d16));
	CK(cudaFree(dc));
	CK(cudaFree(db));
	CK(cudaFree(da));
	printf("checksum %.6f\n", sum);
	free(ha);
	free(hb);
	free(hc);
	free(h16);
	return 0;
}
