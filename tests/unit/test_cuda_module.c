/* test_cuda_module.c: libmate links no CUDA library; the CUDA module (mate-cuda.so) is opened on first use (not for a process that uses no CUDA), and a missing or foreign module gives a clear error and the host backend. */
#include "config.h"
#include "mate.h"
#include "mate_dump.h"
#include "mate_record.h"
#include "backend.h"
#include "kernels.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether a library whose name contains part is mapped in this process. */
static int
mapped(const char *part)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;

	if (f == NULL)
		return -1;
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = strstr(line, part) != NULL;
	fclose(f);
	return found;
}

/* MATE_CUDA_MODULE names no file, or a library that is not a module. */
static int
bad_module(const char *path, const char *why)
{
	mate_error err;
	mate_replay *r;

	setenv("MATE_CUDA_MODULE", path, 1);
	CHECK(mate_backend_cuda() == NULL);
	CHECK(mate_kernels_cuda() == NULL);
	CHECK_STR(mate_backend_get()->name, "host");
	mate_error_clear(&err);
	CHECK((r = mate_replay_new(&err)) != NULL);
	CHECK(mate_replay_set_device(r, MATE_REPLAY_DEVICE_CUDA, &err) == MATE_ERR_UNSUPPORTED);
	CHECK_CONTAINS(err.message, "the CUDA module cannot be loaded");
	CHECK_CONTAINS(err.message, why);
	mate_replay_free(r);
	mate_error_clear(&err);
	CHECK(mate_alloc_replay_available("cuda-async", &err) == MATE_ERR_UNSUPPORTED);
	CHECK_CONTAINS(err.message, why);
	CHECK(mapped("libcudart") == 0);
	return TEST_DONE();
}

int
main(int argc, char **argv)
{
	const mate_backend *b;
	mate_error err;
	int rc;

	if (argc == 3)
		return bad_module(argv[1], argv[2]);
	/* neither starting nor listing nor the host kernels load CUDA */
	CHECK(mapped("libmate") == 1);
	CHECK(mapped("libcudart") == 0);
	CHECK(mate_kernels_cpu() != NULL);
	CHECK(mapped("libcudart") == 0);
	CHECK(mapped("mate-cuda") == 0);
	/* a process that uses no CUDA gets the host backend without loading it
	 * (what a recorded CPU-only program asks for its log header) */
	CHECK_STR(mate_backend_get()->name, "host");
	CHECK(mapped("libcudart") == 0);
	CHECK(mapped("mate-cuda") == 0);

	b = mate_backend_cuda();
	CHECK(b != NULL);   /* a build with CUDA has its module */
	if (b == NULL) {
		mate_error_clear(&err);
		mate_alloc_replay_available("cuda", &err);   /* for the reason */
		fprintf(stderr, "the module did not load: %s\n", err.message);
		return TEST_DONE();
	}
	CHECK_STR(b->name, "cuda");
	CHECK(mapped("mate-cuda.so") == 1);
	CHECK(mapped("libcudart") == 1);
	CHECK(b->kernels() == mate_kernels_cuda());
	CHECK_STR(mate_kernels_cuda()->name, "cuda");
	CHECK(mate_backend_cuda() == b);          /* opened once */
	/* the allocators come from the module: usable, or refused for want of a device */
	mate_error_clear(&err);
	rc = mate_alloc_replay_available("cuda", &err);
	CHECK(rc == MATE_OK || (rc == MATE_ERR_UNSUPPORTED && strstr(err.message, "device") != NULL &&
	    strstr(err.message, "module") == NULL));
	printf("CUDA module loaded; %d device(s)%s\n", b->device_count(),
	    b->device_count() > 0 ? "" : " (a machine without a GPU)");
	if (b->device_count() > 0)
		CHECK(mate_backend_get() == b);
	else
		CHECK_STR(mate_backend_get()->name, "host");
	return TEST_DONE();
}
