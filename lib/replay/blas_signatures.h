/* blas_signatures.h: the parameter lists mate-record records for BLAS and cuBLAS calls, which their replay handlers implement (private). */
#ifndef MATE_BLAS_SIGNATURES_H_INCLUDED
#define MATE_BLAS_SIGNATURES_H_INCLUDED

#define MATE_SIG_CBLAS_GEMM \
	"(Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)"
#define MATE_SIG_F77_GEMM \
	"(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)"
#define MATE_SIG_CUBLAS_SGEMM \
	"(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)"
#define MATE_SIG_CUBLAS_GEMMEX \
	"(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, " \
	"ldc, computeType, algo)"
#define MATE_SIG_CUBLAS_BATCHED \
	"(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, " \
	"beta, C, Ctype, ldc, strideC, batchCount, computeType, algo)"

#endif /* MATE_BLAS_SIGNATURES_H_INCLUDED */
