/* fuzz_ring.c: libFuzzer target for flight recorder rings (MATE_RING's shared memory files): the head, the scan for complete entries, their payloads (half the inputs resealed, their checksums made to match, so that changed payloads are read), and the dumps written from them (mate-list-dumps --ring). */
#include "config.h"

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ring.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[256];

static int
remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void
cleanup(void)
{
	nftw(base, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	setenv("MATE_MAX_MEMORY", "64M", 1);
	snprintf(base, sizeof(base), "%s/fuzz-ring-XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
	if (mkdtemp(base) == NULL)
		abort();
	atexit(cleanup);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char ring[300], out[300];
	struct mate_ring_stats st;
	mate_error err;
	FILE *f;

	cleanup();
	mkdir(base, 0700);
	snprintf(ring, sizeof(ring), "%s/ring", base);
	snprintf(out, sizeof(out), "%s/out", base);
	if ((f = fopen(ring, "wb")) == NULL)
		return 0;
	if (size > 0 && data[size - 1] & 1) {
		/* half the inputs resealed: their changed payloads pass the checksums */
		unsigned char *copy = malloc(size);

		if (copy != NULL) {
			memcpy(copy, data, size);
			mate_ring_reseal(copy, size);
			fwrite(copy, 1, size, f);
			free(copy);
		}
	} else
		fwrite(data, 1, size, f);
	fclose(f);
	mate_error_clear(&err);
	mate_ring_convert(ring, out, &st, &err);
	return 0;
}
