/* failing-mm.h: a kernel table whose mm succeeds once (the warm-up) and then fails, for tests/replay-gemm-fail. */
#ifndef MATE_TESTS_FAILING_MM_H
#define MATE_TESTS_FAILING_MM_H
#include "kernels.h"

const mate_kernels *failing_mm_kernels(void);
#define BENCH_KERNELS failing_mm_kernels()
#endif
