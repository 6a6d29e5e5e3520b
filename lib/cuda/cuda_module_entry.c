/* cuda_module_entry.c: mate-cuda.so's one exported symbol, the table libmate takes its CUDA backend, kernels and allocators from. */
#include "config.h"
#include "alloc_replay_private.h"
#include "cuda_module.h"
#include "cuda_host.h"

const struct mate_cuda_host *mate_cuda_host_;

const struct mate_cuda_module *
mate_cuda_module(const struct mate_cuda_host *host)
{
	static struct mate_cuda_module m;

	mate_cuda_host_ = host;
	/* filled on each call (the pointers are constant): no initialiser
	 * calls, which C does not allow in a static's initialiser */
	m.abi = MATE_CUDA_MODULE_ABI;
	m.version = PACKAGE_VERSION;
	m.backend = mate_cu_backend();
	m.kernels = mate_cu_kernels();
	m.allocator = &mate_allocator_cuda;
	m.allocator_async = &mate_allocator_cuda_async;
	return &m;
}
