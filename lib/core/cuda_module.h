/* cuda_module.h: the interface between libmate and its CUDA module, mate-cuda.so (the backend, kernels and allocators built with nvcc), which libmate opens on first use. */
#ifndef MATE_CUDA_MODULE_H_INCLUDED
#define MATE_CUDA_MODULE_H_INCLUDED

#include "backend.h"
#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mate_allocator;

/* Raised whenever these structures change. */
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

/* What libmate lends the module: the functions of libmate it calls, the
 * internal helpers it shares with the CPU kernels among them. libmate
 * exports its public API alone (hidden visibility), so the module reaches
 * these through this table, given to mate_cuda_module(), and links no
 * libmate: it works in a process that links libmate statically too.
 * lib/cuda/cuda_host.h routes the module's calls. */
struct mate_cuda_host {
	size_t (*dtype_size)(mate_dtype dt);
	const char *(*dtype_name)(mate_dtype dt);
	int (*tensor_init)(mate_tensor *t, mate_dtype dt, int ndim, const int64_t *shape,
	    const int64_t *stride, void *data);
	int64_t (*tensor_numel)(const mate_tensor *t);
	int (*tensor_is_contiguous)(const mate_tensor *t);
	int64_t (*tensor_storage_extent)(const mate_tensor *t);
	void *(*tensor_element)(const mate_tensor *t, int64_t i);
	void (*tensor_copy_contiguous)(const mate_tensor *t, void *dst);
	int (*set_error)(mate_error *err, int code, const char *fmt, ...);
	void (*tensor_scatter)(const mate_tensor *t, const void *src);
	int (*kernel_scalar)(const mate_tensor *t, double def, double *out,
	    const char *what, mate_error *err);
	int (*gemm_check)(const mate_gemm_call *g, int *ta, int *tb, int64_t need[3],
	    mate_error *err);
	void (*attn_params_init)(mate_attn_params *p);
	int (*attn_keep_mask)(const mate_attn_params *p, int64_t Lq, int64_t Lk,
	    uint8_t **keep, mate_error *err);
	double (*alibi_slope)(int64_t h, int64_t heads);
};

/* In the module: its table, given libmate's (kept for the module's life). */
const struct mate_cuda_module *mate_cuda_module(const struct mate_cuda_host *host);
const mate_backend *mate_cu_backend(void);
const mate_kernels *mate_cu_kernels(void);

/* In libmate (cuda_module.c): the module, opened on the first call; NULL
 * when it cannot be, with err set to why. */
const struct mate_cuda_module *mate_cuda_module_load(mate_error *err);

#ifdef __cplusplus
}
#endif
#endif /* MATE_CUDA_MODULE_H_INCLUDED */
