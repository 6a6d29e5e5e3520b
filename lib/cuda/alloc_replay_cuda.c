/* alloc_replay_cuda.c: the CUDA allocators of the allocation replay: cudaMalloc/cudaFree and the stream-ordered pool (cudaMallocAsync). */
#include "alloc_replay_private.h"
#include "cuda_host.h"

#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

struct cuda_state {
	struct mate_alloc_usage use; /* cuda: requested bytes rounded to 512 */
	cudaStream_t *streams;       /* cuda-async: one per logged stream */
	size_t nstreams;
	cudaMemPool_t pool;
};

static int
cuda_available(mate_error *err)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess || n == 0)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "the CUDA allocators need a "
		    "CUDA device: %s", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
	return MATE_OK;
}

static int
cuda_status(cudaError_t e, const char *what, mate_error *err)
{
	if (e == cudaSuccess)
		return MATE_OK;
	return mate_set_error(err, MATE_ERR_IO, "%s: %s", what, cudaGetErrorString(e));
}

static void *
cuda_create(const uint64_t *streams, size_t nstreams, mate_error *err)
{
	struct cuda_state *c = calloc(1, sizeof(*c));

	(void)streams;
	(void)nstreams;
	if (c == NULL)
		mate_set_error(err, MATE_ERR_NOMEM, "allocation replay: out of memory");
	return c;
}

static int
cuda_alloc(void *st, uint64_t size, size_t stream, void **out)
{
	struct cuda_state *c = st;

	(void)stream;
	if (cudaMalloc(out, (size_t)size) != cudaSuccess)
		return -1;
	mate_alloc_usage_take(&c->use, (size + 511) / 512 * 512);
	return 0;
}

static void
cuda_release(void *st, void *p, uint64_t size, size_t stream)
{
	struct cuda_state *c = st;

	(void)stream;
	c->use.cur -= (size + 511) / 512 * 512;
	cudaFree(p);
}

static int
cuda_finish(void *st, mate_error *err)
{
	(void)st;
	return cuda_status(cudaDeviceSynchronize(), "cudaDeviceSynchronize", err);
}

static uint64_t
cuda_peak(void *st)
{
	return ((struct cuda_state *)st)->use.peak;
}

static void
cuda_destroy(void *st)
{
	free(st);
}

const struct mate_allocator mate_allocator_cuda = {
	.name = "cuda",
	.available = cuda_available,
	.create = cuda_create,
	.alloc = cuda_alloc,
	.release = cuda_release,
	.finish = cuda_finish,
	.peak_footprint = cuda_peak,
	.destroy = cuda_destroy,
};

/* ---- cuda-async: the device's default memory pool, one stream per logged stream ---------------- */

static void async_destroy(void *st);

static void *
async_create(const uint64_t *streams, size_t nstreams, mate_error *err)
{
	struct cuda_state *c = calloc(1, sizeof(*c));
	uint64_t keep = UINT64_MAX, zero = 0;
	int dev = 0;

	(void)streams;
	if (c == NULL || (c->streams = calloc(nstreams ? nstreams : 1, sizeof(cudaStream_t))) == NULL) {
		free(c);
		mate_set_error(err, MATE_ERR_NOMEM, "allocation replay: out of memory");
		return NULL;
	}
	if (cuda_status(cudaGetDevice(&dev), "cudaGetDevice", err) != MATE_OK ||
	    cuda_status(cudaDeviceGetDefaultMemPool(&c->pool, dev), "cudaDeviceGetDefaultMemPool",
	    err) != MATE_OK) {
		async_destroy(c);
		return NULL;
	}
	/* keep freed memory in the pool (as RMM's cuda_async_memory_resource does) */
	cudaMemPoolSetAttribute(c->pool, cudaMemPoolAttrReleaseThreshold, &keep);
	cudaMemPoolSetAttribute(c->pool, cudaMemPoolAttrReservedMemHigh, &zero);
	for (; c->nstreams < nstreams; c->nstreams++)
		if (cuda_status(cudaStreamCreateWithFlags(&c->streams[c->nstreams],
		    cudaStreamNonBlocking), "cudaStreamCreate", err) != MATE_OK) {
			async_destroy(c);
			return NULL;
		}
	return c;
}

static int
async_alloc(void *st, uint64_t size, size_t stream, void **out)
{
	struct cuda_state *c = st;

	return cudaMallocAsync(out, (size_t)size, c->streams[stream]) == cudaSuccess ? 0 : -1;
}

static void
async_release(void *st, void *p, uint64_t size, size_t stream)
{
	struct cuda_state *c = st;

	(void)size;
	cudaFreeAsync(p, c->streams[stream]);
}

static uint64_t
async_peak(void *st)
{
	struct cuda_state *c = st;
	uint64_t high = 0;

	if (cudaMemPoolGetAttribute(c->pool, cudaMemPoolAttrReservedMemHigh, &high) != cudaSuccess)
		return 0;
	return high;
}

static void
async_destroy(void *st)
{
	struct cuda_state *c = st;

	for (size_t i = 0; i < c->nstreams; i++) {
		cudaStreamSynchronize(c->streams[i]);
		cudaStreamDestroy(c->streams[i]);
	}
	if (c->pool != NULL) {
		uint64_t zero = 0;
		cudaMemPoolSetAttribute(c->pool, cudaMemPoolAttrReleaseThreshold, &zero);
		cudaMemPoolTrimTo(c->pool, 0);
	}
	free(c->streams);
	free(c);
}

const struct mate_allocator mate_allocator_cuda_async = {
	.name = "cuda-async",
	.available = cuda_available,
	.create = async_create,
	.alloc = async_alloc,
	.release = async_release,
	.finish = cuda_finish,
	.peak_footprint = async_peak,
	.destroy = async_destroy,
};
