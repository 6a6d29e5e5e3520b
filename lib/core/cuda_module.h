/* cuda_module.h: the interface between libmate and its CUDA module, mate-cuda.so (the backend, kernels and allocators built with nvcc), which libmate opens on first use. */
#ifndef MATE_CUDA_MODULE_H_INCLUDED
#define MATE_CUDA_MODULE_H_INCLUDED

#include "backend.h"
#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mate_allocator;

/* Raised whenever this structure changes. */
#define MATE_CUDA_MODULE_ABI 2

/* What the module's one exported function, mate_cuda_module(), returns.
 * version is the module's PACKAGE_VERSION: libmate takes only its own. */
struct mate_cuda_module {
	int abi;
	const char *version;
	const mate_backend *backend;
	const mate_kernels *kernels;
	const struct mate_allocator *allocator;        /* "cuda" */
	const struct mate_allocator *allocator_async;  /* "cuda-async" */
};

/* In the module. */
const struct mate_cuda_module *mate_cuda_module(void);
const mate_backend *mate_cu_backend(void);
const mate_kernels *mate_cu_kernels(void);

/* In libmate (cuda_module.c): the module, opened on the first call; NULL
 * when it cannot be, with err set to why. */
const struct mate_cuda_module *mate_cuda_module_load(mate_error *err);

#ifdef __cplusplus
}
#endif
#endif /* MATE_CUDA_MODULE_H_INCLUDED */
