/* backend.c: the host backend and the run-time choice between it and CUDA. */
#include "mate_private.h"
#include "backend.h"
#include "kernels.h"

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
	"host", host_device_count, host_copy_to_host, host_describe, mate_kernels_cpu, NULL,
};

const mate_backend *
mate_backend_host(void)
{
	return &host_backend;
}

const mate_backend *
mate_backend_get(void)
{
#ifdef HAVE_CUDA
	const mate_backend *cuda = mate_backend_cuda();
	if (cuda != NULL && cuda->device_count() > 0)
		return cuda;
#endif
	return &host_backend;
}
