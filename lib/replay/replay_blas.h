/* replay_blas.h: registration of the replay handlers for recorded BLAS and cuBLAS calls (private). */
#ifndef MATE_REPLAY_BLAS_H_INCLUDED
#define MATE_REPLAY_BLAS_H_INCLUDED

#include "mate_replay.h"

/* Registers cblas_sgemm, cblas_dgemm, sgemm_, dgemm_, cublasSgemm_v2,
 * cublasGemmEx and cublasGemmStridedBatchedEx (any module) on r. */
int mate_replay_register_blas(mate_replay *r, mate_error *err) MATE_HIDDEN;

#endif /* MATE_REPLAY_BLAS_H_INCLUDED */
