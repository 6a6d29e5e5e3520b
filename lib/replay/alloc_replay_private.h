/* alloc_replay_private.h: the allocator interface of the allocation replay (alloc_replay.c, alloc_replay_cuda.c). */
#ifndef MATE_ALLOC_REPLAY_PRIVATE_H_INCLUDED
#define MATE_ALLOC_REPLAY_PRIVATE_H_INCLUDED

#include "mate_private.h"
#include "mate_record.h"

/* An allocator the replay runs against. The replay never runs two calls at
 * once, so an allocator needs no locking of its own. */
struct mate_allocator {
	const char *name;
	/* MATE_OK when it can run on this machine, else a status with err set. */
	int (*available)(mate_error *err);
	/* State for a replay whose logged streams are streams[0..nstreams). */
	void *(*create)(const uint64_t *streams, size_t nstreams, mate_error *err);
	/* size bytes on logged stream index `stream`; 0 or -1 (failure). */
	int (*alloc)(void *st, uint64_t size, size_t stream, void **out);
	void (*release)(void *st, void *p, uint64_t size, size_t stream);
	/* Waits for outstanding work (device allocators); MATE_OK or a status. */
	int (*finish)(void *st, mate_error *err);
	/* The most memory it held from its upstream at any time, in bytes. */
	uint64_t (*peak_footprint)(void *st);
	void (*destroy)(void *st);
};

/* What an allocator holds from its upstream, now and at most, in bytes. */
struct mate_alloc_usage {
	uint64_t cur, peak;
};

/* Counts bytes taken from the upstream. */
static inline void
mate_alloc_usage_take(struct mate_alloc_usage *u, uint64_t bytes)
{
	u->cur += bytes;
	if (u->cur > u->peak)
		u->peak = u->cur;
}

#ifdef HAVE_CUDA
/* In the CUDA module (alloc_replay_cuda.c). */
extern const struct mate_allocator mate_allocator_cuda MATE_HIDDEN;
extern const struct mate_allocator mate_allocator_cuda_async MATE_HIDDEN;
/* In libmate (cuda_module.c): "cuda" or "cuda-async" from the module, or
 * NULL with err set when it cannot be loaded. */
const struct mate_allocator *mate_alloc_replay_cuda(const char *name, mate_error *err) MATE_HIDDEN;
#endif

#endif /* MATE_ALLOC_REPLAY_PRIVATE_H_INCLUDED */
