/* test_cuda_module.c: libmate links no CUDA library; the CUDA module (mate-cuda.so) is opened on first use (not for a process that uses no CUDA), and a missing or foreign module gives a clear error and the host backend. */
#include "config.h"
#include "mate_record.h"
#include "mate_replay.h"
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
	mate_error_clear(&err);
	CHECK((r = mate_replay_new(&err)) != NULL);
	CHECK(mate_replay_get_device(r) == MATE_REPLAY_DEVICE_CPU);
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
	mate_error err;
	mate_replay *r;
	int rc, device;

	if (argc == 3)
		return bad_module(argv[1], argv[2]);
	/* neither starting nor replaying on the host loads CUDA (the public
	 * API alone: libmate exports nothing else) */
	CHECK(mapped("libmate") == 1);
	CHECK(mapped("libcudart") == 0);
	mate_error_clear(&err);
	CHECK((r = mate_replay_new(&err)) != NULL);
	CHECK(mate_replay_set_device(r, MATE_REPLAY_DEVICE_CPU, &err) == MATE_OK);
	CHECK(mapped("libcudart") == 0);
	CHECK(mapped("mate-cuda") == 0);

	/* a build with CUDA has its module, found beside libmate: the
	 * allocators come from it, usable or refused for want of a device */
	mate_error_clear(&err);
	rc = mate_alloc_replay_available("cuda", &err);
	CHECK(rc == MATE_OK || (rc == MATE_ERR_UNSUPPORTED && strstr(err.message, "device") != NULL &&
	    strstr(err.message, "module") == NULL));
	if (rc != MATE_OK && strstr(err.message, "module") != NULL) {
		fprintf(stderr, "the module did not load: %s\n", err.message);
		mate_replay_free(r);
		return TEST_DONE();
	}
	CHECK(mapped("mate-cuda.so") == 1);
	CHECK(mapped("libcudart") == 1);
	mate_error_clear(&err);
	device = mate_replay_set_device(r, MATE_REPLAY_DEVICE_CUDA, &err) == MATE_OK;
	CHECK(device || strstr(err.message, "module") == NULL);
	CHECK(mate_replay_get_device(r) == (device ? MATE_REPLAY_DEVICE_CUDA : MATE_REPLAY_DEVICE_CPU));
	CHECK(device == (rc == MATE_OK));
	printf("CUDA module loaded; %s\n", device ? "a device" : "no device (a machine without a GPU)");
	mate_replay_free(r);
	return TEST_DONE();
}
