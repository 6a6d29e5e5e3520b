/* backend.h: the small device backend interface (host and CUDA), chosen by configure and at run time. */
#ifndef MATE_BACKEND_H_INCLUDED
#define MATE_BACKEND_H_INCLUDED

#include <stddef.h>

struct mate_kernels;

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mate_backend {
	const char *name;                 /* "host" or "cuda" */
	/* Number of usable devices (0 for host). */
	int (*device_count)(void);
	/* Copies n bytes of device memory at src to host dst, synchronising
	 * only the given stream (NULL: the default stream). 0 or -1. */
	int (*copy_to_host)(void *dst, const void *src, size_t n, void *stream);
	/* Writes a one-line description (runtime/driver versions, devices). */
	void (*describe)(char *buf, size_t len);
	/* The backend's compute kernels (kernels.h). */
	const struct mate_kernels *(*kernels)(void);
	/* 1 when the stream is being captured into a CUDA graph (where a copy
	 * must not be issued); NULL or 0 otherwise. */
	int (*stream_capturing)(void *stream);
} mate_backend;

/* The CUDA backend when built with CUDA, the process already uses CUDA (a
 * CUDA runtime or driver is loaded) and a device is present, else the host
 * one (whose copy is a memcpy). Never NULL. */
const mate_backend *mate_backend_get(void);
/* The host backend (CPU kernels), whatever devices are present. */
const mate_backend *mate_backend_host(void);

#ifdef HAVE_CUDA
/* The CUDA backend, from the CUDA module (mate-cuda.so, opened on the first
 * call: see cuda_module.c); NULL when the module cannot be loaded. */
const mate_backend *mate_backend_cuda(void);
#endif

#ifdef __cplusplus
}
#endif
#endif /* MATE_BACKEND_H_INCLUDED */
