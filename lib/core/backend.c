/* backend.c: the host backend and the run-time choice between it and CUDA. */
#include "mate_private.h"
#include "backend.h"
#include "kernels.h"

#ifdef HAVE_CUDA
#include <link.h>
#endif
#include <stdio.h>
#include <string.h>

static int
host_device_count(void)
{
	return 0;
}

static int
host_copy_to_host(void *dst, const void *src, size_t n, void *stream)
{
	(void)stream;
	memcpy(dst, src, n);
	return 0;
}

static void
host_describe(char *buf, size_t len)
{
	snprintf(buf, len, "host backend (no GPU)");
}

static const mate_backend host_backend = {
	.name = "host",
	.device_count = host_device_count,
	.copy_to_host = host_copy_to_host,
	.describe = host_describe,
	.kernels = mate_kernels_cpu,
	.stream_capturing = NULL,   /* no streams */
};

const mate_backend *
mate_backend_host(void)
{
	return &host_backend;
}

#ifdef HAVE_CUDA
static int
is_cuda_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *slash = strrchr(info->dlpi_name, '/');
	const char *base = slash != NULL ? slash + 1 : info->dlpi_name;

	(void)size;
	(void)arg;
	return strncmp(base, "libcudart.so", 12) == 0 || strncmp(base, "libcuda.so", 10) == 0 ||
	    strcmp(base, "mate-cuda.so") == 0;
}

/* Whether this process uses CUDA already: a CUDA runtime or driver, or the
 * module, is loaded. A CUDA tensor cannot exist before one is, so a program
 * without CUDA gets the host backend without loading the CUDA libraries
 * (a tenth of a second and more, and a second runtime in its address space). */
static int
cuda_in_process(void)
{
	return dl_iterate_phdr(is_cuda_object, NULL) != 0;
}
#endif

const mate_backend *
mate_backend_get(void)
{
#ifdef HAVE_CUDA
	if (cuda_in_process()) {
		const mate_backend *cuda = mate_backend_cuda();
		if (cuda != NULL && cuda->device_count() > 0)
			return cuda;
	}
#endif
	return &host_backend;
}
