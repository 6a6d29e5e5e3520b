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

/* The module and the words its error must hold, when main() is given them. */
static const char *bad_path, *bad_why;

/* neither starting nor replaying on the host loads CUDA (the public API
 * alone: libmate exports nothing else); a build with CUDA has its module,
 * found beside libmate, opened on first use */
DEFINE_TEST(first_use)
{
	mate_error err;
	mate_replay *r;
	int rc, device;

	CHECK(mapped("libmate") == 1);
	CHECK(mapped("libcudart") == 0);
	mate_error_clear(&err);
	CHECK((r = mate_replay_new(&err)) != NULL);
	CHECK(mate_replay_set_device(r, MATE_REPLAY_DEVICE_CPU, &err) == MATE_OK);
	CHECK(mapped("libcudart") == 0);
	CHECK(mapped("mate-cuda") == 0);

	/* the allocators come from the module, usable or refused for want of
	 * a device */
	mate_error_clear(&err);
	rc = mate_alloc_replay_available("cuda", &err);
	CHECK(rc == MATE_OK || (rc == MATE_ERR_UNSUPPORTED && strstr(err.message, "device") != NULL &&
	    strstr(err.message, "module") == NULL));
	if (rc != MATE_OK && strstr(err.message, "module") != NULL) {
		fprintf(stderr, "the module did not load: %s\n", err.message);
		mate_replay_free(r);
		return;
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
}

/* MATE_CUDA_MODULE names no file, or a library that is not a module: run
 * as `test_cuda_module PATH WHY` (tests/cli/test_cuda_module.sh), one
 * module a process, since the first use decides. */
DEFINE_TEST(bad_module)
{
	mate_error err;
	mate_replay *r;

	if (bad_path == NULL) {
		printf("bad_module: no module given (test_cuda_module PATH WHY)\n");
		return;
	}
	setenv("MATE_CUDA_MODULE", bad_path, 1);
	mate_error_clear(&err);
	CHECK((r = mate_replay_new(&err)) != NULL);
	CHECK(mate_replay_get_device(r) == MATE_REPLAY_DEVICE_CPU);
	CHECK(mate_replay_set_device(r, MATE_REPLAY_DEVICE_CUDA, &err) == MATE_ERR_UNSUPPORTED);
	CHECK_CONTAINS(err.message, "the CUDA module cannot be loaded");
	CHECK_CONTAINS(err.message, bad_why);
	mate_replay_free(r);
	mate_error_clear(&err);
	CHECK(mate_alloc_replay_available("cuda-async", &err) == MATE_ERR_UNSUPPORTED);
	CHECK_CONTAINS(err.message, bad_why);
	CHECK(mapped("libcudart") == 0);
}

/* test_cuda_module [-l | CASE...], or test_cuda_module PATH WHY: the case
 * bad_module with that module. */
int
main(int argc, char **argv)
{
	char *only[] = { argv[0], "bad_module", NULL };

	if (argc == 3 && strchr(argv[1], '/') != NULL) {
		bad_path = argv[1];
		bad_why = argv[2];
		return test_main(2, only);
	}
	return test_main(argc, argv);
}
