/* blas.h: OpenBLAS, opened on first use (private). */
#ifndef MATE_BLAS_H
#define MATE_BLAS_H

#include <cblas.h>
#include <f77blas.h>

#include "mate_core.h"

/* The BLAS functions the CPU kernels call, from OpenBLAS (or $MATE_BLAS). */
struct mate_blas {
	__typeof__(&cblas_sgemm) cblas_sgemm;
	__typeof__(&cblas_dgemm) cblas_dgemm;
	__typeof__(&sgemm_) sgemm_;
	__typeof__(&dgemm_) dgemm_;
};

/*! mate_blas() : the table, OpenBLAS being loaded on the first call; NULL
 * with err set (MATE_ERR_UNSUPPORTED) when it cannot be. Thread-safe. */
const struct mate_blas *mate_blas(mate_error *err);

#endif
