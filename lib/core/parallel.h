/* parallel.h: a small pthread parallel-for used by the CPU kernels (private). */
#ifndef MATE_PARALLEL_H_INCLUDED
#define MATE_PARALLEL_H_INCLUDED

#include <stdint.h>

/* Runs fn(ctx, begin, end) over [0, n) split into contiguous chunks. */
typedef void (*mate_parallel_fn)(void *ctx, int64_t begin, int64_t end);

/*! mate_parallel_threads() : threads the kernels use: $MATE_NUM_THREADS when
 * set (1..256), else the online CPUs (at most 64). */
int mate_parallel_threads(void);

/*! mate_parallel_for() : calls fn on chunks of [0, n), in parallel when the
 * work (n * cost_per_item, in rough flops) is worth a thread start, else
 * once on the calling thread. Returns when every chunk is done. fn must not
 * fail; a chunk that needs scratch memory records its own failure in ctx. */
void mate_parallel_for(int64_t n, int64_t cost_per_item, mate_parallel_fn fn, void *ctx);

#endif /* MATE_PARALLEL_H_INCLUDED */
